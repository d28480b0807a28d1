// Command samlocal prepares DynamoDB Local and moto for
// `sam local start-api --env-vars local/env.json`, as that file describes
// them, so that the functions SAM runs in Docker find what the template's
// resources give them in AWS:
//
//   - the table, created from tablestore.TableDefinition (the table the
//     template deploys), if it is missing;
//   - the three secrets, each a random string of letters and digits, as
//     GenerateSecretString makes them, if they are missing (existing ones
//     are kept, so a second run changes nothing);
//   - the issuer, http://127.0.0.1:3000 (sam local's address; -issuer), in
//     the table, where the template's IssuerConfig custom resource records
//     the API's URL and every function reads it;
//   - then the auth function's bootstrap, run as its cold start runs it,
//     over the same variables: it publishes the public keys and installs the
//     admin key, which the template's Bootstrap custom resource does at
//     deploy time. Without it, the first request to the organizations or
//     users function would find neither.
//
// It prints the admin key and the command that starts the API.
// `make sam-local` runs it with the two services on the ports local/env.json
// names (scripts/sam-local.sh); pkg/deploytest runs it against the test
// services and then the built functions with exactly those variables.
//
//	samlocal [-env local/env.json] [-issuer URL] [-dynamodb URL] [-secretsmanager URL]
//	samlocal -ports                  print the two ports env.json names
//
// env.json points the containers at host.docker.internal; this process,
// on the host, reaches the same ports on 127.0.0.1 unless -dynamodb and
// -secretsmanager say otherwise.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"latchkey/pkg/dynamostore"
	"latchkey/pkg/lambdaapp"
)

// Region is the region of the local services: moto keeps secrets per
// region, so the functions must ask in the one the secrets were made in
// (sam local start-api --region).
const Region = "us-east-1"

// DockerHost is the name by which a container reaches the host.
const DockerHost = "host.docker.internal"

func main() {
	envFile := flag.String("env", "local/env.json", "the env-vars file of sam local start-api")
	dynamoURL := flag.String("dynamodb", "", "DynamoDB Local as this process reaches it (default: env.json's, on 127.0.0.1)")
	smURL := flag.String("secretsmanager", "", "moto as this process reaches it (default: env.json's, on 127.0.0.1)")
	ports := flag.Bool("ports", false, "print the ports of DynamoDB Local and moto that env.json names, and exit")
	issuer := flag.String("issuer", "http://127.0.0.1:3000", "the issuer to record: where sam local start-api serves the API")
	flag.Parse()
	env, err := readEnv(*envFile)
	if err == nil && *ports {
		_, err = fmt.Println(env.port(lambdaapp.EnvDynamoDBEndpoint), env.port(lambdaapp.EnvSecretsManagerEndpoint))
	} else if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		err = run(ctx, env, *issuer, *dynamoURL, *smURL, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "samlocal:", err)
		os.Exit(1)
	}
}

// localEnv is local/env.json: each function's variables, by the logical id
// of the function in template.yaml.
type localEnv struct {
	path      string
	functions map[string]map[string]string
}

// LogicalID is the template's resource name of fn: AuthFunction, ...
func LogicalID(fn lambdaapp.Function) string {
	s := string(fn)
	return strings.ToUpper(s[:1]) + s[1:] + "Function"
}

// readEnv reads the file and checks what this command relies on: an entry
// for every function, and the values all functions share (table, cursor
// key, endpoints) the same in each.
func readEnv(path string) (localEnv, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return localEnv{}, err
	}
	e := localEnv{path: path}
	if err := json.Unmarshal(b, &e.functions); err != nil {
		return localEnv{}, fmt.Errorf("%s: %w", path, err)
	}
	shared := []string{lambdaapp.EnvTableName, lambdaapp.EnvCursorKeySecret, lambdaapp.EnvDynamoDBEndpoint, lambdaapp.EnvSecretsManagerEndpoint}
	auth := e.functions[LogicalID(lambdaapp.Auth)]
	for _, fn := range lambdaapp.Functions() {
		vars, ok := e.functions[LogicalID(fn)]
		if !ok {
			return localEnv{}, fmt.Errorf("%s has no %s", path, LogicalID(fn))
		}
		for _, k := range shared {
			if vars[k] == "" || vars[k] != auth[k] {
				return localEnv{}, fmt.Errorf("%s: %s of %s is %q; every function needs the same, non-empty value", path, k, LogicalID(fn), vars[k])
			}
		}
	}
	for _, k := range []string{lambdaapp.EnvDynamoDBEndpoint, lambdaapp.EnvSecretsManagerEndpoint} {
		u, err := url.Parse(auth[k])
		if err != nil || u.Scheme != "http" || u.Hostname() != DockerHost || u.Port() == "" {
			return localEnv{}, fmt.Errorf("%s: %s is %q, want http://%s:PORT", path, k, auth[k], DockerHost)
		}
	}
	return e, nil
}

// get returns the variable of the auth function, which has them all.
func (e localEnv) get(k string) string { return e.functions[LogicalID(lambdaapp.Auth)][k] }

func (e localEnv) port(k string) string {
	u, _ := url.Parse(e.get(k))
	return u.Port()
}

// onHost is an endpoint of env.json as a process on the host reaches it.
func (e localEnv) onHost(k string) string {
	return "http://127.0.0.1:" + e.port(k)
}

func run(ctx context.Context, env localEnv, issuer, dynamoURL, smURL string, out io.Writer) error {
	if dynamoURL == "" {
		dynamoURL = env.onHost(lambdaapp.EnvDynamoDBEndpoint)
	}
	if smURL == "" {
		smURL = env.onHost(lambdaapp.EnvSecretsManagerEndpoint)
	}
	creds := credentials.NewStaticCredentialsProvider("local", "local", "")
	db := dynamodb.New(dynamodb.Options{Region: Region, BaseEndpoint: aws.String(dynamoURL), Credentials: creds})
	sm := secretsmanager.New(secretsmanager.Options{Region: Region, BaseEndpoint: aws.String(smURL), Credentials: creds})

	table := env.get(lambdaapp.EnvTableName)
	if err := dynamostore.CreateTable(ctx, db, table); err != nil {
		return fmt.Errorf("DynamoDB Local at %s: %w", dynamoURL, err)
	}
	// The issuer, recorded where every function reads it, as the template's
	// IssuerConfig custom resource records the API's URL.
	if err := dynamostore.New(db, table).PutIssuer(ctx, issuer); err != nil {
		return fmt.Errorf("record the issuer: %w", err)
	}
	for _, k := range []string{lambdaapp.EnvSigningKeySecret, lambdaapp.EnvAdminKeySecret, lambdaapp.EnvCursorKeySecret, lambdaapp.EnvProbeKeySecret} {
		if err := ensureSecret(ctx, sm, env.get(k)); err != nil {
			return fmt.Errorf("moto at %s: %w", smURL, err)
		}
	}

	// The auth function's cold start, over env.json's variables, with the
	// endpoints as seen from here and the region and credentials SAM gives a
	// function run without a profile.
	getenv := func(k string) string {
		switch k {
		case lambdaapp.EnvDynamoDBEndpoint:
			return dynamoURL
		case lambdaapp.EnvSecretsManagerEndpoint:
			return smURL
		case "AWS_REGION":
			return Region
		case "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY":
			return "local"
		}
		return env.get(k)
	}
	cfg, deps, err := lambdaapp.FromEnv(lambdaapp.Auth, getenv, slog.New(slog.DiscardHandler))
	if err == nil {
		_, err = lambdaapp.NewSigning(ctx, cfg, deps)
	}
	if err != nil {
		return fmt.Errorf("bootstrap (the auth function's init): %w", err)
	}
	admin, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(env.get(lambdaapp.EnvAdminKeySecret))})
	if err != nil {
		return err
	}

	_, err = fmt.Fprintf(out, `
Ready for sam local start-api (%[1]s):
  DynamoDB Local %[2]s, table %[3]s
  moto           %[4]s, secrets %[5]s
  issuer %[9]s recorded; bootstrap done: public keys published, admin and probe keys installed

Admin API key of this local stack (its value in moto; Authorization: Bearer <key>):

    %[6]s

From the repository root, in another terminal (Docker running):

    sam build
    sam local start-api --env-vars %[1]s --region %[7]s --add-host %[8]s:host-gateway

then, for example:

    curl -s http://127.0.0.1:3000/v1/users -H "Authorization: Bearer %[6]s"

`, env.path, dynamoURL, table, smURL,
		strings.Join(slices.Sorted(slices.Values([]string{env.get(lambdaapp.EnvSigningKeySecret), env.get(lambdaapp.EnvAdminKeySecret), env.get(lambdaapp.EnvCursorKeySecret), env.get(lambdaapp.EnvProbeKeySecret)})), ", "),
		aws.ToString(admin.SecretString), Region, DockerHost, issuer)
	return err
}

// ensureSecret creates the secret name unless it exists, with a random
// value as GenerateSecretString makes one in AWS: 52 letters and digits,
// 256 bits.
func ensureSecret(ctx context.Context, sm *secretsmanager.Client, name string) error {
	value := rand.Text() + rand.Text()
	_, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)})
	var exists *types.ResourceExistsException
	if errors.As(err, &exists) {
		return nil
	}
	return err
}
