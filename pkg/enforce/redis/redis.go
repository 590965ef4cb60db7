package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
)

// Slack is added to every counter's time to live: a window's key lives
// until its window ends (a sliding window's, one window more; a bucket's,
// until it is full again) plus Slack, so that enforcers whose clocks are
// a little behind still find it.
const Slack = 10 * time.Second

// Store is an enforce.CounterStore on Redis (standalone, found through
// Redis Sentinel, or Cluster). It is safe for concurrent use. Build it
// with Open or New.
type Store struct {
	client  rueidis.Client
	cluster bool
	// masterSet is the master set of a store that finds its server
	// through Redis Sentinel (Open of a redis+sentinel:// URL).
	masterSet string
	prefix    string
	own       bool // Close closes the client

	take, giveBack script

	// rolledBack counts the reservations given back (calls a gate in
	// another slot denied): what the over-refusal window is made of.
	rolledBack atomic.Int64

	log *slog.Logger
	// clock puts deadlines on the servers' clocks (serverDeadline); nil
	// until the first Inspect.
	clock atomic.Pointer[clockAnchor]
	// inspecting serializes Inspect, and guards what it remembers
	// between runs (to log changes once).
	inspecting  sync.Mutex
	clocksApart bool
	clockUnread bool
	// nodes is what the last Inspect read (the metrics export it).
	nodes atomic.Pointer[[]NodeState]
	// restarts counts the node restarts Inspect saw, per node and whether
	// the node came back empty (the metrics export them).
	restarts struct {
		sync.Mutex
		n map[restartKey]int64
	}
	// reg, when set, holds the store's collector (Close unregisters it).
	reg prometheus.Registerer
	col prometheus.Collector
	// stopWatch ends the watch (Open's periodic Inspect, cutting one
	// short), which then closes watched.
	stopWatch context.CancelFunc
	watched   chan struct{}
	closeOnce sync.Once
}

type script struct {
	body, sha string
}

func newScript(body string) script {
	sum := sha1.Sum([]byte(body))
	return script{body: body, sha: hex.EncodeToString(sum[:])}
}

// Options tune a Store.
type Options struct {
	// Prefix starts every key the store writes (default "rl:"). It must
	// not hold '{' or '}'.
	Prefix string
	// CheckInterval is how often a Store that Open built inspects the
	// nodes again (Inspect): 0 means every minute, a negative value only
	// once, at Open.
	CheckInterval time.Duration
	// Logger receives what Inspect finds wrong (default slog.Default()).
	Logger *slog.Logger
	// AllowEviction lets Open succeed on servers whose maxmemory-policy
	// may evict counters (anything but noeviction, or a policy it cannot
	// read), which it otherwise refuses with an *EvictionError: it then
	// only logs a warning and reports it in the metrics.
	AllowEviction bool
	// Registerer, when set, receives the store's metrics (from Open):
	// rlctl_redis_eviction_safe, rlctl_redis_maxmemory_policy and
	// rlctl_redis_evicted_keys, as of the last Inspect.
	Registerer prometheus.Registerer
}

// Open connects to the Redis a counters URL names, and inspects its nodes
// (Inspect): a node whose maxmemory-policy may evict counters is an
// *EvictionError unless Options.AllowEviction, and a URL whose scheme does
// not match what the server is (a Cluster, a sentinel or neither) a
// *ModeError. The URL:
//
//	redis://[user:password@]host:port[/db]       a standalone server (db: 0 by default)
//	rediss://...                                 the same over TLS
//	redis+cluster://[user:password@]h1:p1,h2:p2  a Redis Cluster, seeded by any of its nodes
//	rediss+cluster://...                         the same over TLS
//	redis+sentinel://[user:password@]s1:p1,s2:p2/master-name[/db][?sentinel_username=u&sentinel_password=p]
//	                                             the master of a set Redis Sentinel monitors, found
//	                                             through any of the listed sentinels and followed
//	                                             across failovers; user:password are the master's
//	                                             credentials, the query parameters the sentinels'
//	rediss+sentinel://...                        the same over TLS (to the sentinels and the servers)
//
// The Store owns the connection: Close closes it. It inspects the nodes
// again every Options.CheckInterval.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	co, cluster, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if co.Sentinel.MasterSet != "" {
		if err := checkSentinels(ctx, co, rawURL); err != nil {
			return nil, err
		}
	}
	client, err := rueidis.NewClient(co)
	if err != nil {
		return nil, fmt.Errorf("redis: connect to %s: %w", Redact(rawURL), err)
	}
	s, err := New(client, cluster, opts)
	if err != nil {
		client.Close()
		return nil, err
	}
	s.own = true
	s.masterSet = co.Sentinel.MasterSet
	if err := client.Do(ctx, client.B().Ping().Build()).Error(); err != nil {
		client.Close()
		return nil, fmt.Errorf("redis: ping %s: %w", Redact(rawURL), err)
	}
	if err := checkMode(ctx, client, rawURL, cluster); err != nil {
		client.Close()
		return nil, err
	}
	s.Preload(ctx)
	if ev := evicting(s.inspect(ctx, opts.AllowEviction)); len(ev) > 0 && !opts.AllowEviction {
		client.Close()
		return nil, &EvictionError{Nodes: ev}
	}
	if opts.Registerer != nil {
		col := newCollector(s)
		if err := opts.Registerer.Register(col); err != nil {
			client.Close()
			return nil, fmt.Errorf("redis: register the metrics: %w", err)
		}
		s.reg, s.col = opts.Registerer, col
	}
	interval := opts.CheckInterval
	if interval == 0 {
		interval = time.Minute
	}
	if interval > 0 {
		var wctx context.Context
		wctx, s.stopWatch = context.WithCancel(context.Background())
		s.watched = make(chan struct{})
		go s.watch(wctx, interval)
	}
	return s, nil
}

// Preload loads the scripts on every node the client knows, so that the
// first decisions need one round trip, not a NOSCRIPT and an EVAL. It is
// best effort: a node that does not take them now gets them with EVAL
// when it is first asked (after a failover, say).
func (s *Store) Preload(ctx context.Context) {
	for _, n := range s.client.Nodes() {
		for _, sc := range []script{s.take, s.giveBack} {
			_ = n.Do(ctx, n.B().ScriptLoad().Script(sc.body).Build()).Error()
		}
	}
}

// New builds a Store on a client the caller owns. cluster says whether
// the client talks to a Redis Cluster (gates in different hash slots are
// then decided in two phases; see the package doc). It does no I/O: call
// Inspect before the first Take, and again from time to time, as Open
// does.
func New(client rueidis.Client, cluster bool, opts Options) (*Store, error) {
	if opts.Prefix == "" {
		opts.Prefix = "rl:"
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		return nil, fmt.Errorf("redis: prefix %q: must not hold '{' or '}' (they pick the hash slot)", opts.Prefix)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Store{client: client, cluster: cluster, prefix: opts.Prefix, log: opts.Logger,
		take: newScript(takeScript), giveBack: newScript(giveBackScript)}, nil
}

// ParseURL reads a counters URL (see Open) into rueidis options, and says
// whether it names a cluster. A Sentinel URL's options name the master set
// (ClientOption.Sentinel.MasterSet) and list the sentinels as InitAddress.
func ParseURL(rawURL string) (rueidis.ClientOption, bool, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// Not the url.Error itself: it quotes the URL, password and all.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return rueidis.ClientOption{}, false, fmt.Errorf("redis: counters URL: %w", err)
	}
	if u.Hostname() == "" && u.Scheme != "redis+sentinel" && u.Scheme != "rediss+sentinel" {
		return rueidis.ClientOption{}, false, fmt.Errorf("redis: counters URL %s: no host", Redact(rawURL))
	}
	var co rueidis.ClientOption
	cluster := false
	switch u.Scheme {
	case "redis", "rediss":
		co, err = rueidis.ParseURL(rawURL)
		if err != nil {
			return co, false, fmt.Errorf("redis: counters URL %s: %w", Redact(rawURL), err)
		}
		co.ForceSingleClient = true
	case "redis+cluster", "rediss+cluster":
		if u.Path != "" && u.Path != "/" {
			return co, false, fmt.Errorf("redis: counters URL %s: a cluster has no database (only db 0): drop the path %q", Redact(rawURL), u.Path)
		}
		for _, hp := range strings.Split(u.Host, ",") {
			if _, _, err := net.SplitHostPort(hp); err != nil {
				return co, false, fmt.Errorf("redis: counters URL %s: node %q: want host:port", Redact(rawURL), hp)
			}
			co.InitAddress = append(co.InitAddress, hp)
		}
		if u.User != nil {
			co.Username = u.User.Username()
			co.Password, _ = u.User.Password()
		}
		if u.Scheme == "rediss+cluster" {
			co.TLSConfig = tlsConfig()
		}
		cluster = true
	case "redis+sentinel", "rediss+sentinel":
		co, err = parseSentinelURL(u, rawURL)
		if err != nil {
			return co, false, err
		}
	default:
		return co, false, fmt.Errorf("redis: counters URL %s: scheme %q: want redis://, rediss://, redis+cluster://, rediss+cluster://, redis+sentinel:// or rediss+sentinel://", Redact(rawURL), u.Scheme)
	}
	if len(co.InitAddress) == 0 || co.InitAddress[0] == "" {
		return co, false, fmt.Errorf("redis: counters URL %s: no host", Redact(rawURL))
	}
	// Counters are never cached client side; a lost connection is
	// reported, never silently retried (a take is not idempotent).
	co.DisableCache = true
	co.DisableRetry = true
	co.ConnWriteTimeout = 5 * time.Second
	return co, cluster, nil
}

// Redact is rawURL with its passwords replaced, for messages: the user
// info's and a Sentinel URL's sentinel_password.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	if q := u.Query(); q.Has("sentinel_password") {
		for i := range q["sentinel_password"] {
			q["sentinel_password"][i] = "xxxxx"
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Close stops Open's periodic Inspect and closes the connection if the
// Store opened it.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		if s.stopWatch != nil {
			s.stopWatch()
			<-s.watched
		}
		if s.reg != nil {
			s.reg.Unregister(s.col)
		}
		if s.own {
			s.client.Close()
		}
	})
}

// Cluster reports whether the store counts in a Redis Cluster.
func (s *Store) Cluster() bool { return s.cluster }

// Client is the Store's client (tests and the counters API use it).
func (s *Store) Client() rueidis.Client { return s.client }

// RolledBack is how many reservations the store has given back so far:
// the gates of multi-slot calls that another slot denied.
func (s *Store) RolledBack() int64 { return s.rolledBack.Load() }

// Sweep does nothing: every key the store writes expires on its own.
func (s *Store) Sweep(context.Context, time.Time) (int64, error) { return 0, nil }

// gateRef is one gate of one call, as a group's script sees it.
type gateRef struct {
	call, gate int
}

// group is one script run: gates that share a hash slot (a standalone
// server: the whole batch), calls in batch order.
type group struct {
	keys    []string
	keyIdx  map[string]int
	args    []string
	calls   []int       // the calls with gates here, in order
	gates   [][]gateRef // per call here: its gates here
	tookIn  []bool      // per call here: the script took
	results [][5]int64  // per gate here, in order: room, before, after
	// peek: no call here consumes, so the group is read with one MGET
	// (atomic, like a script) and decided here, with the same arithmetic
	// (pkg/enforce/algorithm), instead of running takeScript.
	peek bool
}

func (g *group) key(k string) string {
	if i, ok := g.keyIdx[k]; ok {
		return strconv.Itoa(i)
	}
	g.keys = append(g.keys, k)
	g.keyIdx[k] = len(g.keys)
	return strconv.Itoa(len(g.keys))
}

// Take decides reqs in order, each all or nothing; see enforce.CounterStore
// and the package doc for the cluster's two phases.
func (s *Store) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	for i, r := range reqs {
		if err := r.Check(); err != nil {
			return nil, fmt.Errorf("redis: call %d: %w: %w", i, enforce.ErrNotApplied, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redis: %w: %w", enforce.ErrTimedOut, err)
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		return nil, fmt.Errorf("redis: %w: the deadline passed before the batch was sent", enforce.ErrTimedOut)
	}
	out := make([]enforce.TakeResult, len(reqs))
	order := s.plan(reqs, out)
	if len(order) == 0 {
		return out, nil
	}
	// The scripts refuse to start once the server's clock is past the
	// deadline (serverDeadline), as PostgreSQL's statement_timeout aborts a
	// statement at it: a script queued behind a stalled server takes
	// nothing when it finally runs. So the answer is waited for a grace
	// past the deadline, and an answer within it, a result or that
	// refusal, says what the server did; only a server that answers
	// nothing by then leaves the outcome unknown.
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(replyGrace))
		defer cancel()
	}
	replies := s.run(ctx, s.take, order, reqs, s.serverDeadline(deadline))
	var failed error
	unknown, late := false, false
	for i, g := range order {
		if err := replies[i].err; err != nil {
			failed = errors.Join(failed, err)
			unknown = unknown || !definite(err)
			late = late || refusedLate(err)
			continue
		}
		if err := g.parse(replies[i].ints, reqs); err != nil {
			failed = errors.Join(failed, err)
			unknown = true
		}
	}
	// Decide every call: allowed iff every group of it found room on all
	// its enforce gates (and, for an error, whatever a group took is
	// given back below).
	allowed := make([]bool, len(reqs))
	for i := range allowed {
		allowed[i] = true
	}
	for _, g := range order {
		if g.results == nil {
			for _, c := range g.calls {
				allowed[c] = false
			}
			continue
		}
		k := 0
		for j, c := range g.calls {
			for _, ref := range g.gates[j] {
				room := g.results[k][0] == 1
				if !room && reqs[c].Gates[ref.gate].Enforce {
					allowed[c] = false
				}
				k++
			}
		}
	}
	if failed != nil {
		for i := range allowed {
			allowed[i] = false // give back everything taken
		}
	}
	undo := s.fill(reqs, out, order, allowed)
	if len(undo) > 0 {
		if err := s.undo(ctx, undo, failed != nil); err != nil {
			failed = errors.Join(failed, err)
			unknown = true
		}
	}
	if failed != nil {
		kind := enforce.ErrOutcomeUnknown
		if !unknown {
			kind = enforce.ErrNotApplied
		}
		if late || errors.Is(failed, context.DeadlineExceeded) {
			return nil, fmt.Errorf("redis: %w: %w: %w", enforce.ErrTimedOut, kind, failed)
		}
		return nil, fmt.Errorf("redis: %w: %w", kind, failed)
	}
	return out, nil
}

// definite: err is a reply from Redis that says the script did not run
// (the cluster down or moving, a server loading, a replica, memory full)
// or refused to (DEADLINE: it started past the batch's deadline), so
// nothing was taken.
func definite(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return false
	}
	msg := re.Error()
	for _, p := range []string{"CLUSTERDOWN", "TRYAGAIN", "LOADING", "READONLY", "OOM", "MASTERDOWN", "NOSCRIPT", "CROSSSLOT", "MOVED", "ASK", deadlinePrefix} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// refusedLate: err is takeScript's refusal of a batch that reached the
// server after its deadline.
func refusedLate(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(re.Error(), deadlinePrefix)
}

// plan groups the gates of reqs by hash slot (one group on a standalone
// server) and builds each group's script arguments; it fills the results
// of calls with no gates (allowed).
func (s *Store) plan(reqs []enforce.TakeRequest, out []enforce.TakeResult) []*group {
	groups := map[uint16]*group{}
	var order []*group
	for i, r := range reqs {
		n := len(r.Gates)
		out[i] = enforce.TakeResult{Allowed: true, Room: make([]bool, n), States: make([]enforce.GateState, n)}
		var mine []*group
		for j, g := range r.Gates {
			tag := s.prefix + "{" + escape(g.Key) + "}"
			var slot uint16
			if s.cluster {
				slot = keySlot(tag)
			}
			gr := groups[slot]
			if gr == nil {
				gr = &group{keyIdx: map[string]int{}, args: []string{"0"}} // the number of calls
				groups[slot] = gr
				order = append(order, gr)
			}
			if len(gr.calls) == 0 || gr.calls[len(gr.calls)-1] != i {
				gr.calls = append(gr.calls, i)
				gr.gates = append(gr.gates, nil)
				mine = append(mine, gr)
			}
			gr.gates[len(gr.gates)-1] = append(gr.gates[len(gr.gates)-1], gateRef{call: i, gate: j})
			if len(gr.calls) == 1 && len(gr.gates[0]) == 1 {
				gr.peek = !r.Consume
			} else if r.Consume {
				gr.peek = false
			}
		}
		for _, gr := range mine {
			refs := gr.gates[len(gr.gates)-1]
			if s.short(r, refs) {
				gr.args = append(gr.args, "2", strconv.FormatInt(r.Cost, 10), strconv.Itoa(len(refs)))
				for _, ref := range refs {
					gr.args = s.shortArgs(gr, gr.args, r, r.Gates[ref.gate])
				}
				gr.args[0] = strconv.Itoa(len(gr.calls))
				continue
			}
			consume := "0"
			if r.Consume {
				consume = "1"
			}
			gr.args = append(gr.args, consume, strconv.FormatInt(r.Cost, 10), strconv.Itoa(len(refs)))
			for _, ref := range refs {
				gr.args = s.gateArgs(gr, gr.args, r, r.Gates[ref.gate])
			}
			gr.args[0] = strconv.Itoa(len(gr.calls))
		}
	}
	return order
}

// short says whether the call r's gates refs (in one group) can take
// takeScript's short form: r consumes, and they are fixed windows on
// distinct keys (the short form increments a key once per gate, so two
// gates on one key would see each other's take).
func (s *Store) short(r enforce.TakeRequest, refs []gateRef) bool {
	if !r.Consume {
		return false
	}
	for i, ref := range refs {
		g := r.Gates[ref.gate]
		if g.KnownAlgorithm() != enforce.AlgorithmFixedWindow {
			return false
		}
		for _, o := range refs[:i] {
			if o2 := r.Gates[o.gate]; o2.Key == g.Key && o2.Window == g.Window {
				return false
			}
		}
	}
	return true
}

// shortArgs appends a fixed window gate's 4 fields of the short form
// (see takeScript).
func (s *Store) shortArgs(gr *group, args []string, r enforce.TakeRequest, g enforce.CounterGate) []string {
	idx := algorithm.WindowIndex(r.Now, g.Window)
	w := strconv.FormatInt(int64(g.Window/time.Second), 10)
	end := time.Unix(0, 0).Add(time.Duration(idx+1) * g.Window)
	enf := "0"
	if g.Enforce {
		enf = "1"
	}
	key := s.prefix + "{" + escape(g.Key) + "}:f:" + w + ":" + strconv.FormatInt(idx, 10)
	return append(args, enf, gr.key(key), strconv.FormatInt(g.Limit, 10), strconv.FormatInt(ttl(end, r.Now), 10))
}

// gateArgs appends g's 12 fields (see takeScript).
func (s *Store) gateArgs(gr *group, args []string, r enforce.TakeRequest, g enforce.CounterGate) []string {
	tag := s.prefix + "{" + escape(g.Key) + "}"
	enf := "0"
	if g.Enforce {
		enf = "1"
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	now := r.Now
	switch g.KnownAlgorithm() {
	case enforce.AlgorithmTokenBucket:
		T := algorithm.Interval(g.Window, g.Limit)
		tau := algorithm.Tau(g.Window, g.Limit, g.Burst)
		never := "0"
		var lim, ct int64
		if g.Limit < 1 || tau <= 0 || r.Cost > tau/T {
			never = "1"
		} else {
			ct = r.Cost * T
			lim = tau - ct
		}
		ns, nn := pair(now.UnixNano())
		ls, ln := pair(lim)
		cs, cn := pair(ct)
		return append(args, "t", enf, gr.key(tag+":t"), i64(Slack.Milliseconds()), i64(g.Limit),
			i64(ns), i64(nn), never, i64(ls), i64(ln), i64(cs), i64(cn))
	case enforce.AlgorithmSlidingWindow:
		idx := algorithm.WindowIndex(now, g.Window)
		w := strconv.FormatInt(int64(g.Window/time.Second), 10)
		cur := gr.key(tag + ":s:" + w + ":" + i64(idx))
		prev := gr.key(tag + ":s:" + w + ":" + i64(idx-1))
		end := time.Unix(0, 0).Add(time.Duration(idx+2) * g.Window)
		return append(args, "s", enf, cur, prev, i64(g.Limit), i64(ttl(end, now)),
			i64(g.Window.Milliseconds()), i64(algorithm.Offset(now, g.Window)), "0", "0", "0", "0")
	default:
		idx := algorithm.WindowIndex(now, g.Window)
		w := strconv.FormatInt(int64(g.Window/time.Second), 10)
		end := time.Unix(0, 0).Add(time.Duration(idx+1) * g.Window)
		return append(args, "f", enf, gr.key(tag+":f:"+w+":"+i64(idx)), "0", i64(g.Limit), i64(ttl(end, now)),
			"0", "0", "0", "0", "0", "0")
	}
}

// ttl is the time to live, in ms, of a counter that may go at end.
func ttl(end, now time.Time) int64 {
	return max(end.Sub(now), 0).Milliseconds() + 1 + Slack.Milliseconds()
}

// pair splits ns into seconds and nanoseconds (0 <= nanoseconds < 1e9).
func pair(ns int64) (int64, int64) {
	s, n := ns/1e9, ns%1e9
	if n < 0 {
		s, n = s-1, n+1e9
	}
	return s, n
}

type reply struct {
	ints []int64
	err  error
}

// run runs sc once per group, pipelined (one round trip per node), with
// EVALSHA, and EVAL for the groups whose server did not know the script;
// a peek group is one MGET instead. dl is the batch's deadline on the
// servers' clock (serverDeadline), the script's first argument.
func (s *Store) run(ctx context.Context, sc script, order []*group, reqs []enforce.TakeRequest, dl string) []reply {
	cmds := make(rueidis.Commands, len(order))
	for i, g := range order {
		if g.peek {
			cmds[i] = s.client.B().Mget().Key(s.peekKeys(g, reqs)...).Build()
			continue
		}
		cmds[i] = s.client.B().Evalsha().Sha1(sc.sha).Numkeys(int64(len(g.keys))).Key(g.keys...).Arg(dl).Arg(g.args...).Build()
	}
	out := s.exec(ctx, sc, cmds, func(i int) rueidis.Completed {
		g := order[i]
		return s.client.B().Eval().Script(sc.body).Numkeys(int64(len(g.keys))).Key(g.keys...).Arg(dl).Arg(g.args...).Build()
	}, func(i int, r rueidis.RedisResult) reply {
		if order[i].peek {
			return s.peekReply(order[i], reqs, r)
		}
		return toReply(r)
	})
	return out
}

// peekKeys are the keys a peek group reads, gate by gate in group order
// (a sliding window's current and previous windows).
func (s *Store) peekKeys(g *group, reqs []enforce.TakeRequest) []string {
	var keys []string
	for j, c := range g.calls {
		r := reqs[c]
		for _, ref := range g.gates[j] {
			gate := r.Gates[ref.gate]
			keys = append(keys, s.gateKey(gate, r.Now))
			if gate.KnownAlgorithm() == enforce.AlgorithmSlidingWindow {
				keys = append(keys, s.gateKey(gate, r.Now.Add(-gate.Window)))
			}
		}
	}
	return keys
}

// peekReply turns a peek group's MGET into what takeScript would have
// answered for it (no call took; every gate's state before and after is
// the one read), deciding each gate's room with pkg/enforce/algorithm.
func (s *Store) peekReply(g *group, reqs []enforce.TakeRequest, r rueidis.RedisResult) reply {
	vals, err := r.ToArray()
	if err != nil {
		return reply{err: err}
	}
	k := 0
	next := func() (string, bool, error) {
		if k >= len(vals) {
			return "", false, fmt.Errorf("redis: MGET answered %d values: too few", len(vals))
		}
		v := vals[k]
		k++
		if v.IsNil() {
			return "", false, nil
		}
		str, err := v.ToString()
		return str, err == nil, err
	}
	count := func() (int64, error) {
		v, ok, err := next()
		if err != nil || !ok {
			return 0, err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("redis: a window's counter holds %q: not an integer", v)
		}
		return n, nil
	}
	var ints []int64
	for j, c := range g.calls {
		req := reqs[c]
		ints = append(ints, 0) // nothing taken
		for _, ref := range g.gates[j] {
			gate := req.Gates[ref.gate]
			var st algorithm.State
			var a, b int64
			switch gate.KnownAlgorithm() {
			case enforce.AlgorithmTokenBucket:
				v, ok, err := next()
				if err != nil {
					return reply{err: err}
				}
				a, b = 0, -1
				if sec, ns, found := strings.Cut(v, ":"); ok && found {
					ts, err1 := strconv.ParseInt(sec, 10, 64)
					tn, err2 := strconv.ParseInt(ns, 10, 64)
					if tat := time.Unix(ts, tn); err1 == nil && err2 == nil && tat.After(req.Now) {
						a, b, st.TAT = ts, tn, tat
					}
				}
			case enforce.AlgorithmSlidingWindow:
				cur, err := count()
				if err != nil {
					return reply{err: err}
				}
				prev, err := count()
				if err != nil {
					return reply{err: err}
				}
				a, b, st.Count, st.Previous = cur, prev, cur, prev
			default:
				cur, err := count()
				if err != nil {
					return reply{err: err}
				}
				a, st.Count = cur, cur
			}
			room, _ := algorithm.Decide(algorithm.Gate{Algorithm: string(gate.KnownAlgorithm()), Window: gate.Window,
				Limit: gate.Limit, Burst: gate.Burst}, st, req.Now, req.Cost)
			roomInt := int64(0)
			if room {
				roomInt = 1
			}
			ints = append(ints, roomInt, a, b, a, b)
		}
	}
	return reply{ints: ints}
}

func (s *Store) exec(ctx context.Context, sc script, cmds rueidis.Commands, eval func(int) rueidis.Completed, conv func(int, rueidis.RedisResult) reply) []reply {
	if conv == nil {
		conv = func(_ int, r rueidis.RedisResult) reply { return toReply(r) }
	}
	out := make([]reply, len(cmds))
	res := s.client.DoMulti(ctx, cmds...)
	var again []int
	for i, r := range res {
		if re, ok := rueidis.IsRedisErr(r.Error()); ok && re.IsNoScript() {
			again = append(again, i)
			continue
		}
		out[i] = conv(i, r)
	}
	if len(again) > 0 {
		evals := make(rueidis.Commands, len(again))
		for j, i := range again {
			evals[j] = eval(i)
		}
		for j, r := range s.client.DoMulti(ctx, evals...) {
			out[again[j]] = conv(again[j], r)
		}
	}
	return out
}

func toReply(r rueidis.RedisResult) reply {
	if err := r.Error(); err != nil {
		return reply{err: err}
	}
	ints, err := r.AsIntSlice()
	if err != nil {
		// A single integer (giveBackScript).
		n, err2 := r.AsInt64()
		if err2 != nil {
			return reply{err: err}
		}
		return reply{ints: []int64{n}}
	}
	return reply{ints: ints}
}

// parse reads a group's reply.
func (g *group) parse(ints []int64, reqs []enforce.TakeRequest) error {
	var res [][5]int64
	took := make([]bool, 0, len(g.calls))
	p := 0
	for j := range g.calls {
		if p >= len(ints) {
			return fmt.Errorf("redis: the script answered %d integers: too few", len(ints))
		}
		took = append(took, ints[p] == 1)
		p++
		for range g.gates[j] {
			if p+5 > len(ints) {
				return fmt.Errorf("redis: the script answered %d integers: too few", len(ints))
			}
			res = append(res, [5]int64(ints[p:p+5]))
			p += 5
		}
	}
	g.results, g.tookIn = res, took
	return nil
}

// undoGate is one gate a group took from for a call that was denied.
type undoGate struct {
	g     *group
	gate  enforce.CounterGate
	ref   gateRef
	cost  int64
	now   time.Time
	after [2]int64
	prior [2]int64
}

// fill writes every call's result from the groups' replies and returns
// the takes to give back (calls denied by a gate in another group).
func (s *Store) fill(reqs []enforce.TakeRequest, out []enforce.TakeResult, order []*group, allowed []bool) []undoGate {
	var undo []undoGate
	for _, g := range order {
		if g.results == nil {
			continue
		}
		k := 0
		for j, c := range g.calls {
			r := reqs[c]
			for _, ref := range g.gates[j] {
				res := g.results[k]
				k++
				gate := r.Gates[ref.gate]
				out[c].Room[ref.gate] = res[0] == 1
				before, after := state(gate, res[1], res[2]), state(gate, res[3], res[4])
				if allowed[c] && g.tookIn[j] {
					out[c].States[ref.gate] = after
				} else {
					out[c].States[ref.gate] = before
				}
				if !allowed[c] && g.tookIn[j] && res[0] == 1 {
					undo = append(undo, undoGate{g: g, gate: gate, ref: ref, cost: r.Cost, now: r.Now,
						after: [2]int64{res[3], res[4]}, prior: [2]int64{res[1], res[2]}})
				}
			}
		}
	}
	for i := range out {
		if !allowed[i] {
			out[i].Allowed = false
		}
	}
	// Last taken, first given back: a bucket's TAT can be restored only
	// while it is the one the take stored, so the takes of one batch on
	// one bucket are unwound from the top.
	slices.Reverse(undo)
	return undo
}

func state(g enforce.CounterGate, a, b int64) enforce.GateState {
	if g.KnownAlgorithm() == enforce.AlgorithmTokenBucket {
		if b < 0 {
			return enforce.GateState{}
		}
		return enforce.GateState{TAT: time.Unix(a, b)}
	}
	if g.KnownAlgorithm() == enforce.AlgorithmSlidingWindow {
		return enforce.GateState{Count: a, Previous: b}
	}
	return enforce.GateState{Count: a}
}

// undo gives back what the groups took for the calls in u, one script per
// group, pipelined. It runs even when ctx has ended (bounded by its own
// short deadline): what is not given back stays counted until its key
// expires, which errs toward refusing.
func (s *Store) undo(ctx context.Context, u []undoGate, failedBatch bool) error {
	byGroup := map[*group]*group{}
	var order []*group
	for _, x := range u {
		ug := byGroup[x.g]
		if ug == nil {
			ug = &group{keyIdx: map[string]int{}, args: []string{"0"}}
			byGroup[x.g] = ug
			order = append(order, ug)
		}
		key := s.gateKey(x.gate, x.now)
		idx := ug.key(key)
		reserved, prior, prTTL := "", "", "0"
		if x.gate.KnownAlgorithm() == enforce.AlgorithmTokenBucket {
			reserved = fmt.Sprintf("%d:%d", x.after[0], x.after[1])
			if x.prior[1] >= 0 {
				prior = fmt.Sprintf("%d:%d", x.prior[0], x.prior[1])
				prTTL = strconv.FormatInt(ttl(time.Unix(x.prior[0], x.prior[1]), x.now), 10)
			}
		}
		ug.args = append(ug.args, string(code(x.gate)), idx, strconv.FormatInt(x.cost, 10), reserved, prior, prTTL)
		ug.calls = append(ug.calls, 0)
		ug.args[0] = strconv.Itoa(len(ug.calls))
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	cmds := make(rueidis.Commands, len(order))
	for i, g := range order {
		cmds[i] = s.client.B().Evalsha().Sha1(s.giveBack.sha).Numkeys(int64(len(g.keys))).Key(g.keys...).Arg(g.args...).Build()
	}
	var errs error
	for i, r := range s.exec(uctx, s.giveBack, cmds, func(i int) rueidis.Completed {
		g := order[i]
		return s.client.B().Eval().Script(s.giveBack.body).Numkeys(int64(len(g.keys))).Key(g.keys...).Arg(g.args...).Build()
	}, nil) {
		switch {
		case r.err != nil:
			errs = errors.Join(errs, fmt.Errorf("redis: give back a reservation: %w", r.err))
		case len(r.ints) != 1 || r.ints[0] != int64(len(order[i].calls)):
			// A bucket another call took from since: its tokens stay
			// taken (see giveBackScript). Only a failed batch cares.
			if failedBatch {
				errs = errors.Join(errs, errors.New("redis: a token bucket's reservation could not be given back exactly (another call took since): it drips back at the bucket's rate"))
			}
		}
	}
	s.rolledBack.Add(int64(len(u)))
	return errs
}

// gateKey is the key holding g's counter at now (for a sliding window,
// the current window's).
func (s *Store) gateKey(g enforce.CounterGate, now time.Time) string {
	tag := s.prefix + "{" + escape(g.Key) + "}"
	w := strconv.FormatInt(int64(g.Window/time.Second), 10)
	idx := strconv.FormatInt(algorithm.WindowIndex(now, g.Window), 10)
	switch g.KnownAlgorithm() {
	case enforce.AlgorithmTokenBucket:
		return tag + ":t"
	case enforce.AlgorithmSlidingWindow:
		return tag + ":s:" + w + ":" + idx
	}
	return tag + ":f:" + w + ":" + idx
}

func code(g enforce.CounterGate) byte {
	switch g.KnownAlgorithm() {
	case enforce.AlgorithmTokenBucket:
		return 't'
	case enforce.AlgorithmSlidingWindow:
		return 's'
	}
	return 'f'
}

// escape makes a counter key safe inside a hash tag, keeping distinct keys
// distinct: '%', '{' and '}' are percent-encoded and the empty key is "%"
// (which no other key escapes to). Every other byte is kept as it is:
// Redis keys are binary safe.
func escape(k string) string {
	if k == "" {
		return "%"
	}
	if !strings.ContainsAny(k, "%{}") {
		return k
	}
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		switch c := k[i]; c {
		case '%':
			b.WriteString("%25")
		case '{':
			b.WriteString("%7B")
		case '}':
			b.WriteString("%7D")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

var _ enforce.CounterStore = (*Store)(nil)

// BackendName is "redis", "redis-cluster" or "redis-sentinel", the
// metrics' backend label.
func (s *Store) BackendName() string {
	switch {
	case s.cluster:
		return "redis-cluster"
	case s.masterSet != "":
		return "redis-sentinel"
	}
	return "redis"
}
