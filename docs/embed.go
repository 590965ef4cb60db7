// Package docs carries the API's machine-readable contract into the binary.
package docs

import _ "embed"

// OpenAPIYAML is openapi.yaml: the OpenAPI 3.0 document of rlapi's HTTP API,
// served as JSON at GET /api/openapi.json and checked against the real
// server by internal/apitest's contract tests.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte
