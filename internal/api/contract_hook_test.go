package api_test

import (
	"net/http"
	"testing"

	"github.com/rlctl/rlctl/internal/apitest"
)

// contractHTTPClient is the HTTP client the end-to-end tests use: every
// response they see is checked against docs/openapi.yaml, the document
// /api/openapi.json serves.
func contractHTTPClient(t *testing.T) *http.Client {
	t.Helper()
	return &http.Client{Transport: apitest.NewContract(t).Transport(http.DefaultTransport)}
}
