// Package deploytest holds the tests that tie the deployment to the code:
// template.yaml's routes, table and least-privilege policies against
// httpapi, dynamostore and what each function actually calls; its
// operational settings (throttling, alarms, log groups, retention, tracing)
// against the facts they must hold; cfn-lint; the replay of every sample
// event in events/ through the handler each function passes to
// lambda.Start; and the built functions run as Lambda and `sam local
// start-api` run them (local/env.json, cmd/samlocal). It has no code of its
// own.
package deploytest
