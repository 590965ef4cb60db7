package enforce_test

import (
	"context"
	"testing"

	"github.com/rlctl/rlctl/internal/enforcefixture"
	"github.com/rlctl/rlctl/pkg/enforce"
)

type clock = enforcefixture.Clock

// fixture is the shared fixture: one database and one Enforcer over
// PostgreSQL on a clock that starts at the beginning of a day (so minute,
// hour and day windows start together).
type fixture struct{ *enforcefixture.Fixture }

func newFixture(t *testing.T, opts enforce.Options) *fixture {
	t.Helper()
	return &fixture{enforcefixture.New(t, opts)}
}

func ptr[T any](v T) *T { return &v }

// counter reads the stored count of every counter whose key contains part.
func (f *fixture) counter(part string) int64 {
	f.T.Helper()
	var n int64
	err := f.Store.Pool().QueryRow(context.Background(), `select coalesce(sum(count), 0) from rl_counters where key like '%' || $1 || '%'`, part).Scan(&n)
	if err != nil {
		f.T.Fatal(err)
	}
	return n
}

var (
	callerGroup = enforcefixture.CallerGroup
	target      = enforcefixture.Target
	user        = enforcefixture.User
	agent       = enforcefixture.Agent
)
