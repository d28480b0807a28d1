// Command authorizer is the API Gateway HTTP API Lambda authorizer (payload
// format 2.0, simple responses) that users attach to the routes of their
// own APIs to accept Latchkey access tokens, revocation included. All
// wiring is in lambdaapp, the decisions in pkg/authorizer; see
// template.yaml for its environment and its read-only role, and
// examples/protected-api for a stack that uses it.
package main

import "latchkey/pkg/lambdaapp"

func main() { lambdaapp.MainAuthorizer() }
