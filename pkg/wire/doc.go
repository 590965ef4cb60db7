// Package wire holds the JSON envelopes of rlapi's HTTP API: the request
// and answer bodies that are not already types of pkg/ratelimit. rlapi
// encodes (and decodes) these types and pkg/client re-exports them under
// the same names by type alias, so the server and the SDK cannot drift
// apart tag by tag; docs/api.md and the OpenAPI document (docs/openapi.yaml)
// are the contract they follow.
//
// The package holds types and their small accessors only, no I/O, and
// imports only the standard library and pkg/ratelimit, so that both sides
// can import it without linking the other.
package wire
