package api_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// seedMemberships stores n memberships (benchState's) with one COPY,
// bypassing the API: the benchmarks below measure what happens after.
func seedMemberships(tb testing.TB, st *store.Store, n int) []ratelimit.Membership {
	tb.Helper()
	ms := benchState(0, n).Memberships
	now := time.Now()
	for i := range ms {
		ms[i].CreatedAt, ms[i].UpdatedAt, ms[i].Version = &now, &now, 1
	}
	ctx := context.Background()
	if err := st.InTx(ctx, func(q *store.Queries) error { return q.InsertMemberships(ctx, ms) }); err != nil {
		tb.Fatal(err)
	}
	return ms
}

// BenchmarkPropagation measures how long a change takes to reach another
// replica: from rlapi acknowledging a quarantine (or its release) of one
// caller to a second Enforcer, on its own pool, deciding by it. Changes are
// a second apart, so each one meets a quiet replica (no reload pause
// pending). ms/change is the mean, max-ms the slowest of the run.
//
//	go test ./internal/api -run '^$' -bench BenchmarkPropagation -benchtime 20x
func BenchmarkPropagation(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		b.Run(fmt.Sprintf("memberships=%d", n), func(b *testing.B) {
			env := apitest.Start(b, api.Config{})
			c, err := client.New(env.URL, client.Options{Token: env.AdminToken, Retries: -1})
			if err != nil {
				b.Fatal(err)
			}
			ms := seedMemberships(b, env.Store, n)
			ctx := context.Background()
			replica, err := postgres.Open(ctx, env.Store.Pool().Config().ConnString(),
				enforce.Options{CacheTTL: time.Hour, SweepInterval: -1, MaxConns: 4})
			if err != nil {
				b.Fatal(err)
			}
			defer replica.Close()
			// A user with no limits: Peek answers from memory alone.
			subject := ms[1]
			call := enforce.Call{Username: subject.Subject, TargetType: "mcp_server", TargetName: "unlimited"}
			// Let the replica's start settle: New loads everything, and so
			// does its listener once connected, each followed by a pause.
			time.Sleep(3 * time.Second)
			var total, worst time.Duration
			changes := 0
			quarantined := false
			for b.Loop() {
				b.StopTimer()
				time.Sleep(time.Second)
				b.StartTimer()
				if !quarantined {
					_, err = c.Quarantine(ctx, subject.SubjectType, subject.Subject, client.QuarantineRequest{Reason: "bench"}, client.WriteOptions{})
				} else {
					_, _, err = c.Unquarantine(ctx, subject.SubjectType, subject.Subject, client.WriteOptions{})
				}
				if err != nil {
					b.Fatal(err)
				}
				quarantined = !quarantined
				acked := time.Now()
				for {
					d, _ := replica.Peek(ctx, call)
					if (d.Reason == enforce.ReasonQuarantined) == quarantined {
						break
					}
					if time.Since(acked) > 30*time.Second {
						b.Fatalf("change not enforced 30 s after the API answered")
					}
					time.Sleep(200 * time.Microsecond)
				}
				took := time.Since(acked)
				total += took
				worst = max(worst, took)
				changes++
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(changes), "ms/change")
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
		})
	}
}

// BenchmarkReadersDuringApply measures what readers see while an apply
// that quarantines 2,000 callers (and releases the 2,000 of the previous
// iteration) runs over 100,000 memberships: GETs of one membership, of a
// caller's status and of the admins, one after another, for as long as the
// apply takes. reader-max-ms is the slowest read, reader-p50-ms the median,
// apply-s the apply's own time.
//
//	go test ./internal/api -run '^$' -bench BenchmarkReadersDuringApply -benchtime 5x
func BenchmarkReadersDuringApply(b *testing.B) {
	const n, quarantined = 100_000, 2_000
	env := apitest.Start(b, api.Config{})
	c, err := client.New(env.URL, client.Options{Token: env.AdminToken, Retries: -1})
	if err != nil {
		b.Fatal(err)
	}
	seeded := seedMemberships(b, env.Store, n)
	ctx := context.Background()
	var (
		reads     []time.Duration
		applyTime time.Duration
		iter      int
	)
	for b.Loop() {
		b.StopTimer()
		state := client.State{Memberships: make([]ratelimit.Membership, len(seeded))}
		// Callers only (quarantine-callers): every third seeded row is a
		// client, the rest users; both are callers.
		lo := (iter * quarantined) % (n - quarantined)
		for i, m := range seeded {
			m.CreatedAt, m.UpdatedAt, m.Version = nil, nil, 0
			if i >= lo && i < lo+quarantined {
				m.Groups = append(slices.Clone(m.Groups), ratelimit.GroupQuarantineCallers)
			}
			state.Memberships[i] = m
		}
		iter++
		b.StartTimer()
		stop := make(chan struct{})
		var applyErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			start := time.Now()
			_, applyErr = c.Apply(ctx, state, client.ApplyOptions{Quarantine: true})
			applyTime += time.Since(start)
			close(stop)
		})
		var mu sync.Mutex
		probe, caller := seeded[lo+1], seeded[lo+2]
		for _, get := range []func() error{
			func() error { _, err := c.GetMembership(ctx, probe.Key()); return err },
			func() error { _, err := c.Status(ctx, client.StatusQuery{Username: caller.Subject}); return err },
			func() error { _, err := c.ListAdmins(ctx); return err },
		} {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					t := time.Now()
					if err := get(); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					reads = append(reads, time.Since(t))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if applyErr != nil {
			b.Fatal(applyErr)
		}
	}
	slices.Sort(reads)
	if len(reads) == 0 {
		b.Fatal("no reads completed")
	}
	b.ReportMetric(float64(reads[len(reads)-1].Microseconds())/1000, "reader-max-ms")
	b.ReportMetric(float64(reads[len(reads)/2].Microseconds())/1000, "reader-p50-ms")
	b.ReportMetric(float64(len(reads))/float64(iter), "reads/apply")
	b.ReportMetric(applyTime.Seconds()/float64(iter), "apply-s")
}
