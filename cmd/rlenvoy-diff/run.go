package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/redis/rueidis"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// runOpts are the inputs of a differential run.
type runOpts struct {
	envoyAddr, oursAddr     string
	envoyRedis, oursRedis   string
	configDir               string
	seed                    uint64
	sequences, maxRequests  int
	tolerance               time.Duration
	show                    int
	diffsFile               string
	callTimeout, readyAfter time.Duration
	// guard: a request is not sent this close to the end of a second, so
	// that both services count it in the same fixed windows.
	guard time.Duration
	// trace: sequences whose every request is printed with both answers.
	trace map[int]bool
}

// target is one service under comparison.
type target struct {
	name  string
	conn  *grpc.ClientConn
	rls   rlsv3.RateLimitServiceClient
	redis rueidis.Client // its counters' database, emptied between sequences (nil: not emptied)
}

func dialTarget(name, addr, redisURL string) (*target, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", name, addr, err)
	}
	t := &target{name: name, conn: conn, rls: rlsv3.NewRateLimitServiceClient(conn)}
	if redisURL != "" {
		co, err := rueidis.ParseURL(redisURL)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s's redis %q: %w", name, redisURL, err)
		}
		co.DisableCache, co.ForceSingleClient = true, true
		if t.redis, err = rueidis.NewClient(co); err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s's redis %q: %w", name, redisURL, err)
		}
	}
	return t, nil
}

func (t *target) close() {
	t.conn.Close()
	if t.redis != nil {
		t.redis.Close()
	}
}

// flush empties the target's counters (FLUSHDB of its database only).
func (t *target) flush(ctx context.Context) error {
	if t.redis == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := t.redis.Do(ctx, t.redis.B().Flushdb().Build()).Error(); err != nil {
		return fmt.Errorf("%s's redis: FLUSHDB: %w", t.name, err)
	}
	return nil
}

// ask sends req and reduces the answer.
func (t *target) ask(ctx context.Context, req Request, timeout time.Duration) Answer {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := t.rls.ShouldRateLimit(ctx, toProto(req))
	if err != nil {
		st := status.Convert(err)
		return Answer{Err: st.Code().String() + ": " + st.Message()}
	}
	a := Answer{Code: resp.GetOverallCode().String()}
	for _, s := range resp.GetStatuses() {
		st := Status{Code: s.GetCode().String(), Remaining: s.GetLimitRemaining(), Reset: s.GetDurationUntilReset().AsDuration()}
		if l := s.GetCurrentLimit(); l != nil {
			st.HasLimit, st.RequestsPerUnit, st.Unit = true, l.GetRequestsPerUnit(), l.GetUnit().String()
		}
		a.Statuses = append(a.Statuses, st)
	}
	return a
}

func toProto(req Request) *rlsv3.RateLimitRequest {
	p := &rlsv3.RateLimitRequest{Domain: req.Domain, HitsAddend: req.HitsAddend}
	for _, d := range req.Descriptors {
		pd := &ratelimitv3.RateLimitDescriptor{}
		for _, e := range d.Entries {
			pd.Entries = append(pd.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: e.Key, Value: e.Value})
		}
		if d.HitsAddend != nil {
			pd.HitsAddend = wrapperspb.UInt64(uint64(*d.HitsAddend))
		}
		if d.Limit != nil {
			pd.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: d.Limit.RequestsPerUnit,
				Unit: typev3.RateLimitUnit(typev3.RateLimitUnit_value[d.Limit.Unit])}
		}
		p.Descriptors = append(p.Descriptors, pd)
	}
	return p
}

// waitReady waits until both services answer every probe with a limit:
// they have loaded the configuration (rlapi learns definitions applied
// after it started within a second or so).
func waitReady(ctx context.Context, cfg *Config, ts []*target, o runOpts) error {
	deadline := time.Now().Add(o.readyAfter)
	for _, t := range ts {
		for _, req := range cfg.probes() {
			for {
				a := t.ask(ctx, req, o.callTimeout)
				if a.Err == "" && len(a.Statuses) == 1 && a.Statuses[0].HasLimit {
					break
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					return fmt.Errorf("%s has not loaded domain %s after %s: %s answers %+v", t.name, req.Domain, o.readyAfter, req, a)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	return nil
}

func (a Answer) String() string {
	if a.Err != "" {
		return a.Err
	}
	parts := make([]string, len(a.Statuses))
	for i, s := range a.Statuses {
		parts[i] = "[" + s.String() + "]"
	}
	return a.Code + " " + strings.Join(parts, " ")
}

// tally is a run's figures.
type tally struct {
	requests, descriptors, sequences int
	// straddled and refused count the sequences cut short: at a second's
	// end, and after a documented refusal.
	straddled, refused int
	diffs              []Difference
	reqs               map[[2]int]Request
}

// run drives both services with the seeded sequences and prints the
// summary to w; it reports whether a difference outside the allowlist
// was found.
func run(ctx context.Context, o runOpts, w io.Writer) (bool, error) {
	cfg, err := loadConfig(o.configDir)
	if err != nil {
		return false, err
	}
	envoy, err := dialTarget("envoy", o.envoyAddr, o.envoyRedis)
	if err != nil {
		return false, err
	}
	defer envoy.close()
	ours, err := dialTarget("rlapi", o.oursAddr, o.oursRedis)
	if err != nil {
		return false, err
	}
	defer ours.close()
	if err := waitReady(ctx, cfg, []*target{envoy, ours}, o); err != nil {
		return false, err
	}
	var dump *json.Encoder
	if o.diffsFile != "" {
		f, err := os.Create(o.diffsFile)
		if err != nil {
			return false, err
		}
		defer f.Close()
		dump = json.NewEncoder(f)
	}
	gen := &Generator{Seed: o.seed, Cfg: cfg, MaxRequests: o.maxRequests}
	cl := newClassifier(cfg)
	t := &tally{reqs: map[[2]int]Request{}}
	start := time.Now()
	for seq := range o.sequences {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		// Each sequence starts on empty counters, so that a difference
		// does not carry over into the next one.
		for _, tg := range []*target{envoy, ours} {
			if err := tg.flush(ctx); err != nil {
				return false, err
			}
		}
		t.sequences++
		for _, req := range gen.Sequence(seq) {
			waitGuard(o.guard)
			sent := time.Now()
			var ea, oa Answer
			var wg sync.WaitGroup
			wg.Go(func() { ea = envoy.ask(ctx, req, o.callTimeout) })
			oa = ours.ask(ctx, req, o.callTimeout)
			wg.Wait()
			if time.Now().Unix() != sent.Unix() {
				// The pair straddled a second: the two services may have
				// counted it in different windows. The rest of the
				// sequence is not comparable.
				t.straddled++
				break
			}
			t.requests++
			t.descriptors += len(req.Descriptors)
			diffs := compare(req, ea, oa, o.tolerance)
			if o.trace[seq] {
				fmt.Fprintf(w, "trace %d.%d %s\n  envoy %s\n  rlapi %s\n", seq, req.Index, req, ea, oa)
			}
			allow(cfg, req, ea, oa, diffs)
			cl.classify(req, ea, diffs)
			if len(diffs) == 0 {
				continue
			}
			t.diffs = append(t.diffs, diffs...)
			t.reqs[[2]int{req.Seq, req.Index}] = req
			if dump != nil {
				if err := dump.Encode(map[string]any{"request": req.String(), "envoy": ea, "ours": oa, "differences": diffs}); err != nil {
					return false, err
				}
			}
			if slices.ContainsFunc(diffs, func(d Difference) bool { return d.Allowed != nil && d.Allowed.Refusal }) {
				// A documented refusal: from here on the two services
				// have counted differently.
				t.refused++
				break
			}
		}
	}
	return t.print(w, o, time.Since(start)), nil
}

// waitGuard sleeps past the end of the current second when less than
// guard of it is left.
func waitGuard(guard time.Duration) {
	now := time.Now()
	left := now.Truncate(time.Second).Add(time.Second).Sub(now)
	if left < guard {
		time.Sleep(left + 2*time.Millisecond)
	}
}

// print writes the summary and reports whether a difference outside the
// allowlist was found.
func (t *tally) print(w io.Writer, o runOpts, took time.Duration) bool {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "rlenvoy-diff: seed %d, %d sequences of at most %d requests, host %s (%d cores), %s, took %s\n",
		o.seed, t.sequences, o.maxRequests, host, runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339), took.Round(time.Millisecond))
	fmt.Fprintf(w, "requests %d, descriptors compared %d; sequences cut short at a second's end %d, after a documented refusal %d\n",
		t.requests, t.descriptors, t.straddled, t.refused)
	byKind := map[string][2]int{}
	byCause := map[string]map[string]int{}
	byAllow := map[*Allowance]int{}
	failed := 0
	reqsWith := map[[2]int]bool{}
	for _, d := range t.diffs {
		n := byKind[d.Kind]
		if d.Allowed != nil {
			n[1]++
			byAllow[d.Allowed]++
		} else {
			n[0]++
			failed++
			reqsWith[[2]int{d.Seq, d.Index}] = true
			if byCause[d.Cause] == nil {
				byCause[d.Cause] = map[string]int{}
			}
			byCause[d.Cause][d.Kind]++
		}
		byKind[d.Kind] = n
	}
	fmt.Fprintf(w, "differences %d: %d outside the allowlist (in %d requests), %d allowed\n", len(t.diffs), failed, len(reqsWith), len(t.diffs)-failed)
	if len(t.diffs) > 0 {
		fmt.Fprintf(w, "\n| kind | outside the allowlist | allowed |\n| --- | ---: | ---: |\n")
		for _, k := range kinds {
			if n, ok := byKind[k]; ok {
				fmt.Fprintf(w, "| %s | %d | %d |\n", k, n[0], n[1])
			}
		}
	}
	if failed > 0 {
		fmt.Fprintf(w, "\nOutside the allowlist, by likely cause:\n\n| cause | %s | all |\n| --- |%s ---: |\n", strings.Join(kinds, " | "), strings.Repeat(" ---: |", len(kinds)))
		for _, c := range causes {
			m := byCause[c]
			if m == nil {
				continue
			}
			all := 0
			row := make([]string, len(kinds))
			for i, k := range kinds {
				row[i] = fmt.Sprint(m[k])
				all += m[k]
			}
			fmt.Fprintf(w, "| %s | %s | %d |\n", c, strings.Join(row, " | "), all)
		}
	}
	if failed > 0 {
		// A difference changes what the two services count from then
		// on, so later ones in its sequence often follow from it: the
		// first of each sequence is the one to fix first.
		first := map[int]string{}
		for _, d := range t.diffs {
			if _, ok := first[d.Seq]; !ok && d.Allowed == nil {
				first[d.Seq] = d.Cause
			}
		}
		n := map[string]int{}
		for _, c := range first {
			n[c]++
		}
		fmt.Fprintf(w, "\nSequences with a difference outside the allowlist: %d of %d; by the likely cause of their first:\n\n| cause | sequences |\n| --- | ---: |\n", len(first), t.sequences)
		for _, c := range causes {
			if n[c] > 0 {
				fmt.Fprintf(w, "| %s | %d |\n", c, n[c])
			}
		}
	}
	if len(byAllow) > 0 {
		fmt.Fprintf(w, "\nAllowed (documented in docs/envoy.md):\n")
		for _, a := range allowlist {
			if n := byAllow[a]; n > 0 {
				fmt.Fprintf(w, "  %d  %s (%s)\n", n, a.Name, a.Section)
			}
		}
	}
	if failed > 0 && o.show > 0 {
		fmt.Fprintf(w, "\nFirst %d differences outside the allowlist (sequence.request, descriptor):\n", min(o.show, failed))
		shown := 0
		for _, d := range t.diffs {
			if d.Allowed != nil {
				continue
			}
			if shown++; shown > o.show {
				break
			}
			req := t.reqs[[2]int{d.Seq, d.Index}]
			at := "request"
			if d.Descriptor >= 0 {
				at = fmt.Sprintf("descriptor %d [%s]", d.Descriptor, req.Descriptors[d.Descriptor])
			}
			fmt.Fprintf(w, "  %d.%d %s: %s envoy %s, rlapi %s (%s)\n      %s\n", d.Seq, d.Index, at, d.Kind, d.Envoy, d.Ours, d.Cause, req)
		}
	}
	return failed > 0
}
