package latchkey_test

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/version"
)

// tooEarlyCommit is a build that relies on its new format at once: main
// when issue 32 was filed, which issued tokens with the claim irv and read
// their revocations from the key alone from its first request, whoever
// still served (docs/deploying.md, "Formats in force").
const tooEarlyCommit = "088ceed"

// TestMixedVersions is docs/deploying.md's rule held against real builds:
// the previous release (built from the commit CHANGELOG.md names) and this
// checkout's local server, both on one DynamoDB Local table, through an
// upgrade (both serve), the step that puts this release's formats in
// force (the previous release stopped), and the rollback drill of
// docs/operating.md (formats out of force, then the previous release
// serves again beside this one, while revocations, disables and deletes
// go on). Each revocation, disable and delete made by one version is
// checked on the other, 16 verifies each (a verify reads one of 16 read
// copies at random), and each change's event in both feeds: none may be
// lost. The same scenario against the too-early build must lose some, or
// the test proves nothing.
func TestMixedVersions(t *testing.T) {
	endpoint := os.Getenv("LATCHKEY_TEST_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		t.Skip("needs DynamoDB Local (LATCHKEY_TEST_DYNAMODB_ENDPOINT unset; make test sets it)")
	}
	releases := changelogReleases(t)
	previous := releases[1]
	bins := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, commit := range map[string]string{"previous": previous.commit, "too-early": tooEarlyCommit, "current": ""} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bin, err := buildLocal(t, commit)
			if err != nil {
				t.Errorf("%s (%s): %v", name, commit, err)
				return
			}
			mu.Lock()
			bins[name] = bin
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	client := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})

	// Each on a table and servers of its own, at once: most of each is
	// waiting (FormatsRefresh, the feed's lag).
	t.Run("Current", func(t *testing.T) {
		t.Parallel()
		lost, served := upgradeAndRollBack(t, client, bins["previous"], bins["current"])
		for _, l := range lost {
			t.Errorf("lost: %s", l)
		}
		if served == 0 {
			t.Error("no status list served: the scenario did not try them")
		}
		t.Logf("%s and %s: %d lost", previous.version, version.Version, len(lost))
	})
	t.Run("TooEarly", func(t *testing.T) {
		t.Parallel()
		lost, _ := upgradeAndRollBack(t, client, bins["previous"], bins["too-early"])
		if len(lost) == 0 {
			t.Fatalf("the too-early build (%s) lost nothing: the scenario does not catch a format relied on too early", tooEarlyCommit)
		}
		t.Logf("%s and the too-early build %s: %d lost:\n%s", previous.version, tooEarlyCommit, len(lost), strings.Join(lost, "\n"))
	})
}

// buildLocal builds cmd/local at commit ("" for this checkout) and
// returns the binary. A commit is taken from git (git archive), so the
// clone must hold it: a shallow clone fails here, saying so, rather than
// skipping the test. Nothing is downloaded (GOPROXY=off): every release
// builds from the module cache this checkout's go.sum fills.
func buildLocal(t *testing.T, commit string) (string, error) {
	dir, out := ".", filepath.Join(t.TempDir(), "latchkey-local")
	if commit != "" {
		if err := exec.Command("git", "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
			return "", fmt.Errorf("this clone lacks commit %s, which CHANGELOG.md names (a shallow clone? git fetch --unshallow)", commit)
		}
		dir = filepath.Join(t.TempDir(), "src")
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", err
		}
		archive := exec.Command("git", "archive", commit)
		untar := exec.Command("tar", "-x", "-C", dir)
		pipe, err := archive.StdoutPipe()
		if err != nil {
			return "", err
		}
		untar.Stdin = pipe
		if err := untar.Start(); err != nil {
			return "", err
		}
		if err := archive.Run(); err != nil {
			return "", fmt.Errorf("git archive %s: %w", commit, err)
		}
		if err := untar.Wait(); err != nil {
			return "", fmt.Errorf("untar %s: %w", commit, err)
		}
	}
	build := exec.Command("go", "build", "-buildvcs=false", "-o", out, "./cmd/local")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/local: %v\n%s", err, b)
	}
	return out, nil
}

// mixedAdminKey is the admin key every server of a scenario shares.
const mixedAdminKey = "lk_mixed_versions_admin_key_0123456789abcdef"

// localServer is one cmd/local process on the scenario's table.
type localServer struct {
	name string
	base string
	cmd  *exec.Cmd
	done chan struct{}
	// listsServed counts the status lists listedValid read from it.
	listsServed int
}

// startLocal starts bin over DynamoDB at endpoint, table table, with the
// secrets of dataDir (the same signing key for every server), and waits
// for its listening line.
func startLocal(t *testing.T, name, bin, endpoint, table, dataDir string) *localServer {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "ADDR=127.0.0.1:0", "DATA_DIR="+dataDir, "DYNAMODB_ENDPOINT="+endpoint,
		"TABLE_NAME="+table, "ADMIN_API_KEY="+mixedAdminKey, "ISSUER=http://latchkey.mixed.test")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &localServer{name: name, cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "latchkey listening" {
				addr <- l.Addr
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(s.stop)
	select {
	case s.base = <-addr:
	case <-s.done:
		t.Fatalf("%s exited before listening", name)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no listening line within 30 s", name)
	}
	return s
}

func (s *localServer) stop() {
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Kill()
	}
	<-s.done
}

// call makes one request with credential and decodes the JSON answer.
func (s *localServer) call(t *testing.T, method, path, credential string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+credential)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, s.name, err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// mixedKey is an API key made for the scenario.
type mixedKey struct{ id, secret string }

func (s *localServer) createKey(t *testing.T) mixedKey {
	t.Helper()
	code, out := s.call(t, "POST", "/v1/api-keys", mixedAdminKey, map[string]any{"name": "mixed", "scopes": []string{"read:users"}})
	if code != http.StatusCreated {
		t.Fatalf("create a key on %s: %d %v", s.name, code, out)
	}
	return mixedKey{id: out["id"].(string), secret: out["key"].(string)}
}

func (s *localServer) issue(t *testing.T, k mixedKey) string {
	t.Helper()
	code, out := s.call(t, "POST", "/v1/auth/token", k.secret, map[string]any{"scopes": []string{"read:users"}})
	if code != http.StatusCreated {
		t.Fatalf("issue a token on %s: %d %v", s.name, code, out)
	}
	return out["access_token"].(string)
}

func (s *localServer) mustDo(t *testing.T, what, method, path string, body any) {
	t.Helper()
	if code, out := s.call(t, method, path, mixedAdminKey, body); code >= 300 {
		t.Fatalf("%s on %s: %d %v", what, s.name, code, out)
	}
}

// validOnce reports whether any of 16 verifies of tok on s says valid.
func (s *localServer) validOnce(t *testing.T, tok string) bool {
	t.Helper()
	for range 16 {
		code, out := s.call(t, "GET", "/v1/auth/verify", tok, nil)
		if code != http.StatusOK {
			t.Fatalf("verify on %s: %d %v", s.name, code, out)
		}
		if out["valid"] == true {
			return true
		}
	}
	return false
}

// revokedInFeed returns the token.revoked events of s's feed, as JSON.
func (s *localServer) revokedInFeed(t *testing.T) string {
	t.Helper()
	code, out := s.call(t, "GET", "/v1/events?types=token.revoked&limit=100", mixedAdminKey, nil)
	if code != http.StatusOK {
		t.Fatalf("the feed on %s: %d %v", s.name, code, out)
	}
	b, _ := json.Marshal(out["data"])
	return string(b)
}

// jti returns a token's id, from its payload.
func jti(t *testing.T, tok string) string {
	t.Helper()
	m := regexp.MustCompile(`"jti":"([^"]+)"`).FindStringSubmatch(payload(t, tok))
	if m == nil {
		t.Fatalf("no jti in %s", payload(t, tok))
	}
	return m[1]
}

func payload(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listedValid reports whether tok carries a status claim whose list s
// serves saying VALID: what a resource server that verifies offline
// (docs/protect-your-api.md) would accept. A token without the claim, or
// whose list s answers 404 for, is refused by such a server or checked
// by its signature alone (the previous release's tokens), and says
// nothing of a lost change.
func (s *localServer) listedValid(t *testing.T, tok string) bool {
	t.Helper()
	var c struct {
		Status *struct {
			StatusList struct {
				Idx int64  `json:"idx"`
				URI string `json:"uri"`
			} `json:"status_list"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(payload(t, tok)), &c); err != nil {
		t.Fatal(err)
	}
	if c.Status == nil {
		return false
	}
	u, err := url.Parse(c.Status.StatusList.URI)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(s.base + u.Path)
	if err != nil {
		t.Fatalf("GET %s on %s: %v", u.Path, s.name, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	switch res.StatusCode {
	case http.StatusNotFound:
		return false
	case http.StatusOK:
	default:
		t.Fatalf("GET %s on %s: %d %s", u.Path, s.name, res.StatusCode, body)
	}
	var l struct {
		StatusList struct {
			Bits int    `json:"bits"`
			Lst  string `json:"lst"`
		} `json:"status_list"`
	}
	if err := json.Unmarshal([]byte(payload(t, string(body))), &l); err != nil || l.StatusList.Bits != 2 {
		t.Fatalf("the list %s on %s: bits %d, %v", u.Path, s.name, l.StatusList.Bits, err)
	}
	z, err := base64.RawURLEncoding.DecodeString(l.StatusList.Lst)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	statuses, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	i := c.Status.StatusList.Idx
	if i/4 >= int64(len(statuses)) {
		t.Fatalf("the list %s on %s holds %d entries, the token's index is %d", u.Path, s.name, 4*len(statuses), i)
	}
	s.listsServed++
	return statuses[i/4]>>(uint(i%4)*2)&3 == 0
}

// upgradeAndRollBack runs the scenario with old as the previous release
// and next as the release deployed over it, on a table of its own, and
// returns what was lost: each a sentence naming the change and the
// version that missed it; and how many status lists next served.
func upgradeAndRollBack(t *testing.T, client *dynamodb.Client, oldBin, nextBin string) (lost []string, listsServed int) {
	endpoint := os.Getenv("LATCHKEY_TEST_DYNAMODB_ENDPOINT")
	table := fmt.Sprintf("mixed-%d", time.Now().UnixNano())
	data := t.TempDir()
	old := startLocal(t, "previous", oldBin, endpoint, table, data)
	next := startLocal(t, "next", nextBin, endpoint, table, data)
	store := dynamostore.New(client, table)
	ctx := context.Background()
	// This release serves status lists (the previous one none): an
	// entry it serves as VALID for a token revoked, disabled or deleted
	// is a change lost to every resource server that verifies offline.
	listedAt := map[string]bool{} // when and token: each checked once
	listed := func(by *localServer, tok, change, when string) {
		if listedAt[when+tok] {
			return
		}
		listedAt[when+tok] = true
		if next.listedValid(t, tok) {
			lost = append(lost, fmt.Sprintf("%s: the status list %s serves says VALID for a token %s by %s", when, next.name, change, by.name))
		}
	}
	revoked := func(by, on *localServer, tok, when string) {
		if on.validOnce(t, tok) {
			lost = append(lost, fmt.Sprintf("%s: a token revoked by %s verifies on %s", when, by.name, on.name))
		}
		listed(by, tok, "revoked", when)
	}
	revoke := func(s *localServer, _ mixedKey, tok string) {
		t.Helper()
		s.mustDo(t, "revoke", "POST", "/v1/auth/revoke", map[string]any{"token": tok})
	}
	var revocations []string

	// 1. The deployment: both versions serve, each revokes, disables and
	// deletes what the other issued.
	for _, pair := range [][2]*localServer{{old, next}, {next, old}} {
		by, on := pair[0], pair[1]
		k := by.createKey(t)
		tok := on.issue(t, k)
		revoke(by, k, tok)
		revocations = append(revocations, jti(t, tok))
		revoked(by, on, tok, "upgrade")
		revoked(by, by, tok, "upgrade")
		d := on.createKey(t)
		dtok := on.issue(t, d)
		by.mustDo(t, "disable", "PATCH", "/v1/api-keys/"+d.id, map[string]any{"enabled": false})
		if on.validOnce(t, dtok) {
			lost = append(lost, fmt.Sprintf("upgrade: a key disabled by %s still verifies on %s", by.name, on.name))
		}
		listed(by, dtok, "of a key disabled", "upgrade")
		g := on.createKey(t)
		gtok := on.issue(t, g)
		by.mustDo(t, "delete", "DELETE", "/v1/api-keys/"+g.id, nil)
		if on.validOnce(t, gtok) {
			lost = append(lost, fmt.Sprintf("upgrade: a key deleted by %s still verifies on %s", by.name, on.name))
		}
		listed(by, gtok, "of a key deleted", "upgrade")
	}

	// 2. Every alias serves the new release: the previous one stops, and
	// the deployment's step puts the formats in force (no margin here:
	// nothing of the previous release is in flight).
	old.stop()
	if _, err := account.PutFormatsInForce(ctx, store, time.Now(), version.Version); err != nil {
		t.Fatal(err)
	}
	time.Sleep(account.FormatsRefresh + time.Second)
	k := next.createKey(t)
	before := next.issue(t, k) // revoked by the previous release during the rollback
	during := next.issue(t, k) // revoked by this one during the rollback
	flipped := next.issue(t, k)
	if !strings.Contains(payload(t, flipped), `"irv":true`) {
		t.Fatalf("%s issues no claim irv with the formats in force: the scenario would not try them (%s)", next.name, payload(t, flipped))
	}
	revoke(next, k, flipped)
	revocations = append(revocations, jti(t, flipped))
	revoked(next, next, flipped, "in force")
	d := next.createKey(t)
	dtok := next.issue(t, d) // its key disabled by the previous release during the rollback

	// 3. The rollback drill: formats out of force first, a wait, then the
	// previous release serves beside this one while both revoke, and
	// changes the key (which it rewrites without what it does not know).
	if err := account.PutFormatsOutOfForce(ctx, store, version.Version); err != nil {
		t.Fatal(err)
	}
	time.Sleep(account.FormatsRefresh + time.Second)
	old = startLocal(t, "previous", oldBin, endpoint, table, data)
	revoke(old, k, before)
	revoke(next, k, during)
	revocations = append(revocations, jti(t, before), jti(t, during))
	old.mustDo(t, "rename", "PATCH", "/v1/api-keys/"+k.id, map[string]any{"name": "renamed during the rollback"})
	old.mustDo(t, "disable", "PATCH", "/v1/api-keys/"+d.id, map[string]any{"enabled": false})
	for _, s := range []*localServer{old, next} {
		revoked(old, s, before, "rollback")
		revoked(next, s, during, "rollback")
		revoked(next, s, flipped, "rollback")
		if s.validOnce(t, dtok) {
			lost = append(lost, fmt.Sprintf("rollback: a key disabled by %s still verifies on %s", old.name, s.name))
		}
	}
	listed(old, dtok, "of a key disabled", "rollback")
	// The feed lists an event once it is EventLag old (5 s with the
	// default store timeout); 30 s more for a loaded machine (the docs'
	// rule for event waits): a feed that has them all ends the wait.
	for _, s := range []*localServer{old, next} {
		missing := revocations
		for deadline := time.Now().Add(35 * time.Second); len(missing) > 0 && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			feed := s.revokedInFeed(t)
			missing = slices.DeleteFunc(slices.Clone(missing), func(id string) bool { return strings.Contains(feed, id) })
		}
		for _, id := range missing {
			lost = append(lost, fmt.Sprintf("the event of %s's revocation is not in %s's feed", id, s.name))
		}
	}
	// 4. Forward again: the previous release stops, the step puts the
	// formats in force anew. What it changed stays changed, in the
	// verify and in every list served.
	old.stop()
	if _, err := account.PutFormatsInForce(ctx, store, time.Now(), version.Version); err != nil {
		t.Fatal(err)
	}
	time.Sleep(account.FormatsRefresh + time.Second)
	revoked(old, next, before, "forward again")
	if next.validOnce(t, dtok) {
		lost = append(lost, fmt.Sprintf("forward again: a key disabled by %s still verifies on %s", old.name, next.name))
	}
	listed(old, dtok, "of a key disabled", "forward again")
	return lost, next.listsServed
}
