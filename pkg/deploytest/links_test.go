package deploytest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unlinked names, for each function, what its binary must not link: the
// packages (go list -deps, for the Makefile's target) of the events and
// the work other functions serve, and the symbols (go tool nm) of the
// parts of a linked package it does not use. Each main wires only what
// it serves (issue 20), so that a binary says what it is by what it holds:
// the token signer, the CloudFormation custom resources and the console
// are auth's alone; the authorizer and the publisher hold neither the HTTP API nor
// Secrets Manager.
var unlinked = map[string]struct{ packages, symbols []string }{
	"auth": {
		packages: []string{"latchkey/pkg/authorizer", "latchkey/pkg/publisher", "github.com/aws/aws-sdk-go-v2/service/eventbridge"},
	},
	"organizations": {
		packages: verifyingUnlinked,
		symbols:  signerSymbols,
	},
	"users": {
		packages: verifyingUnlinked,
		symbols:  signerSymbols,
	},
	// Verify, besides the signer, reads no secret: no Secrets Manager
	// client (its package is linked, for types lambdaapp shares; the
	// client is not).
	"verify": {
		packages: verifyingUnlinked,
		symbols: append(slices.Clone(signerSymbols),
			"github.com/aws/aws-sdk-go-v2/service/secretsmanager.NewFromConfig",
			"github.com/aws/aws-sdk-go-v2/service/secretsmanager.(*Client).GetSecretValue",
			"latchkey/pkg/lambdaapp.FromEnv",
			"latchkey/pkg/lambdaapp.(*App).buildSigning"),
	},
	"authorizer": {
		packages: []string{
			"github.com/aws/aws-lambda-go/cfn", "latchkey/pkg/lambdaapp", "latchkey/pkg/lambdaapp/authevents",
			"latchkey/pkg/httpapi", "latchkey/pkg/assembly", "latchkey/pkg/secrets", "latchkey/pkg/publisher",
			"latchkey/pkg/console", "html/template",
			"github.com/aws/aws-sdk-go-v2/service/secretsmanager", "github.com/aws/aws-sdk-go-v2/service/eventbridge",
			"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter",
		},
		symbols: signerSymbols,
	},
	"publisher": {
		packages: []string{
			"github.com/aws/aws-lambda-go/cfn", "latchkey/pkg/lambdaapp", "latchkey/pkg/lambdaapp/authevents",
			"latchkey/pkg/httpapi", "latchkey/pkg/assembly", "latchkey/pkg/secrets", "latchkey/pkg/authorizer",
			"latchkey/pkg/console", "html/template",
			"latchkey/pkg/account", "latchkey/pkg/token", "latchkey/pkg/dynamostore",
			"github.com/aws/aws-sdk-go-v2/service/secretsmanager", "github.com/aws/aws-sdk-go-v2/service/dynamodb",
			"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter",
		},
	},
}

// verifyingUnlinked are the packages the organizations, users and verify
// functions do not link: the custom resources and bootstrap invocations and the
// console (auth's), the authorizer and the publisher.
var verifyingUnlinked = []string{
	"github.com/aws/aws-lambda-go/cfn", "latchkey/pkg/lambdaapp/authevents",
	"latchkey/pkg/console", "html/template",
	"latchkey/pkg/authorizer", "latchkey/pkg/publisher", "github.com/aws/aws-sdk-go-v2/service/eventbridge",
}

// signerSymbols are the token signer and what only a signing function
// runs: the signing keys read from the secret, the seal key of the
// idempotent answers, the RS256 setup, the bootstrap.
var signerSymbols = []string{
	"latchkey/pkg/token.NewSigner",
	"latchkey/pkg/token.(*Signer).Sign",
	"latchkey/pkg/assembly.SealKey",
	"latchkey/pkg/secrets.SigningKey",
	"latchkey/pkg/secrets.EnsureRSASigningKey",
	"latchkey/pkg/account.(*Service).EnsureBootstrapKey",
}

// TestBinary_Links proves that each function's binary links only what it
// serves (unlinked): the packages with go list -deps for the Makefile's
// target (linux/arm64, lambda.norpc), and the symbols with go tool nm of a
// binary built as the Makefile builds it, without -s -w, which would strip
// the symbol table.
func TestBinary_Links(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the six functions")
	}
	env, _ := lambdaBuild(t)
	for fn, not := range unlinked {
		t.Run(fn, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", "./functions/"+fn)
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), env...)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps ./functions/%s: %v", fn, err)
			}
			deps := strings.Fields(string(out))
			for _, p := range not.packages {
				if slices.Contains(deps, p) {
					t.Errorf("%s links %s", fn, p)
				}
			}
			if len(not.symbols) == 0 {
				return
			}
			bin := filepath.Join(t.TempDir(), "bootstrap")
			cmd = exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bin, "./functions/"+fn)
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), env...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build ./functions/%s: %v\n%s", fn, err, b)
			}
			out, err = exec.Command("go", "tool", "nm", bin).Output()
			if err != nil {
				t.Fatalf("go tool nm: %v", err)
			}
			syms := map[string]bool{}
			for l := range strings.Lines(string(out)) {
				if f := strings.Fields(l); len(f) >= 3 {
					syms[f[2]] = true
				}
			}
			if !syms["main.main"] {
				t.Fatalf("go tool nm found no main.main in %s: the symbol table is missing", bin)
			}
			for _, s := range not.symbols {
				if syms[s] {
					t.Errorf("%s links %s", fn, s)
				}
			}
		})
	}
}
