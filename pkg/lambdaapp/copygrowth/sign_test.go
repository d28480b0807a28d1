package copygrowth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"latchkey/pkg/lambdaapp/copygrowth"
)

// received is a request as a server gets it.
type received struct {
	method, rawURI, host string
	header               http.Header
	body                 []byte
}

// TestAsyncInvoke_SignedAsTheSDK: the Invoke copygrowth sends without the
// SDK's Lambda client (0.7 MB the verify function cannot afford) is the
// SDK's: the same method, escaped path, invocation type and body, and a
// SigV4 signature that verifies as the SDK's does, checked the way AWS
// checks one (the headers it names, signed again with the secret at its
// time).
func TestAsyncInvoke_SignedAsTheSDK(t *testing.T) {
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Method, r.RequestURI, r.Host, r.Header.Clone(), body})
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")
	cfg := aws.Config{Region: "eu-west-1", Credentials: creds}
	const arn = "arn:aws:lambda:eu-west-1:123456789012:function:latchkey-AuthFunction-AbC123:grow"
	payload := []byte(`{"latchkey":"grow-copies","key_id":"key_01JD8ZQ4N5V7W2X3Y4Z5A6B7C8"}`)

	sdk := lambda.New(lambda.Options{Region: "eu-west-1", Credentials: creds, BaseEndpoint: aws.String(srv.URL)})
	if _, err := sdk.Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String(arn), InvocationType: types.InvocationTypeEvent, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	if err := copygrowth.AsyncInvoke(cfg, arn, srv.URL, srv.Client())(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	want, ours := got[0], got[1]
	if ours.method != want.method || ours.rawURI != want.rawURI || !bytes.Equal(ours.body, want.body) {
		t.Errorf("request %s %s %s, the SDK's %s %s %s", ours.method, ours.rawURI, ours.body, want.method, want.rawURI, want.body)
	}
	for _, h := range []string{"X-Amz-Invocation-Type", "X-Amz-Security-Token", "Content-Type"} {
		if ours.header.Get(h) != want.header.Get(h) {
			t.Errorf("%s: %q, the SDK's %q", h, ours.header.Get(h), want.header.Get(h))
		}
	}
	for name, r := range map[string]received{"the SDK's": want, "ours": ours} {
		if !verifies(t, r, creds) {
			t.Errorf("%s signature does not verify: %s", name, r.header.Get("Authorization"))
		}
	}
}

// verifies signs r again, as AWS does to check it: with the headers its
// Authorization names, at its X-Amz-Date, for lambda in its region, and
// compares.
func verifies(t *testing.T, r received, creds aws.CredentialsProvider) bool {
	t.Helper()
	auth := r.header.Get("Authorization")
	_, signed, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return false
	}
	signed, _, _ = strings.Cut(signed, ",")
	at, err := time.Parse("20060102T150405Z", r.header.Get("X-Amz-Date"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(r.method, "http://"+r.host+r.rawURI, bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range strings.Split(signed, ";") {
		switch h {
		case "host":
		case "content-length":
			req.ContentLength = int64(len(r.body))
		default:
			req.Header.Set(h, r.header.Get(h))
		}
	}
	c, err := creds.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(r.body)
	if err := v4.NewSigner().SignHTTP(context.Background(), c, req, hex.EncodeToString(sum[:]), "lambda", "eu-west-1", at); err != nil {
		t.Fatal(err)
	}
	return req.Header.Get("Authorization") == auth
}
