package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"latchkey/pkg/account"
	"latchkey/pkg/console"
	"latchkey/pkg/httpapi/httpapitest"
)

// The browser test's inputs, which make test-browser sets: the headless
// Chromium to drive (scripts/chromium.sh installs Debian's), and the
// axe-core engine to inject into every page (tools/node_modules).
const (
	chromiumEnv  = "LATCHKEY_TEST_CHROMIUM"
	axeEnv       = "LATCHKEY_TEST_AXE"
	artifactsEnv = "LATCHKEY_TEST_ARTIFACTS"
)

// browser drives one tab through the console, timing each step, taking a
// screenshot of each page it names and checking it with axe-core.
type browser struct {
	t      *testing.T
	ctx    context.Context
	base   string
	axe    string
	dir    string
	steps  []string
	checks []string
}

// TestBrowser_Session drives headless Chromium through a whole session of
// an operator, over the real stack (both stores: LATCHKEY_TEST_STORE):
// sign in, create an organization and a user, add the member, create a key
// and see its secret once, edit its rate limits and credits, see the usage
// charts, rotate it, disable it, find the change in the events, sign out,
// and find that the old cookie no longer works. Every page it meets passes
// axe-core with no violation of any impact, at 1280 px (without scrolling
// sideways) and at a phone's width. Screenshots of both, the steps'
// timings and the axe results are written to .tmp/console-browser/<store>/
// (LATCHKEY_TEST_ARTIFACTS).
func TestBrowser_Session(t *testing.T) {
	chromium, axePath := os.Getenv(chromiumEnv), os.Getenv(axeEnv)
	if chromium == "" || axePath == "" {
		t.Skipf("the browser test needs headless Chromium and axe-core: %s and %s unset (make test-browser installs both and sets them)", chromiumEnv, axeEnv)
	}
	axe, err := os.ReadFile(axePath)
	if err != nil {
		t.Fatalf("read axe-core: %v", err)
	}
	// The server is reached at the address the console's issuer names, so
	// that the cookie rules are those of a plain-http loopback server, as
	// make run's.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	env := httpapitest.NewServerAt(t, base)
	srv := httptest.NewUnstartedServer(env.Handler)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)

	// The same console over a usage source, for the usage charts, until
	// the stack counts usage: a server of its own on the same loopback
	// host, where the session's cookie (whose scope is the host, not the
	// port) signs in too.
	usage := httptest.NewServer(console.New(console.Config{Service: env.Service, Usage: sampleUsage{env.Service}}))
	t.Cleanup(usage.Close)

	store := os.Getenv(httpapitest.StoreEnv)
	if store == "" {
		store = "bbolt"
	}
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		dir = filepath.Join("..", "..", ".tmp", "console-browser")
	}
	dir = filepath.Join(dir, store)
	// This run's artifacts only: none of an earlier run's is left beside them.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	alloc, cancel := chromedp.NewExecAllocator(t.Context(),
		chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	// Each page is checked twice (1280 px and a phone's width), on a
	// machine that may be busy: 8 minutes, where one run takes 1 to 3.
	ctx, cancel = context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	// The browser and its tab start with ctx: a step's own deadline
	// (waitLimit) must not end them.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	b := &browser{t: t, ctx: ctx, base: base, axe: string(axe), dir: dir}
	defer b.writeReport()
	b.do(chromedp.EmulateViewport(desktopWidth, desktopHeight))

	b.step("open the console: the sign-in page", func() {
		b.do(chromedp.Navigate(base + "/console/organizations"))
		b.do(chromedp.WaitVisible(chromedp.ID("api_key")))
		b.page("sign-in")
	})
	b.step("a wrong key is refused, its problem shown", func() {
		b.do(chromedp.SendKeys(chromedp.ID("api_key"), "lk_not_a_key_of_this_service"))
		b.submit(`form[method="post"][action="/console/sign-in"]`, ".problem")
		b.wantText(".problem", "Unauthorized")
		b.page("sign-in-refused")
	})
	b.step("sign in with the admin key", func() {
		b.do(chromedp.SendKeys(chromedp.ID("api_key"), env.AdminKey))
		b.submit(`form[method="post"][action="/console/sign-in"]`, "#create-org")
		if loc := b.location(); loc != base+"/console/organizations" {
			t.Errorf("after the sign-in: at %s, want the page asked for", loc)
		}
		b.wantText("main", "No organizations yet")
		b.page("organizations-empty")
	})
	b.step("a refused form shows the field's problem", func() {
		b.do(chromedp.SendKeys(chromedp.ID("name"), "Acme"), chromedp.SendKeys(chromedp.ID("slug"), "Not A Slug"))
		b.submit(`form[method="post"][action="/console/organizations"]`, ".problem")
		b.wantText(".problem", "Invalid request")
		b.wantText("#slug-error", "")
		b.page("organizations-invalid")
	})
	var orgURL string
	b.step("create an organization", func() {
		b.do(chromedp.SetValue(chromedp.ID("slug"), "acme"))
		b.submit(`form[method="post"][action="/console/organizations"]`, "#members")
		orgURL = b.location()
		b.wantText(".notice", "Created")
		b.page("organization")
	})
	orgID := strings.TrimPrefix(strings.SplitN(orgURL, "?", 2)[0], base+"/console/organizations/")
	var userID string
	b.step("create a user", func() {
		b.click(`nav a[href="/console/users"]`, "#create-user")
		b.do(chromedp.SendKeys(chromedp.ID("email"), "ada@example.com"), chromedp.SendKeys(chromedp.ID("name"), "Ada Lovelace"))
		b.submit(`form[method="post"][action="/console/users"]`, "#orgs")
		b.wantText("main", "Not a member of any organization")
		userID = strings.TrimPrefix(strings.SplitN(b.location(), "?", 2)[0], base+"/console/users/")
		b.page("user")
	})
	b.step("add the member, chosen by name, as the owner", func() {
		b.do(chromedp.Navigate(orgURL))
		b.do(chromedp.WaitVisible(chromedp.ID("add-member")))
		b.wantText("section:has(#usage)", "Usage")
		b.wantText("#user_id", "ada@example.com (Ada Lovelace)")
		b.do(chromedp.SetValue(chromedp.ID("user_id"), userID), chromedp.SetValue(chromedp.ID("role"), "owner"))
		b.submit(`form[method="post"][action$="/members"]`, ".badge")
		b.wantText("table", "ada@example.com")
		b.wantText(".rule", "one owner")
		b.page("organization-member")
	})
	b.click(`nav a[href="/console/users"]`, "#create-user")
	b.page("users")
	b.click(`nav a[href="/console/organizations"]`, "#create-org")
	b.page("organizations")

	var keyURL, secret string
	b.step("create a key with a limit and see its secret once", func() {
		b.click(`nav a[href="/console/api-keys"]`, "#create-key")
		b.wantText("#organization_id", "Acme (acme)")
		b.do(chromedp.SendKeys(chromedp.ID("name"), "billing worker"),
			chromedp.Click(chromedp.CSS(`input[name="scope"][value="read:users"]`)),
			chromedp.SetValue(chromedp.ID("organization_id"), orgID),
			chromedp.SendKeys(chromedp.ID("owner_id"), "team-billing"),
			chromedp.SetValue(chromedp.ID("expires_in"), "30d"),
			chromedp.SendKeys(chromedp.ID("metadata"), "ticket=OPS-1"),
			chromedp.SendKeys(chromedp.ID("limit"), "100"),
			chromedp.SetValue(chromedp.ID("limit_period"), "1m"),
			chromedp.SendKeys(chromedp.ID("credits"), "5000"),
			chromedp.SetValue(chromedp.ID("refill"), "monthly"))
		b.submit(`form[method="post"][action="/console/api-keys"]`, "#secret")
		secret = b.value("#secret")
		if !strings.HasPrefix(secret, "lk_") {
			t.Fatalf("the secret shown: %q", secret)
		}
		b.do(chromedp.Click(chromedp.CSS("button[data-copy]")))
		b.waitText(".copied")
		b.page("key-secret")
		b.click(`a.button[href^="/console/api-keys/key_"]`, "#rotate")
		keyURL = b.location()
		if html := b.html(); strings.Contains(html, secret) {
			t.Error("the key's page shows its secret again")
		}
		b.wantText(".facts", "…"+secret[len(secret)-4:])
		b.wantText(".facts", "100 per 1m")
		b.wantText(".facts", "5000 left, refilled to 5000 monthly")
		b.wantText(".facts", "Acme")
		b.wantText("section:has(#usage)", "Usage")
		b.page("key")
	})
	keyID := strings.TrimPrefix(keyURL, base+"/console/api-keys/")
	b.step("add a second rate limit; a refused one shows beside its row", func() {
		b.do(chromedp.SendKeys(chromedp.ID("rl-1-name"), "daily"), chromedp.SendKeys(chromedp.ID("rl-1-limit"), "5000"), chromedp.SetValue(chromedp.ID("rl-1-period"), "1d"))
		b.submit(`form[method="post"]:has(input[name="part"][value="rate_limits"])`, ".notice")
		b.wantText(".notice", "Saved")
		b.wantText(".facts", "5000 per 1d")
		b.do(chromedp.SendKeys(chromedp.ID("rl-2-name"), "hourly"), chromedp.SendKeys(chromedp.ID("rl-2-limit"), "ten"))
		b.submit(`form[method="post"]:has(input[name="part"][value="rate_limits"])`, ".problem")
		b.wantText("#rl-2-limit-error", "whole number")
		b.page("key-limits-invalid")
		b.do(chromedp.SetValue(chromedp.CSS(`[name="credits.remaining"]`), "-1"))
		b.submit(`form[method="post"]:has(input[name="part"][value="credits"])`, ".problem")
		b.wantText(".problem", "credits.remaining")
		b.page("key-credits-invalid")
	})
	b.step("see the key's and its organization's usage", func() {
		b.do(chromedp.Navigate(usage.URL+"/console/api-keys/"+keyID), chromedp.WaitVisible(chromedp.CSS("figure.chart svg")))
		b.wantText("figure.chart figcaption", "last 24 hours")
		b.wantText(".legend", "rate_limited")
		b.do(chromedp.Click(chromedp.CSS("figure.chart summary")), chromedp.WaitVisible(chromedp.CSS("figure.chart details table")))
		b.page("key-usage")
		b.dark(func() { b.page("key-usage-dark") })
		b.do(chromedp.Navigate(usage.URL+"/console/organizations/"+orgID), chromedp.WaitVisible(chromedp.ID("top-keys")))
		b.wantText("main", "billing worker")
		b.page("organization-usage")
		b.do(chromedp.Navigate(keyURL), chromedp.WaitVisible(chromedp.ID("rotate")))
	})
	var rotated string
	b.step("rotate it, the old secret kept for an hour", func() {
		b.do(chromedp.SetValue(chromedp.ID("grace"), "1h"))
		b.submit(`form[method="post"][action$="/rotate"]`, "#secret")
		rotated = b.value("#secret")
		if rotated == secret || !strings.HasPrefix(rotated, "lk_") {
			t.Errorf("the rotated secret %q: want a new one", rotated)
		}
		b.wantText("main", "keeps working until")
		b.page("key-rotated")
		if _, err := env.Service.Authenticate(t.Context(), secret); err != nil {
			t.Errorf("the old secret during its grace period: %v", err)
		}
	})
	b.step("list its live tokens; revoke them all", func() {
		tok, c, err := env.Service.IssueToken(t.Context(), mustAuth(t, env, rotated), account.TokenRequest{Scopes: []string{account.ScopeReadUsers}})
		if err != nil {
			t.Fatal(err)
		}
		b.click(`a.button[href^="/console/api-keys/key_"]`, "#tokens")
		b.wantText("main", c.ID)
		b.page("key-tokens")
		b.do(chromedp.Click(chromedp.CSS(`input[name="confirm"]`)))
		b.submit(`form[method="post"][action$="/tokens/revoke"]`, ".notice")
		b.wantText(".notice", "Every token of the key")
		b.wantText("main", "No live tokens")
		if v, err := env.Service.VerifyToken(t.Context(), tok); err != nil || v.Valid {
			t.Errorf("a token of the key after revoking them all: %+v, %v; want revoked", v, err)
		}
	})
	b.step("disable it", func() {
		b.do(chromedp.Navigate(keyURL), chromedp.WaitVisible(chromedp.ID("rotate")))
		b.submit(`form[method="post"][action$="/enabled"]`, ".status.disabled")
		b.wantText(".notice", "Key disabled")
		b.page("key-disabled")
		if _, err := env.Service.Authenticate(t.Context(), rotated); !account.IsCode(err, account.CodeUnauthorized) {
			t.Errorf("the disabled key's secret: got %v, want unauthorized", err)
		}
	})
	b.step("find the change in the events, and follow it to the key", func() {
		b.click(`nav a[href="/console/events"]`, "#type")
		b.page("events")
		b.do(chromedp.SetValue(chromedp.ID("type"), account.EventAPIKeyUpdated), chromedp.SendKeys(chromedp.ID("object"), keyID))
		b.click(`form[action="/console/events"] button[type="submit"]`, "main h1")
		// DynamoDB's feed shows an event once every earlier one is
		// committed, seconds after it (tablestore.EventLag): the page is
		// loaded again until the event is there, for at most eventWait.
		for deadline := time.Now().Add(eventWait); !b.exists("tbody"); {
			if time.Now().After(deadline) {
				t.Fatalf("the key's disable is not in the events after %v", eventWait)
			}
			time.Sleep(500 * time.Millisecond)
			b.click(`form[action="/console/events"] button[type="submit"]`, "main h1")
		}
		b.wantText("tbody", account.EventAPIKeyUpdated)
		b.wantText("tbody", "bootstrap admin key")
		b.page("events-filtered")
		b.click(`tbody a[href="/console/api-keys/`+keyID+`"]`, ".status.disabled")
	})
	b.step("verify a token on the tokens page", func() {
		tok, _, err := env.Service.IssueToken(t.Context(), mustAuth(t, env, env.AdminKey), account.TokenRequest{Scopes: []string{account.ScopeReadUsers}})
		if err != nil {
			t.Fatal(err)
		}
		b.click(`nav a[href="/console/tokens"]`, "#token")
		b.page("tokens")
		b.do(chromedp.SetValue(chromedp.ID("token"), tok))
		b.submit(`form[method="post"][action="/console/tokens"]`, "#result")
		b.wantText("#result", "Valid")
		b.page("tokens-verified")
	})
	b.step("see what deletes take with them; delete the user", func() {
		b.do(chromedp.Navigate(keyURL + "/delete"))
		b.do(chromedp.WaitVisible(chromedp.CSS(".danger-zone")))
		b.wantText(".danger-zone", "every access token issued for it")
		b.page("key-delete")
		b.do(chromedp.Navigate(orgURL))
		b.click(`a.button.danger`, ".danger-zone")
		b.wantText(".danger-zone", "1 member")
		b.wantText(".danger-zone", "1 API key bound to it")
		b.page("organization-delete")
		b.click(`nav a[href="/console/users"]`, "#create-user")
		b.click(`tbody a`, "#orgs")
		b.click(`a.button.danger`, ".danger-zone")
		b.wantText(".danger-zone", "1 membership")
		b.page("user-delete")
		b.submit(`form[method="post"][action$="/delete"]`, "#create-user")
		b.wantText(".notice", "Deleted")
		b.wantText("main", "No users yet")
		b.do(chromedp.Navigate(base + "/console/organizations/org_01ARZ3NDEKTSV4RRFFQ69G5FAV"))
		b.do(chromedp.WaitVisible(chromedp.CSS(".problem")))
		b.wantText(".problem", "Not found")
		b.page("not-found")
		b.do(chromedp.Navigate(base + "/console/api-keys"))
		b.do(chromedp.WaitVisible(chromedp.ID("create-key")))
		b.page("api-keys")
	})
	var old *network.Cookie
	b.step("sign out; the old cookie no longer works", func() {
		cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/console"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cookies.Cookies {
			if c.Name == "latchkey_console" {
				old = c
			}
		}
		if old == nil || !old.HTTPOnly || old.SameSite != network.CookieSameSiteStrict || old.Path != "/console" {
			t.Fatalf("the session cookie: %+v, want HttpOnly, SameSite=Strict, for /console", old)
		}
		b.submit(`form[method="post"].signout`, "#api_key")
		b.wantText(".notice", "Signed out")
		b.page("signed-out")
		// From outside the browser, as a thief of the cookie would.
		req, _ := http.NewRequest(http.MethodGet, base+"/console/api-keys", nil)
		req.AddCookie(&http.Cookie{Name: old.Name, Value: old.Value})
		res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/sign-in") {
			t.Errorf("the old cookie after sign-out: %d to %q, want 303 to the sign-in", res.StatusCode, loc)
		}
		// And in the browser, put back.
		if _, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: old.Name, Value: old.Value, URL: base + "/console", Path: "/console", HTTPOnly: new(true), SameSite: network.CookieSameSiteStrict}); err != nil {
			t.Fatal(err)
		}
		b.do(chromedp.Navigate(base + "/console/api-keys"))
		b.do(chromedp.WaitVisible(chromedp.ID("api_key")))
	})
}

func mustAuth(t *testing.T, env *httpapitest.Env, credential string) account.Principal {
	t.Helper()
	p, err := env.Service.Authenticate(t.Context(), credential)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// step runs f, timed.
func (b *browser) step(name string, f func()) {
	b.t.Helper()
	start := time.Now()
	f()
	line := fmt.Sprintf("%-55s %6d ms", name, time.Since(start).Milliseconds())
	b.steps = append(b.steps, line)
	b.t.Log(line)
}

// waitLimit bounds one action: a selector that never shows fails the step
// with where the browser was, not the whole test at its deadline.
const waitLimit = 20 * time.Second

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitLimit)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("at %s: %v", b.location(), err)
	}
}

// submit clicks the submit button of the form sel and waits for wait on
// the page the form leads to.
func (b *browser) submit(form, wait string) {
	b.t.Helper()
	b.click(form+` button[type="submit"]`, wait)
}

// click clicks sel and waits for wait on the page it leads to: the load
// event comes after the click, so wait is not found on the page before.
func (b *browser) click(sel, wait string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitLimit)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel)))); err != nil {
		b.t.Fatalf("at %s, click %s: %v", b.location(), sel, err)
	}
	b.do(chromedp.WaitVisible(chromedp.CSS(wait)))
}

func (b *browser) location() string {
	loc, _ := chromedp.Run(b.ctx, chromedp.Location())
	return loc
}

func (b *browser) value(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

func (b *browser) html() string {
	b.t.Helper()
	h, err := chromedp.Run(b.ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		b.t.Fatal(err)
	}
	return h
}

// wantText fails the test unless the text of sel holds want.
func (b *browser) wantText(sel, want string) {
	b.t.Helper()
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q)?.innerText ?? ""`, sel)))
	if err != nil {
		b.t.Fatal(err)
	}
	if got == "" || !strings.Contains(got, want) {
		b.t.Errorf("at %s, %s: %q, want it to hold %q", b.location(), sel, got, want)
	}
}

// exists reports whether the page has an element sel.
func (b *browser) exists(sel string) bool {
	b.t.Helper()
	ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector(%q) !== null`, sel)))
	if err != nil {
		b.t.Fatal(err)
	}
	return ok
}

// waitText waits until sel has text.
func (b *browser) waitText(sel string) {
	b.t.Helper()
	b.do(chromedp.Poll[chromedp.Void](fmt.Sprintf(`(document.querySelector(%q)?.innerText ?? "") !== ""`, sel)))
}

// axeResult is what the page check keeps of axe-core's answer.
type axeResult struct {
	Violations []struct {
		ID     string `json:"id"`
		Impact string `json:"impact"`
		Help   string `json:"help"`
		Nodes  []any  `json:"nodes"`
	} `json:"violations"`
	Passes int `json:"passes"`
}

// The viewports the pages are checked at: a laptop's, and a phone's (an
// iPhone's 390 px).
const (
	desktopWidth, desktopHeight = 1280, 900
	phoneWidth, phoneHeight     = 390, 844
)

// page checks the page as name at 1280 px, where it must not scroll
// sideways, and at a phone's width: a screenshot and axe-core at each, no
// violation of any impact.
func (b *browser) page(name string) {
	b.t.Helper()
	wide, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`))
	if err != nil {
		b.t.Fatal(err)
	}
	if wide {
		b.t.Errorf("%s scrolls sideways at 1280 px", name)
	}
	b.check(name)
	b.do(chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateMobile, chromedp.EmulatePortrait))
	defer b.do(chromedp.EmulateViewport(desktopWidth, desktopHeight))
	b.check(name + "-phone")
}

// dark runs f with the page in the system's dark mode.
func (b *browser) dark(f func()) {
	b.t.Helper()
	dark := emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, dark); err != nil {
		b.t.Fatal(err)
	}
	defer func() {
		if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
			b.t.Fatal(err)
		}
	}()
	f()
}

// check takes a screenshot of the page as name and checks it with
// axe-core: no violation of any impact.
func (b *browser) check(name string) {
	b.t.Helper()
	shot, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, fmt.Sprintf("%02d-%s.png", len(b.checks)+1, name)), shot, 0o644); err != nil {
		b.t.Fatal(err)
	}
	// Injected through DevTools, which the page's CSP does not govern; the
	// page itself loads scripts from its own origin only.
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](b.axe+`;
		axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify({
			violations: r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(n => n.target)})),
			passes: r.passes.length}))`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("axe on %s: %v", name, err)
	}
	var res axeResult
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		b.t.Fatalf("axe on %s: %v", name, err)
	}
	counts := map[string]int{}
	var found []string
	for _, v := range res.Violations {
		counts[v.Impact]++
		found = append(found, fmt.Sprintf("%s (%s)", v.ID, v.Impact))
		b.t.Errorf("axe on %s: %s violation %s: %s, at %v", name, v.Impact, v.ID, v.Help, v.Nodes)
	}
	line := fmt.Sprintf("%-22s critical %d, serious %d, moderate %d, minor %d  %s",
		name, counts["critical"], counts["serious"], counts["moderate"], counts["minor"], strings.Join(found, ", "))
	b.checks = append(b.checks, line)
	b.t.Log("axe: " + line)
}

func (b *browser) writeReport() {
	report := "Steps (wall time):\n" + strings.Join(b.steps, "\n") + "\n\naxe-core, per page:\n" + strings.Join(b.checks, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(b.dir, "report.txt"), []byte(report), 0o644); err != nil {
		b.t.Error(err)
	}
}

// sampleUsage is a console.UsageSource of fixed, varied counts: every
// outcome, on most steps, so that the charts show stacks of each colour.
type sampleUsage struct{ svc *account.Service }

func (sampleUsage) KeyUsage(_ context.Context, _ account.Principal, _ account.APIKey, from, to time.Time, interval string) ([]console.UsageBucket, error) {
	step := time.Hour
	if interval == "day" {
		step = 24 * time.Hour
	}
	var out []console.UsageBucket
	for i, at := 0, from; at.Before(to); i, at = i+1, at.Add(step) {
		if i%7 == 3 {
			continue // an empty step, left out as the API leaves it out
		}
		out = append(out, console.UsageBucket{Start: at, TokensIssued: int64(i % 4), Verifications: map[string]int64{
			"valid": int64(40 + (i*37)%60), "revoked": int64(i % 5), "expired": int64((i * 3) % 4),
			"disabled": int64(i % 2), "rate_limited": int64((i * 11) % 13), "usage_exceeded": int64((i * 5) % 9),
		}})
	}
	return out, nil
}

func (u sampleUsage) OrganizationUsage(ctx context.Context, p account.Principal, _ account.Organization, from, to time.Time, interval string) ([]console.UsageBucket, error) {
	return u.KeyUsage(ctx, p, account.APIKey{}, from, to, interval)
}

// TopKeys ranks the organization's keys, the first it lists most used.
func (u sampleUsage) TopKeys(ctx context.Context, p account.Principal, o account.Organization, _, _ time.Time, n int) ([]console.KeyUsageTotal, error) {
	l, err := u.svc.ListAPIKeys(ctx, p, account.PageRequest{}, account.APIKeyFilter{OrganizationID: o.ID})
	if err != nil {
		return nil, err
	}
	var out []console.KeyUsageTotal
	for i, k := range l.Items[:min(n, len(l.Items))] {
		out = append(out, console.KeyUsageTotal{KeyID: k.ID, Name: k.Name, TokensIssued: int64(40 / (i + 1)),
			Verifications: map[string]int64{"valid": int64(9000 / (i + 1)), "rate_limited": int64(120 / (i + 1))}})
	}
	return out, nil
}
