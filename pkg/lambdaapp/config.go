package lambdaapp

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"latchkey/pkg/account"
	"latchkey/pkg/dynamostore"
	"latchkey/pkg/httpapi"
	"latchkey/pkg/lambdaapp/lambdaenv"
	"latchkey/pkg/logsample"
	"latchkey/pkg/token"
)

// Function names one of the three Lambda functions.
type Function string

// The functions, one per endpoint group. Each serves only its group's routes.
const (
	Auth          Function = "auth"
	Organizations Function = "organizations"
	Users         Function = "users"
	// Verify serves GET /v1/auth/verify alone, from a Lambda function URL
	// instead of the HTTP API (template.yaml VerifyFunctionUrl, off by
	// default), with the handler auth serves it with. It reads no secret:
	// it verifies with the published keys and lists nothing. Its request
	// lines are the audit trail a function URL otherwise lacks: one for
	// every request, never sampled, with the client's address.
	Verify Function = "verify"
)

// Functions lists the functions of the HTTP API, in template order: not
// Verify, which is optional and serves no route of the API.
func Functions() []Function { return []Function{Auth, Organizations, Users} }

// Group is the httpapi group the function serves.
func (f Function) Group() httpapi.Group {
	switch f {
	case Auth:
		return httpapi.GroupAuth
	case Organizations:
		return httpapi.GroupOrganizations
	case Verify:
		return httpapi.GroupVerify
	default:
		return httpapi.GroupUsers
	}
}

// SignsTokens reports whether the function holds the private signing key.
// Only auth does: it is the only one that issues tokens, so it is the only
// one whose role may read the signing secret.
func (f Function) SignsTokens() bool { return f == Auth }

// WritesCredentials reports whether the function may create or change the
// items that decide which credentials are valid: the published public keys,
// API keys and their hash items, token records and revocation entries. Only
// auth may; template.yaml denies those writes to the other roles. So only
// auth reads the admin and probe key secrets and ensures those keys, at
// its start, on a secret refresh, and when Bootstrap is invoked (at deploy
// time, by the template's Bootstrap custom resource).
func (f Function) WritesCredentials() bool { return f == Auth }

// ListsItems reports whether the function serves a list, and so reads the
// cursor key secret that signs list cursors: all but Verify.
func (f Function) ListsItems() bool { return f != Verify }

// Audits reports whether the function's request lines are the audit trail
// of its requests, for want of an access log: Verify's, behind a function
// URL. Each is written, never sampled, with the client's address.
func (f Function) Audits() bool { return f == Verify }

// Environment variables, set by template.yaml (lambdaenv's, named here
// too for the three functions' readers).
const (
	EnvTableName        = lambdaenv.EnvTableName
	EnvIssuer           = lambdaenv.EnvIssuer
	EnvSigningKeySecret = "SIGNING_KEY_SECRET_ARN"
	EnvAdminKeySecret   = "ADMIN_KEY_SECRET_ARN"
	// EnvProbeKeySecret is optional, auth only: the probe key's secret
	// (account.EnsureProbeKey), which the canary and the probe read too.
	EnvProbeKeySecret  = "PROBE_KEY_SECRET_ARN"
	EnvCursorKeySecret = "CURSOR_KEY_SECRET_ARN"
	EnvSigningAlg      = lambdaenv.EnvSigningAlg
	EnvStoreTimeout    = lambdaenv.EnvStoreTimeout
	// EnvInlineRevocation is optional, auth only: token.EnvInlineRevocation.
	EnvInlineRevocation = token.EnvInlineRevocation
	// EnvStatusListTTL is optional, auth only: the status lists' ttl in
	// seconds, 1 to 300 (account.ParseStatusTTL); 10 when unset.
	EnvStatusListTTL = "STATUS_LIST_TTL"

	// EnvOriginSecret is optional: with the edge on (template.yaml
	// EdgeProtection), the value CloudFront sends in OriginSecretHeader;
	// a request without it did not come through the edge and is refused.
	EnvOriginSecret = lambdaenv.EnvOriginSecret

	EnvDynamoDBEndpoint       = lambdaenv.EnvDynamoDBEndpoint
	EnvSecretsManagerEndpoint = lambdaenv.EnvSecretsManagerEndpoint
)

// Config is a function's configuration, read once at init.
type Config struct {
	Function Function
	// TableName is the DynamoDB table.
	TableName string
	// Issuer is the issuer identifier, when ISSUER configures it: the base
	// URL of the API, the iss of its tokens. Empty (as the template leaves
	// it), every function reads the issuer the deployment recorded in the
	// table (the IssuerConfig custom resource), beside the public keys.
	Issuer string
	// SigningKeySecret is the ARN of the signing key secret; auth only.
	SigningKeySecret string
	// AdminKeySecret is the ARN of the bootstrap admin API key secret;
	// auth only.
	AdminKeySecret string
	// ProbeKeySecret is the ARN of the probe key's secret; auth only, and
	// optional: without it auth ensures no probe key.
	ProbeKeySecret string
	// CursorKeySecret is the ARN of the list-cursor HMAC key secret; every
	// function but Verify, which serves no list.
	CursorKeySecret string
	// StoreTimeout bounds each DynamoDB call (dynamostore.WithTimeout).
	StoreTimeout time.Duration
	// SigningAlgorithm is the one algorithm tokens are signed (auth) and
	// accepted (every function) with; EdDSA when empty. With RS256 the signing secret holds an
	// RSA private key in PEM, which Bootstrap puts there.
	SigningAlgorithm token.Algorithm
	// NoInlineRevocation is INLINE_REVOCATION=false
	// (token.ParseInlineRevocation): the tokens auth issues leave out the
	// claim irv (assembly.Parts.NoInlineRevocation). Read by auth alone,
	// the only signer: verify and revocation follow each token's claim.
	NoInlineRevocation bool
	// StatusListTTL is STATUS_LIST_TTL (auth alone serves the lists).
	StatusListTTL time.Duration
	// Usage is how the function flushes its usage counts
	// (account.UsageOptionsFromEnv).
	Usage account.UsageOptions
	// TokenCache bounds the verified-token cache (token.EnvCacheMaxEntries,
	// token.EnvCacheMaxBytes; optional).
	TokenCache token.CacheOptions
	// SuccessLogEvery is N of SUCCESS_LOG_EVERY (logsample.ParseEvery):
	// the request line of one success in N is logged, of every other
	// request always. 0 or 1 logs every line.
	SuccessLogEvery int
	// OriginSecret is ORIGIN_SECRET: when set, every request must carry it
	// in OriginSecretHeader (CloudFront adds it), or it is refused 403.
	// Never logged.
	OriginSecret string
	// Console builds the console (console.Mount), which auth serves; the
	// auth function's main sets it, so that the other functions link none
	// of it. Ignored by the others (NewVerifying).
	Console httpapi.MountFunc
}

// ConfigFromEnv reads fn's configuration with getenv (os.Getenv in main).
// The error names every missing or invalid variable at once, so a
// misconfigured deployment is fixed in one go.
func ConfigFromEnv(fn Function, getenv func(string) string) (Config, error) {
	switch fn {
	case Auth, Organizations, Users, Verify:
	default:
		return Config{}, fmt.Errorf("lambdaapp: unknown function %q", fn)
	}
	cfg := Config{
		Function:  fn,
		TableName: getenv(EnvTableName),
		Issuer:    getenv(EnvIssuer),
	}
	required := []struct{ name, value string }{
		{EnvTableName, cfg.TableName},
	}
	if fn.ListsItems() {
		cfg.CursorKeySecret = getenv(EnvCursorKeySecret)
		required = append(required, struct{ name, value string }{EnvCursorKeySecret, cfg.CursorKeySecret})
	}
	if fn.WritesCredentials() {
		cfg.AdminKeySecret = getenv(EnvAdminKeySecret)
		required = append(required, struct{ name, value string }{EnvAdminKeySecret, cfg.AdminKeySecret})
		cfg.ProbeKeySecret = getenv(EnvProbeKeySecret)
	}
	if fn.SignsTokens() {
		cfg.SigningKeySecret = getenv(EnvSigningKeySecret)
		required = append(required, struct{ name, value string }{EnvSigningKeySecret, cfg.SigningKeySecret})
	}
	var missing, problems []string
	for _, r := range required {
		if strings.TrimSpace(r.value) == "" {
			missing = append(missing, r.name)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, "missing environment variables: "+strings.Join(missing, ", "))
	}
	var err error
	if cfg.StoreTimeout, err = dynamostore.ParseTimeout(getenv(EnvStoreTimeout)); err != nil {
		problems = append(problems, EnvStoreTimeout+": "+err.Error())
	}
	if cfg.SigningAlgorithm, err = token.ParseAlgorithm(getenv(EnvSigningAlg)); err != nil {
		problems = append(problems, EnvSigningAlg+": "+err.Error())
	}
	if fn.SignsTokens() {
		inline, err := token.ParseInlineRevocation(getenv(EnvInlineRevocation))
		if err != nil {
			problems = append(problems, EnvInlineRevocation+": "+err.Error())
		}
		cfg.NoInlineRevocation = !inline
		if cfg.StatusListTTL, err = account.ParseStatusTTL(getenv(EnvStatusListTTL)); err != nil {
			problems = append(problems, EnvStatusListTTL+": "+err.Error())
		}
	}
	if cfg.Issuer != "" {
		if err := account.CheckIssuer(cfg.Issuer); err != nil {
			problems = append(problems, EnvIssuer+": "+err.Error())
		}
	}
	if cfg.Usage, err = account.UsageOptionsFromEnv(getenv); err != nil {
		problems = append(problems, err.Error())
	}
	if cfg.TokenCache, err = token.CacheOptionsFromEnv(getenv); err != nil {
		problems = append(problems, err.Error())
	}
	if cfg.SuccessLogEvery, err = logsample.ParseEvery(getenv(logsample.EnvEvery)); err != nil {
		problems = append(problems, err.Error())
	} else if fn.Audits() && cfg.SuccessLogEvery != 1 {
		// Its lines are the audit trail: a sampled one would be a request
		// nobody could account for.
		problems = append(problems, logsample.EnvEvery+": the verify function logs every request (it has no access log); leave it unset or 1")
	}
	if cfg.OriginSecret = getenv(EnvOriginSecret); cfg.OriginSecret != "" && len(cfg.OriginSecret) < MinOriginSecretLength {
		// A short one could be guessed; its value is not repeated here.
		problems = append(problems, fmt.Sprintf("%s: at least %d characters", EnvOriginSecret, MinOriginSecretLength))
	}
	if len(problems) > 0 {
		return Config{}, errors.New(strings.Join(problems, "; "))
	}
	return cfg, nil
}

// MinOriginSecretLength is the shortest ORIGIN_SECRET taken: the template
// generates 48 random letters and digits.
const MinOriginSecretLength = 32
