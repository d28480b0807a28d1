// Command auth is the Lambda function serving Latchkey's auth routes behind
// the HTTP API, and the console (pkg/console). All wiring is in lambdaapp,
// shared by the three functions; see template.yaml for its environment and
// permissions.
package main

import (
	"latchkey/pkg/console"
	"latchkey/pkg/lambdaapp"
)

func main() { lambdaapp.Main(lambdaapp.Auth, lambdaapp.WithConsole(console.Mount)) }
