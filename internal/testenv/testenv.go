// Package testenv decides what a test does when a server it needs
// (PostgreSQL, Redis, nginx) is missing: skip with a reason when a
// developer runs go test by hand, fail under make test and in CI.
package testenv

import (
	"os"
	"testing"
)

// ServersRequired reports whether a missing server must fail a test
// instead of skipping it: under make test, which provides every server
// and exports RLCTL_REQUIRE_SERVERS=1, and under CI=true. Either way a
// run that skipped a test for want of a server would say ok having
// tested nothing.
func ServersRequired() bool {
	return os.Getenv("RLCTL_REQUIRE_SERVERS") == "1" || os.Getenv("CI") == "true"
}

// Missing ends a test that cannot run for want of a server: msg says what
// is missing and how to provide it. It fails the test when
// ServersRequired, and skips it otherwise.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if ServersRequired() {
		t.Fatal(msg + " (RLCTL_REQUIRE_SERVERS=1 or CI=true: a test may not skip for a missing server)")
	}
	t.Skip(msg)
}
