package doorstest_test

import (
	"flag"
	"os"
	"testing"
	"time"

	"latchkey/pkg/dynamostore/dynamotest"
)

// The cells of TestDoors are (door, principal, action). Each dimension is
// an enumeration; a new constant before its num… fails the test until
// every cell it adds has an expected answer or is declared not applicable.

// door is a way into Latchkey.
type door int

const (
	doorAPI        door = iota // the JSON API, /v1/..., through the auth function
	doorConsole                // /console, with a session cookie, through the auth function
	doorOAuth                  // /oauth2/token, introspect, revoke, through the auth function
	doorAuthorizer             // the Lambda authorizer's decision on GET /orders (events/authorizer)
	doorVerifyURL              // the verify function on a function URL (routeKey $default)
	numDoors
)

var doorNames = [numDoors]string{"API", "Console", "OAuth", "Authorizer", "VerifyURL"}

// who is whose credential a principal presents, relative to the target:
// the key every key action names. The tree (fixture_test.go, build):
//
//	admin (bootstrap, *:*)
//	└─ above (*:*, rotated with a day's grace: its previous secret still authenticates)
//	   ├─ target (the manager grants, bound to organization A, rate limit and credits)
//	   │  └─ below (the same grants and limits, bound to A)
//	   ├─ sibling (the manager grants)
//	   ├─ orgThis (the manager grants, bound to A)
//	   ├─ orgOther (the manager grants, bound to B)
//	   └─ owned (the manager grants, owner_id team-billing; the target has no owner)
type who int

const (
	whoAdmin    who = iota // the bootstrap admin key
	whoAbove               // the key that created the target
	whoSibling             // another key of the same creator
	whoBelow               // a key the target created
	whoOrgThis             // a key bound to the target's organization, its sibling
	whoOrgOther            // a key bound to another organization
	whoOwned               // a key with an owner the target does not have
	whoPrevious            // above's previous secret, in its grace period
	whoStale               // a console session of above, begun before its rotation
	numWhos
)

var whoNames = [numWhos]string{"Admin", "Above", "Sibling", "Below", "OrgThis", "OrgOther", "Owned", "Previous", "Stale"}

// form is how a principal presents itself: the key's secret, a console
// session signed in with it, or an access token issued for it.
type form int

const (
	formKey form = iota
	formSession
	formToken
	numForms
)

var formNames = [numForms]string{"Key", "Session", "Token"}

// principal is a who in a form.
type principal struct {
	who  who
	form form
}

func (p principal) String() string { return whoNames[p.who] + formNames[p.form] }

// principalNA are the principals that cannot exist, with the reason.
var principalNA = map[principal]string{
	{whoPrevious, formSession}: "a previous secret cannot sign in (the cell Console/PreviousKey/SignIn: 403 previous_secret)",
	{whoStale, formKey}:        "the key of a session begun before its rotation is Above (its new secret) or Previous",
	{whoStale, formToken}:      "Stale names a console session; a rotation leaves the key's access tokens valid (RotateAPIKey)",
}

// action is what the principal asks; the key actions name the target (or
// the admin key: RevokeAllAdmin), the token actions the target's token.
type action int

const (
	actGetKey         action = iota // GET a key
	actListKeys                     // list keys: allowed lists the target, not_found lists others only
	actListTokens                   // list the target's tokens
	actIntrospect                   // introspect the target's token: allowed is active
	actVerify                       // verify the principal's own credential: allowed is valid, and counts against every limited key above
	actVerifyHead                   // HEAD of verify: 405, no verdict, nothing spent
	actIssueToken                   // issue a token for the principal's key
	actSignIn                       // start a console session with the credential
	actCreateKey                    // create a key below the principal's, limited as the below key is
	actRename                       // change the target's name and metadata
	actDisable                      // disable the target
	actRateLimits                   // set the target's rate limits
	actCredits                      // set the target's credits
	actRotate                       // rotate the target's secret
	actRevokeAll                    // revoke every token of the target
	actRevokeAllAdmin               // revoke every token of the bootstrap admin key
	actRevokeToken                  // revoke the target's token
	actDelete                       // delete the target
	actKeyUsage                     // read the target's usage: allowed shows it (the API's buckets, the console page's charts)
	actKeyLimitsLeft                // read the uses left of the target's rate limit (the console's key page)
	actOrgUsage                     // read the usage of the target's organization, A
	actOrgLimitsLeft                // read the uses left of A's rate limit (the console's organization page)
	actEvents                       // read the feed: allowed shows the target's api_key.created, not_found does not
	numActions
)

var actionNames = [numActions]string{"GetKey", "ListKeys", "ListTokens", "Introspect", "Verify", "VerifyHead", "IssueToken", "SignIn",
	"CreateKey", "Rename", "Disable", "RateLimits", "Credits", "Rotate", "RevokeAll", "RevokeAllAdmin", "RevokeToken", "Delete",
	"KeyUsage", "KeyLimitsLeft", "OrgUsage", "OrgLimitsLeft", "Events"}

// result is the kind of answer a cell gets.
type result int

const (
	_            result = iota // missing: a cell must never resolve to it
	allowed                    // done, and seen done (the list holds the target, the token is active or valid)
	refused                    // 403 with a code (at /oauth2/revoke, 400 unauthorized_client)
	notFound                   // 404, or a list or feed without the target
	unauthorized               // 401 (invalid_client at /oauth2), or the console's sign-in page
	inactive                   // introspection inactive, verify not valid, the authorizer denies
	unexpected                 // any other answer (observed only)
)

// outcome is a result with its code when refused.
type outcome struct {
	result result
	code   string
}

func (o outcome) String() string {
	switch o.result {
	case allowed:
		return "allowed"
	case refused:
		return "refused " + o.code
	case notFound:
		return "not_found"
	case unauthorized:
		return "unauthorized"
	case inactive:
		return "inactive"
	case unexpected:
		return "unexpected " + o.code
	}
	return "missing"
}

var (
	ok     = outcome{result: allowed}
	nf     = outcome{result: notFound}
	unauth = outcome{result: unauthorized}
	inact  = outcome{result: inactive}
	// up: a key never changes a key above it; prev: a previous secret
	// manages no key; forb: a refusal of the rule itself.
	up      = outcome{refused, "forbidden"}
	forb    = outcome{refused, "forbidden"}
	prev    = outcome{refused, "previous_secret"}
	scope   = outcome{refused, "insufficient_scope"}
	outside = outcome{refused, "outside_organization"}
)

// decisions is the one decision, pkg/account's, per action and who, for
// a who that acts with the credential the action takes (its key or a
// console session of it; doorRules say which): what every door must
// answer. The rules after issue 29:
//   - a key reads keys it sees within its grants (docs/security.md, API
//     keys form a tree), never another tenant's or owner's (not found);
//   - it changes, disables, rotates, deletes and revokes the tokens of a
//     key that is not above it; a previous secret manages no key, nor signs
//     in;
//   - only a key above the target, or the admin key, changes its rate
//     limits or credits (docs/rate-limits.md; issue 29 hole 2);
//   - only the bootstrap key revokes all its own tokens (hole 6c);
//   - a console session ends at a rotation of its key (hole 1);
//   - another tenant's token is inactive to introspection and cannot be
//     revoked; the feed shows a bound key its organization's events only;
//   - a key with an owner sees that owner's keys and tokens only: another
//     owner's token is inactive to its introspection and it cannot revoke
//     one (forbidden); the feed, a grant of its own (read:events), shows
//     it what it shows a key without an owner (docs/security.md);
//   - a key's usage and the uses left of its limits are read as the key
//     is (OpAPIKeyUsage, GetAPIKey), an organization's as the
//     organization is (OpOrganizationUsage, GetOrganization): a key bound
//     to another is not found; an owner confines keys and tokens, not the
//     organization a key is not bound to.
var decisions = map[action][numWhos]outcome{
	//                 Admin Above Sibling Below OrgThis OrgOther Owned Previous Stale
	actGetKey:         {ok, ok, ok, ok, ok, nf, nf, ok, unauth},
	actListKeys:       {ok, ok, ok, ok, ok, nf, nf, ok, unauth},
	actListTokens:     {ok, ok, ok, ok, ok, nf, nf, ok, unauth},
	actIntrospect:     {ok, ok, ok, ok, ok, inact, inact, ok, unauth},
	actVerify:         {ok, ok, ok, ok, ok, ok, ok, ok, inact},
	actIssueToken:     {ok, ok, ok, ok, ok, ok, ok, ok, unauth},
	actSignIn:         {ok, ok, ok, ok, ok, ok, ok, prev, unauth},
	actCreateKey:      {ok, ok, ok, ok, ok, ok, ok, prev, unauth},
	actRename:         {ok, ok, ok, up, ok, nf, nf, prev, unauth},
	actDisable:        {ok, ok, ok, up, ok, nf, nf, prev, unauth},
	actRateLimits:     {ok, ok, forb, up, forb, nf, nf, prev, unauth},
	actCredits:        {ok, ok, forb, up, forb, nf, nf, prev, unauth},
	actRotate:         {ok, ok, ok, up, ok, nf, nf, prev, unauth},
	actRevokeAll:      {ok, ok, ok, up, ok, nf, nf, prev, unauth},
	actRevokeAllAdmin: {ok, forb, scope, nf, nf, nf, nf, prev, unauth},
	actRevokeToken:    {ok, ok, ok, ok, ok, outside, forb, ok, unauth},
	actDelete:         {ok, ok, ok, up, ok, nf, nf, prev, unauth},
	actKeyUsage:       {ok, ok, ok, ok, ok, nf, nf, ok, unauth},
	actKeyLimitsLeft:  {ok, ok, ok, ok, ok, nf, nf, ok, unauth},
	actOrgUsage:       {ok, ok, ok, ok, ok, nf, ok, ok, unauth},
	actOrgLimitsLeft:  {ok, ok, ok, ok, ok, nf, ok, ok, unauth},
	actEvents:         {ok, ok, ok, ok, ok, nf, ok, ok, unauth},
}

// rule is what a (door, action, form) cell expects: the decision, a fixed
// outcome for every who, or nothing, with the reason (na).
type rule struct {
	decided bool
	fixed   outcome
	na      string
}

var decided = rule{decided: true}

func always(o outcome) rule { return rule{fixed: o} }
func na(reason string) rule { return rule{na: reason} }

// doorRule gives the rule of each form for some actions at a door.
type doorRule struct {
	door    door
	actions []action
	forms   [numForms]rule
}

// The actions of each door's rules.
var (
	keyReads   = []action{actGetKey, actListKeys, actListTokens, actKeyUsage}
	keyChanges = []action{actCreateKey, actRename, actDisable, actRotate, actRevokeAll, actRevokeAllAdmin, actDelete}
	keyLimits  = []action{actRateLimits, actCredits}
	tokenUses  = []action{actRevokeToken, actEvents}
	orgReads   = []action{actOrgUsage}
	limitsLeft = []action{actKeyLimitsLeft, actOrgLimitsLeft}
)

func join(lists ...[]action) []action {
	var out []action
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// The fixed answers of the forms a door does not take for an action.
var (
	sessionNoAPICredential = always(unauth) // the API refuses a console session (401)
	tokenManagesNoKey      = always(forb)   // key management takes a key or a session, never an access token
	notACookie             = always(unauth) // the console reads a session cookie only: anything else goes to the sign-in
	notAClientSecret       = always(unauth) // /oauth2 authenticates a client by its key: invalid_client
	keyIsNoToken           = always(inact)  // an API key is no access token: verify says invalid, the authorizer denies
	headNoVerdict          = always(ok)     // HEAD is 405 with Allow: GET: no verdict, and nothing spent
)

// doorRules says, per door, which actions it serves and how each form is
// judged. Every (door, action, form) must be in exactly one row.
var doorRules = []doorRule{
	{doorAPI, join(keyReads, keyChanges, keyLimits, []action{actIssueToken}), [numForms]rule{decided, sessionNoAPICredential, tokenManagesNoKey}},
	{doorAPI, join(tokenUses, orgReads), [numForms]rule{decided, sessionNoAPICredential, decided}},
	{doorAPI, []action{actVerify}, [numForms]rule{keyIsNoToken, decided, decided}},
	{doorAPI, []action{actVerifyHead}, [numForms]rule{headNoVerdict, headNoVerdict, headNoVerdict}},
	{doorAPI, []action{actIntrospect}, allNA("introspection is /oauth2/introspect: the OAuth door")},
	{doorAPI, []action{actSignIn}, allNA("sign-in is the console's")},
	{doorAPI, limitsLeft, allNA("the API shows no rate limit's uses left but the caller's own, in verify's answer (Verify); the credits left are GetKey's")},

	{doorConsole, join(keyReads, keyChanges, tokenUses, orgReads, limitsLeft, []action{actIntrospect}), [numForms]rule{notACookie, decided, notACookie}},
	{doorConsole, []action{actSignIn}, [numForms]rule{decided, always(unauth), always(forb)}},
	{doorConsole, keyLimits, allNA("the console has no form that changes a key's rate limits or credits")},
	{doorConsole, []action{actIssueToken}, allNA("the console issues no access token")},
	{doorConsole, []action{actVerify, actVerifyHead}, allNA("the console's token page is introspection: the Introspect cell")},

	{doorOAuth, []action{actIssueToken, actIntrospect, actRevokeToken}, [numForms]rule{decided, notAClientSecret, notAClientSecret}},
	{doorOAuth, join(keyReads, keyChanges, keyLimits, orgReads, limitsLeft, []action{actEvents, actVerify, actVerifyHead, actSignIn}), allNA("/oauth2 issues, introspects and revokes tokens only")},

	{doorAuthorizer, []action{actVerify}, [numForms]rule{keyIsNoToken, always(inact), decided}},
	{doorAuthorizer, join(keyReads, keyChanges, keyLimits, tokenUses, orgReads, limitsLeft, []action{actIntrospect, actVerifyHead, actIssueToken, actSignIn}), allNA("the authorizer decides one thing: whether a token opens a route (Verify)")},

	{doorVerifyURL, []action{actVerify}, [numForms]rule{keyIsNoToken, decided, decided}},
	{doorVerifyURL, []action{actVerifyHead}, [numForms]rule{headNoVerdict, headNoVerdict, headNoVerdict}},
	{doorVerifyURL, join(keyReads, keyChanges, keyLimits, tokenUses, orgReads, limitsLeft, []action{actIntrospect, actIssueToken, actSignIn}), allNA("the verify URL serves verify alone; any other path is 404")},
}

func allNA(reason string) [numForms]rule {
	return [numForms]rule{na(reason), na(reason), na(reason)}
}

// cell is one (door, principal, action).
type cell struct {
	door   door
	p      principal
	action action
}

func (c cell) String() string {
	return doorNames[c.door] + "/" + c.p.String() + "/" + actionNames[c.action]
}

// expectations resolves every cell of the cross product to its outcome,
// or to "" with the reason it does not apply, and fails t for a cell that
// is neither, or that two rows claim.
func expectations(t *testing.T) (want map[cell]outcome, skipped map[cell]string) {
	t.Helper()
	rules := map[[3]int]rule{}
	for _, r := range doorRules {
		for _, a := range r.actions {
			for f := range numForms {
				k := [3]int{int(r.door), int(a), int(f)}
				if _, dup := rules[k]; dup {
					t.Errorf("door %s, action %s, form %s: in two rows of doorRules", doorNames[r.door], actionNames[a], formNames[f])
				}
				rules[k] = r.forms[f]
			}
		}
	}
	want, skipped = map[cell]outcome{}, map[cell]string{}
	for d := range numDoors {
		for w := range numWhos {
			for f := range numForms {
				p := principal{w, f}
				for a := range numActions {
					c := cell{d, p, a}
					if reason, ok := principalNA[p]; ok {
						skipped[c] = reason
						continue
					}
					r, ok := rules[[3]int{int(d), int(a), int(f)}]
					switch {
					case !ok:
						t.Errorf("missing cell %s: doorRules has no rule for door %s, action %s, form %s", c, doorNames[d], actionNames[a], formNames[f])
					case r.na != "":
						skipped[c] = r.na
					case r.decided && decisions[a][w].result == 0:
						t.Errorf("missing cell %s: decisions has no answer for action %s, who %s", c, actionNames[a], whoNames[w])
					case r.decided:
						want[c] = decisions[a][w]
					case r.fixed.result == 0:
						t.Errorf("missing cell %s: its rule is empty", c)
					default:
						want[c] = r.fixed
					}
				}
			}
		}
	}
	return want, skipped
}

// TestDoors asks every door, as every principal, to do every action on the
// target key and its token, and holds each answer to the rules: one
// decision, whichever door asks it. It runs through the functions' Lambda
// handlers (auth for the API, the console and /oauth2, the authorizer's,
// verify's on a function URL) over bbolt, and over DynamoDB Local when
// LATCHKEY_TEST_DYNAMODB_ENDPOINT is set (scripts/dynamodb-local.sh). One
// fixture per store serves every cell: a cell that changes the tree (a
// disable, a rotation, a delete, a revocation) is followed by the repair
// that puts it back, and the feed is read last, once the events have
// settled. A cell that is neither expected nor declared not applicable
// fails the test, as does a cell that did not run.
func TestDoors(t *testing.T) {
	want, skipped := expectations(t)
	if t.Failed() {
		t.FailNow()
	}
	if len(want)+len(skipped) != int(numDoors)*int(numWhos)*int(numForms)*int(numActions) {
		t.Fatalf("%d cells expected and %d not applicable, of %d", len(want), len(skipped), int(numDoors)*int(numWhos)*int(numForms)*int(numActions))
	}
	// Under -run a cell may be left out on purpose.
	filtered := flag.Lookup("test.run").Value.String() != ""
	stores := []string{"bbolt", "dynamodb"}
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			if st == "dynamodb" && os.Getenv(dynamotest.EndpointEnv) == "" {
				t.Skip(dynamotest.EndpointEnv + " is not set; run through scripts/dynamodb-local.sh (make test does)")
			}
			start := time.Now()
			f := newFixture(t, st)
			t.Logf("fixture: %v", time.Since(start).Round(time.Millisecond))
			ran := map[cell]bool{}
			// Action-major: the feed, last, has settled by then.
			for a := range numActions {
				if a == actEvents {
					f.settleEvents()
				}
				for d := range numDoors {
					for w := range numWhos {
						for fm := range numForms {
							c := cell{d, principal{w, fm}, a}
							o, expected := want[c]
							if !expected {
								continue
							}
							t.Run(c.String(), func(t *testing.T) {
								f.runCell(t, c, o)
								ran[c] = true
							})
						}
					}
				}
			}
			for c := range want {
				if !ran[c] && !filtered {
					t.Errorf("cell %s did not run to its end", c)
				}
			}
			t.Logf("%d cells run, %d not applicable, in %v", len(want), len(skipped), time.Since(start).Round(time.Millisecond))
		})
	}
}
