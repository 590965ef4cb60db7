package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// A simulation decides every call of a trace with enforce.Enforcer, the
// code gateways run, over the in-memory counter store, with a clock that
// reads the trace's timestamps: what a gateway would have decided had
// it enforced these definitions when the calls were made.

// Options of the Enforcer a simulation drives: no reload, no sweeper
// (the store sweeps itself as it grows), nothing that waits on real time
// but the round trips to the in-memory store.
const (
	// cacheTTL keeps the one snapshot trusted for the whole trace (the
	// Enforcer distrusts a snapshot older than three TTLs by its clock):
	// three are 270 years, more than a trace can span (1970 to 2199),
	// less than a time.Duration holds.
	cacheTTL = 90 * 365 * day
	// backendTimeout bounds a round trip to the in-memory store, which
	// answers in microseconds: only a stalled process meets it.
	backendTimeout = time.Minute
)

// clock is the simulated time, read by every Enforcer of a simulation.
type clock struct{ ns atomic.Int64 }

func (c *clock) set(t time.Time) { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time  { return time.Unix(0, c.ns.Load()) }

// staticSource serves one state and never changes: the definitions of a
// simulation.
type staticSource struct{ st enforce.State }

func (s staticSource) Load(ctx context.Context) (enforce.State, error) { return s.st, ctx.Err() }

func (s staticSource) LoadTables(ctx context.Context, req enforce.TablesRequest) (enforce.Rows, error) {
	return enforce.SelectRows(s.st, req), ctx.Err()
}

// Capabilities: a simulation writes no lockouts, and the Enforcer counts
// quarantines from its snapshot.
func (s staticSource) Capabilities() enforce.SourceCapabilities { return enforce.SourceCapabilities{} }

func (s staticSource) LockOut(context.Context, enforce.Lockout) (bool, error) {
	return false, fmt.Errorf("simulate: write a lockout: %w", enforce.ErrNotImplemented)
}

func (s staticSource) CountQuarantined(context.Context, time.Time) (int64, int64, error) {
	return 0, 0, fmt.Errorf("simulate: count quarantines: %w", enforce.ErrNotImplemented)
}

// Watch reports the stream ready and waits: nothing ever changes.
func (s staticSource) Watch(ctx context.Context, ready func(), _ func(enforce.Change)) error {
	ready()
	<-ctx.Done()
	return ctx.Err()
}

// runSpec is one replay of the trace: the definitions as the file has
// them, or all of them switched to one algorithm.
type runSpec struct {
	name  string
	state enforce.State
	defs  []ratelimit.Definition // the rate definitions, in file order, as this run counts them
}

// rateDefinition reports whether d limits calls (not a quarantine
// sentinel, not disabled).
func rateDefinition(d ratelimit.Definition) bool {
	return d.Axis != ratelimit.AxisQuarantine && d.Enabled
}

// specs builds the runs: one per algorithm in algos, or one of the file as
// it is when algos is empty. Switching a definition to a window drops its
// bursts (windows have none); to the token bucket keeps them (each
// defaults to its limit).
func specs(st enforce.State, algos []string) []runSpec {
	if len(algos) == 0 {
		spec := runSpec{state: st}
		seen := map[string]bool{}
		for _, d := range st.Definitions {
			if rateDefinition(d) {
				spec.defs = append(spec.defs, d)
				seen[d.AlgorithmOrDefault()] = true
			}
		}
		spec.name = "mixed"
		switch len(seen) {
		case 0:
			spec.name = ratelimit.AlgorithmFixedWindow
		case 1:
			spec.name = spec.defs[0].AlgorithmOrDefault()
		}
		return []runSpec{spec}
	}
	out := make([]runSpec, 0, len(algos))
	for _, a := range algos {
		spec := runSpec{name: a, state: st}
		spec.state.Definitions = make([]ratelimit.Definition, len(st.Definitions))
		for i, d := range st.Definitions {
			if d.Axis != ratelimit.AxisQuarantine {
				d.Algorithm = a
				if a != ratelimit.AlgorithmTokenBucket {
					d.Burst, d.UserBurst, d.AgentBurst = nil, nil, nil
				}
			}
			spec.state.Definitions[i] = d
			if rateDefinition(d) {
				spec.defs = append(spec.defs, d)
			}
		}
		out = append(out, spec)
	}
	return out
}

// tally is what one definition did in one run.
type tally struct {
	calls, allowed, denied int64
	firstDenial            time.Time
}

func (t *tally) add(at time.Time, allowed bool) {
	t.calls++
	if allowed {
		t.allowed++
		return
	}
	t.denied++
	if t.firstDenial.IsZero() {
		t.firstDenial = at
	}
}

// run is one replay in progress, on a goroutine of its own: its own
// Enforcer, clock and histogram (every run sees the same timestamps, so
// their buckets widen alike).
type run struct {
	spec  runSpec
	clock clock
	enf   *enforce.Enforcer
	hist  *histogram
	total tally
	defs  map[string]*tally
}

// replay is a simulation in progress: every run sees every row.
type replay struct {
	runs  []*run
	rows  int64
	first time.Time
	last  time.Time
}

// errNoCalls: the trace holds no row (a bad input, as a bad row is).
var errNoCalls = errors.New("the trace has no calls")

// batchRows is how many rows the reader hands the runs at a time.
const batchRows = 512

// start builds an Enforcer per run, its clock at the trace's first call.
func start(ctx context.Context, specs []runSpec, first time.Time, bucket time.Duration) (*replay, error) {
	r := &replay{first: first}
	for _, s := range specs {
		run := &run{spec: s, hist: newHistogram(1, bucket), defs: map[string]*tally{}}
		run.clock.set(first)
		enf, err := enforce.New(ctx, enforce.Options{
			// No cap on the counters: evicting one would count its key from
			// zero and make the replay's answer inexact; the store still
			// drops the windows the simulated clock has left behind.
			Counters: memory.New(memory.Options{MaxKeys: math.MaxInt}), Source: staticSource{st: s.state}, Now: run.clock.now,
			CacheTTL: cacheTTL, SweepInterval: -1, BackendTimeout: backendTimeout, Workers: 1,
			Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			r.close()
			return nil, fmt.Errorf("start the enforcer for %s: %w", s.name, err)
		}
		run.enf = enf
		for _, d := range s.defs {
			run.defs[d.ID] = &tally{}
		}
		r.runs = append(r.runs, run)
	}
	return r, nil
}

func (r *replay) close() {
	for _, run := range r.runs {
		run.enf.Close()
	}
}

// decide replays one row.
func (run *run) decide(ctx context.Context, row Row) error {
	run.clock.set(row.Time)
	d, err := run.enf.Check(ctx, row.Call)
	if err != nil {
		// Only a failure of the in-memory store gets here: the decision
		// is the fail policy's, not the algorithm's.
		return fmt.Errorf("line %d (%s): the enforcer could not decide: %w", row.Line, run.spec.name, err)
	}
	run.total.add(row.Time, d.Allowed)
	run.hist.count(0, run.hist.index(row.Time), d.Allowed)
	// Each definition behind a gate of the call: denied when it had no
	// room (a shadow one: when it would have denied).
	var seen []string
	for _, g := range d.Gates {
		t := run.defs[g.DefinitionID]
		if t == nil || slices.Contains(seen, g.DefinitionID) {
			continue
		}
		seen = append(seen, g.DefinitionID)
		refused := slices.ContainsFunc(d.Denied, func(x enforce.Gate) bool { return x.DefinitionID == g.DefinitionID }) ||
			slices.ContainsFunc(d.Shadow, func(x enforce.Gate) bool { return x.DefinitionID == g.DefinitionID })
		t.add(row.Time, !refused)
	}
	return nil
}

// replayTrace reads every row of tr and decides it in every run: the
// reader hands batches of rows to a goroutine per run, through channels
// of a few batches, so memory stays bounded and the runs use the cores.
func replayTrace(ctx context.Context, tr *traceReader, specs []runSpec, bucket time.Duration) (*replay, error) {
	row, err := tr.Next()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", tr.name, errNoCalls)
	}
	if err != nil {
		return nil, err
	}
	r, err := start(ctx, specs, row.Time, bucket)
	if err != nil {
		return nil, err
	}
	defer r.close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	feeds := make([]chan []Row, len(r.runs))
	for i, run := range r.runs {
		feed := make(chan []Row, 4)
		feeds[i] = feed
		wg.Go(func() {
			for batch := range feed {
				for _, row := range batch {
					if ctx.Err() != nil {
						break
					}
					if err := run.decide(ctx, row); err != nil {
						cancel(err)
					}
				}
			}
		})
	}
	send := func(batch []Row) {
		for _, feed := range feeds {
			select {
			case feed <- batch:
			case <-ctx.Done():
			}
		}
	}
	var readErr error
	batch := make([]Row, 0, batchRows)
	for ctx.Err() == nil {
		r.rows++
		r.last = row.Time
		if batch = append(batch, row); len(batch) == batchRows {
			send(batch)
			batch = make([]Row, 0, batchRows) // the runs still read the last one
		}
		if row, err = tr.Next(); err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
			}
			break
		}
	}
	send(batch)
	for _, feed := range feeds {
		close(feed)
	}
	wg.Wait()
	if readErr != nil {
		return nil, readErr
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return r, nil
}
