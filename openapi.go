// Package latchkey holds what belongs to the repository as a whole: the
// OpenAPI description of the API.
package latchkey

import _ "embed"

// OpenAPI is openapi.yaml, the single description of the HTTP API (OpenAPI
// 3.1). The HTTP tests validate every response against it, so it cannot
// drift from the handlers.
//
//go:embed openapi.yaml
var OpenAPI []byte
