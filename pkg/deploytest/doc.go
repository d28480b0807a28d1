// Package deploytest holds the tests that tie the deployment to the code:
// template.yaml's routes, table and least-privilege policies against
// httpapi, dynamostore and what each function actually calls; cfn-lint; and
// the replay of every sample event in events/ through the handler each
// function passes to lambda.Start. It has no code of its own.
package deploytest
