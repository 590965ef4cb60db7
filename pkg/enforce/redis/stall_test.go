package redis_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
)

// TestStalledServerTakesNothingForFailedDecisions runs the suite's stall
// check on a server of the test's own, stopped with SIGSTOP and resumed
// with SIGCONT: the scripts queued behind the stall run when it resumes,
// past their deadline, and refuse, so a decision answered by the fail
// policy consumed nothing.
//
// The suite stalls the server between decisions (none in flight): a
// script the server ran just before it stopped, whose answer could not
// leave, is counted though its caller hears a failure, as a PostgreSQL
// commit whose answer is lost is (docs/design/redis.md).
func TestStalledServerTakesNothingForFailedDecisions(t *testing.T) {
	srv := redistest.Start(t)
	enforcetest.TestStalledStore(t, func(t *testing.T) enforcetest.Stallable {
		s, err := redis.Open(context.Background(), srv.URL, redis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		signal := func(sig syscall.Signal) func() {
			return func() {
				if err := srv.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
		}
		return enforcetest.Stallable{Store: s, Stall: signal(syscall.SIGSTOP), Resume: signal(syscall.SIGCONT)}
	}, enforcetest.Build)
}
