package dynamostore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/dynamostore/dynamotest"
)

// failNth makes the nth call of operation op fail before it is sent, as if
// the process had died or the network had failed at that point.
type failNth struct {
	op    string
	n     int64
	calls atomic.Int64
}

var errInjected = errors.New("injected failure")

func (f *failNth) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("latchkey-fail-nth",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if awsmiddleware.GetOperationName(ctx) == f.op && f.calls.Add(1) == f.n {
					return middleware.InitializeOutput{}, middleware.Metadata{}, errInjected
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	})
}

// TestDeleteUser_BeyondOneTransaction deletes a user with 120 memberships
// (242 items: more than two transactions' worth), first with a failure
// injected into the last transaction, then again: the first attempt must
// leave the user and its e-mail guard in place (never the guard alone), and
// the retry must remove everything and free the e-mail.
func TestDeleteUser_BeyondOneTransaction(t *testing.T) {
	const memberships = 120
	fail := &failNth{op: "TransactWriteItems"}
	client := dynamotest.NewClient(t, fail.option)
	s := dynamostore.New(client, dynamotest.NewTable(t, client))
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	tick := func() time.Time { now = now.Add(time.Millisecond); return now }

	u := newUser(tick())
	must(t, s.CreateUser(ctx, u), "CreateUser")
	orgs := make([]account.Organization, memberships)
	for i := range orgs {
		orgs[i] = newOrg(tick())
		must(t, s.CreateOrganization(ctx, orgs[i]), "CreateOrganization")
		at := tick()
		must(t, s.AddMember(ctx, account.Membership{OrganizationID: orgs[i].ID, UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at}), "AddMember")
	}

	// 240 membership items + user + guard: chunks of 100 and 100, then the
	// final transaction with the last 40. Fail the final one.
	fail.n = fail.calls.Load() + 3
	if err := s.DeleteUser(ctx, u.ID); !errors.Is(err, errInjected) {
		t.Fatalf("DeleteUser with a failing final transaction: got %v, want the injected failure", err)
	}
	if _, err := s.GetUser(ctx, u.ID); err != nil {
		t.Fatalf("GetUser after a half-done delete: %v (the user must stay until the final transaction)", err)
	}
	if _, err := s.GetUserByEmail(ctx, u.Email); err != nil {
		t.Fatalf("GetUserByEmail after a half-done delete: %v (guard and user go together)", err)
	}
	at := tick()
	late := account.Membership{OrganizationID: orgs[0].ID, UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at}
	if err := s.AddMember(ctx, late); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("AddMember to a user being deleted: got %v, want not_found", err)
	}
	// An update of a user being deleted is refused too: UpdateItem would
	// otherwise succeed on an item the retry is about to remove.
	name := "Late Rename"
	if _, err := s.UpdateUser(ctx, u.ID, account.UserPatch{Name: &name, UpdatedAt: tick()}); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("UpdateUser of a user being deleted: got %v, want not_found", err)
	}
	if got, err := s.GetUser(ctx, u.ID); err != nil || got.Name != u.Name {
		t.Errorf("GetUser after a refused update: got %+v, %v; want the name unchanged", got, err)
	}

	must(t, s.DeleteUser(ctx, u.ID), "DeleteUser (retry)")
	if _, err := s.GetUser(ctx, u.ID); !account.IsCode(err, account.CodeNotFound) {
		t.Errorf("GetUser after delete: got %v, want not_found", err)
	}
	page, err := s.ListUserMemberships(ctx, u.ID, account.ListParams{Limit: 100})
	must(t, err, "ListUserMemberships")
	if len(page.Items) != 0 {
		t.Errorf("ListUserMemberships after delete: got %d, want 0", len(page.Items))
	}
	for _, o := range orgs {
		if _, err := s.GetMember(ctx, o.ID, u.ID); !account.IsCode(err, account.CodeNotFound) {
			t.Fatalf("GetMember %s after delete: got %v, want not_found", o.ID, err)
		}
	}
	again := newUser(tick())
	again.Email = u.Email
	must(t, s.CreateUser(ctx, again), "CreateUser with the freed e-mail")
}

// TestDeleteOrganization_BeyondOneTransaction: the same for an organization
// with 60 members (122 items), without a failure.
func TestDeleteOrganization_BeyondOneTransaction(t *testing.T) {
	client := dynamotest.NewClient(t)
	s := dynamostore.New(client, dynamotest.NewTable(t, client))
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Millisecond)
	tick := func() time.Time { now = now.Add(time.Millisecond); return now }
	o := newOrg(tick())
	must(t, s.CreateOrganization(ctx, o), "CreateOrganization")
	for range 60 {
		u := newUser(tick())
		must(t, s.CreateUser(ctx, u), "CreateUser")
		at := tick()
		must(t, s.AddMember(ctx, account.Membership{OrganizationID: o.ID, UserID: u.ID, Role: "member", CreatedAt: at, UpdatedAt: at}), "AddMember")
	}
	must(t, s.DeleteOrganization(ctx, o.ID), "DeleteOrganization")
	page, err := s.ListMembers(ctx, o.ID, account.ListParams{Limit: 100})
	must(t, err, "ListMembers")
	if len(page.Items) != 0 {
		t.Errorf("ListMembers after delete: got %d, want 0", len(page.Items))
	}
	again := newOrg(tick())
	again.Slug = o.Slug
	must(t, s.CreateOrganization(ctx, again), "CreateOrganization with the freed slug")
}

// fakeDynamoDB answers every request with one canned response.
type fakeDynamoDB struct {
	status int
	body   string
	calls  atomic.Int64
}

func (f *fakeDynamoDB) Do(r *http.Request) (*http.Response, error) {
	f.calls.Add(1)
	return &http.Response{
		StatusCode: f.status,
		Header:     http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(strings.NewReader(f.body)),
		Request:    r,
	}, nil
}

// TestErrorMapping needs no DynamoDB Local: it feeds the store DynamoDB's
// error responses and checks the domain codes, and that no AWS message
// reaches the client-visible message.
func TestErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   account.Code
	}{
		{"Throttled", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"secret AWS detail"}`, account.CodeUnavailable},
		{"ThrottlingException", 400, `{"__type":"com.amazon.coral.availability#ThrottlingException","message":"secret AWS detail"}`, account.CodeUnavailable},
		{"RequestLimitExceeded", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#RequestLimitExceeded","message":"secret AWS detail"}`, account.CodeUnavailable},
		{"InternalServerError", 500, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"secret AWS detail"}`, account.CodeUnavailable},
		{"ServiceUnavailable", 503, `{"message":"secret AWS detail"}`, account.CodeUnavailable},
		{"Validation", 400, `{"__type":"com.amazon.coral.validate#ValidationException","message":"secret AWS detail"}`, account.CodeInternal},
		{"TableMissing", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"secret AWS detail"}`, account.CodeInternal},
		{"ThrottledTransaction", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"secret AWS detail","CancellationReasons":[{"Code":"None"},{"Code":"ThrottlingError","Message":"secret AWS detail"}]}`, account.CodeUnavailable},
		{"EmailTaken", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"secret AWS detail","CancellationReasons":[{"Code":"None"},{"Code":"ConditionalCheckFailed","Message":"secret AWS detail"}]}`, account.CodeEmailTaken},
		{"UserIDCollision", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"secret AWS detail","CancellationReasons":[{"Code":"ConditionalCheckFailed"},{"Code":"None"}]}`, account.CodeInternal},
		{"ConflictEveryTime", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"secret AWS detail","CancellationReasons":[{"Code":"TransactionConflict"},{"Code":"None"}]}`, account.CodeUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeDynamoDB{status: tc.status, body: tc.body}
			client := dynamodb.New(dynamodb.Options{
				Region:           "us-east-1",
				BaseEndpoint:     aws.String("http://127.0.0.1:1"),
				Credentials:      credentials.NewStaticCredentialsProvider("fake", "fake", ""),
				HTTPClient:       fake,
				RetryMaxAttempts: 1, // the SDK's retries are the SDK's business
			})
			s := dynamostore.New(client, "latchkey", dynamostore.WithConflictRetries(2))
			now := time.Now().UTC()
			err := s.CreateUser(t.Context(), newUser(now))
			if got := account.ErrorCode(err); got != tc.want {
				t.Fatalf("CreateUser: got code %q (%v), want %q", got, err, tc.want)
			}
			var e *account.Error
			if !errors.As(err, &e) || strings.Contains(e.Message, "secret") {
				t.Errorf("client-visible message %q leaks the AWS message", e.Message)
			}
			if tc.name == "ConflictEveryTime" && fake.calls.Load() != 3 {
				t.Errorf("conflicting transaction sent %d times, want 1 + 2 retries", fake.calls.Load())
			}
		})
	}
}
