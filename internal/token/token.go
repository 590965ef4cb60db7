// Package token makes and recognizes API tokens. A token is 256 random bits
// behind a fixed prefix (so secret scanners and humans can tell what it is);
// only its SHA-256 is ever stored.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Prefix marks rlctl API tokens.
const Prefix = "rlt_"

// New returns a fresh token and its SHA-256.
func New() (secret string, sum []byte) {
	b := make([]byte, 32)
	// crypto/rand.Read never fails on supported platforms (it panics instead).
	_, _ = rand.Read(b)
	secret = Prefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, Hash(secret)
}

// Hash returns the SHA-256 of a token as presented.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	return h[:]
}
