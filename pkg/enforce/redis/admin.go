package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counteradmin"
)

// Listing and resetting counters by caller, target or definition
// (counteradmin.Admin) on Redis.
//
// A counter's Redis key is <prefix>{<counter key>}:<f|s|t>[:<window>:<index>]:
// the hash tag is the whole counter key, so that Take finds every key of
// a gate in one slot from the gate alone. Nothing indexes the keys by
// caller, target or definition, and one caller's counters are spread over
// every slot. Admin requests therefore walk the keyspace with SCAN, on
// every master of a cluster, with a MATCH pattern that narrows the names
// sent back (the caller, the target's name or the definition id must
// appear in the key); each name is then read as a counter key and
// selected exactly as on PostgreSQL (counteradmin.Selector.Selects).
// Take writes nothing more than it did, so deciding costs the same.
//
// A SCAN still visits every key of the node, selected or not: its cost
// grows with the keyspace, not with the answer (about a second per few
// million keys per node). It is bounded: AdminScanBudget of wall time and
// AdminMaxMatches names per request; an answer that stopped at a bound
// says Truncated (a reset that stopped may leave selected counters,
// which a second reset finds). docs/design/redis.md and
// docs/operations.md say what it costs.

// Bounds of one admin request's scan.
const (
	// AdminScanBudget bounds the wall time of one scan, over every
	// master (or the request's deadline, when sooner).
	AdminScanBudget = 5 * time.Second
	// AdminMaxMatches bounds the counters one request collects.
	AdminMaxMatches = 100_000
	// adminScanCount is SCAN's COUNT hint: keys a node looks at per call.
	adminScanCount = 1000
	// adminReadBatch is how many counters are read per pipelined batch.
	adminReadBatch = 512
)

var _ counteradmin.Admin = (*Store)(nil)

// Counters lists the live counters sel selects (counteradmin.Admin), in
// key byte order then window, at most limit (0: up to AdminMaxMatches).
func (s *Store) Counters(ctx context.Context, sel counteradmin.Selector, now time.Time, limit int) (counteradmin.Page, error) {
	if err := sel.Check(); err != nil {
		return counteradmin.Page{}, fmt.Errorf("redis: list counters: %w", err)
	}
	names, truncated, err := s.scanSelected(ctx, sel)
	if err != nil {
		return counteradmin.Page{}, fmt.Errorf("redis: list counters %s: %w", sel, err)
	}
	counters, err := s.readCounters(ctx, names, false)
	if err != nil {
		return counteradmin.Page{}, fmt.Errorf("redis: list counters %s: %w", sel, err)
	}
	counteradmin.Sort(counters)
	if limit > 0 && len(counters) > limit {
		counters, truncated = counters[:limit], true
	}
	return counteradmin.Page{Counters: counters, Truncated: truncated}, nil
}

// ResetCounters deletes the live counters sel selects and returns them as
// they were (counteradmin.Admin). Each is read and deleted at once
// (GETDEL), so a count taken between the scan and the reset is reset too,
// never lost from the answer. A missing key is an empty counter to Take,
// and a reservation given back to a deleted key never drives it below
// zero (giveBackScript).
func (s *Store) ResetCounters(ctx context.Context, sel counteradmin.Selector, now time.Time) (counteradmin.Page, error) {
	if err := sel.Check(); err != nil {
		return counteradmin.Page{}, fmt.Errorf("redis: reset counters: %w", err)
	}
	names, truncated, err := s.scanSelected(ctx, sel)
	if err != nil {
		return counteradmin.Page{}, fmt.Errorf("redis: reset counters %s: %w", sel, err)
	}
	counters, err := s.readCounters(ctx, names, true)
	if err != nil {
		return counteradmin.Page{}, fmt.Errorf("redis: reset counters %s: %w", sel, err)
	}
	counteradmin.Sort(counters)
	return counteradmin.Page{Counters: counters, Truncated: truncated}, nil
}

// storedName is a Redis key of the store read back.
type storedName struct {
	name string // the Redis key
	key  string // the counter key
	algo enforce.Algorithm
	idx  int64
}

// scanSelected scans every master for the keys sel selects.
func (s *Store) scanSelected(ctx context.Context, sel counteradmin.Selector) (names []storedName, truncated bool, err error) {
	masters, err := s.masters(ctx)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, AdminScanBudget)
	defer cancel()
	pattern := s.matchPattern(sel)
	seen := map[string]bool{}
	for _, n := range masters {
		var cursor uint64
		for {
			e, err := n.Do(ctx, n.B().Scan().Cursor(cursor).Match(pattern).Count(adminScanCount).Build()).AsScanEntry()
			if err != nil {
				if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
					return names, true, nil
				}
				return nil, false, fmt.Errorf("scan: %w", err)
			}
			for _, raw := range e.Elements {
				sn, ok := s.parseName(raw)
				if !ok || seen[raw] || !sel.SelectsKey(sn.key) {
					continue
				}
				seen[raw] = true
				if len(names) >= AdminMaxMatches {
					return names, true, nil
				}
				names = append(names, sn)
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return names, false, nil
}

// masters are the nodes that hold the keys: the one server, or a
// cluster's masters (ROLE), each scanned once.
func (s *Store) masters(ctx context.Context) ([]rueidis.Client, error) {
	nodes := s.client.Nodes()
	addrs := slices.Sorted(func(yield func(string) bool) {
		for a := range nodes {
			if !yield(a) {
				return
			}
		}
	})
	if !s.cluster {
		out := make([]rueidis.Client, 0, len(addrs))
		for _, a := range addrs {
			out = append(out, nodes[a])
		}
		return out, nil
	}
	var out []rueidis.Client
	for _, a := range addrs {
		n := nodes[a]
		role, err := n.Do(ctx, n.B().Role().Build()).ToArray()
		if err != nil || len(role) == 0 {
			return nil, fmt.Errorf("role of %s: %w", a, err)
		}
		if r, _ := role[0].ToString(); r == "master" {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no master among the cluster's nodes")
	}
	return out, nil
}

// matchPattern is the SCAN MATCH pattern for sel: the store's keys whose
// counter key holds the text every selected key holds (the exact choice
// is sel.Selects').
func (s *Store) matchPattern(sel counteradmin.Selector) string {
	base := globEscape(s.prefix) + "{"
	var part string
	switch {
	case sel.Caller != "":
		part = "|" + sel.Caller
	case sel.Target != "":
		// A server group's member counter names the server, not
		// mcp_server:<server>: match the name alone.
		_, part, _ = strings.Cut(sel.Target, ":")
	case len(sel.Shared.Callers) == 0:
		part = "|" + sel.Definition
	}
	if part == "" {
		return base + "*"
	}
	return base + "*" + globEscape(escape(part)) + "*"
}

// globEscape quotes the characters SCAN's MATCH reads as a pattern.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseName reads a Redis key the store wrote (gateKey): its counter key,
// algorithm and window index.
func (s *Store) parseName(name string) (storedName, bool) {
	rest, ok := strings.CutPrefix(name, s.prefix+"{")
	if !ok {
		return storedName{}, false
	}
	// An escaped counter key holds no '}' (escape).
	esc, suffix, ok := strings.Cut(rest, "}:")
	if !ok {
		return storedName{}, false
	}
	key, ok := unescape(esc)
	if !ok {
		return storedName{}, false
	}
	sn := storedName{name: name, key: key}
	switch {
	case suffix == "t":
		sn.algo = enforce.AlgorithmTokenBucket
		return sn, true
	case strings.HasPrefix(suffix, "f:"):
		sn.algo = enforce.AlgorithmFixedWindow
	case strings.HasPrefix(suffix, "s:"):
		sn.algo = enforce.AlgorithmSlidingWindow
	default:
		return storedName{}, false
	}
	_, idx, ok := strings.Cut(suffix[2:], ":")
	if !ok {
		return storedName{}, false
	}
	n, err := strconv.ParseInt(idx, 10, 64)
	if err != nil {
		return storedName{}, false
	}
	sn.idx = n
	return sn, true
}

// unescape undoes escape.
func unescape(s string) (string, bool) {
	if s == "%" {
		return "", true
	}
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		switch s[i+1 : i+3] {
		case "25":
			b.WriteByte('%')
		case "7B":
			b.WriteByte('{')
		case "7D":
			b.WriteByte('}')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// readCounters reads (or, with del, reads and deletes) the counters
// names, pipelined in batches: each counter's expiry (PEXPIRETIME) and
// value (GET, or GETDEL). A key gone since the scan, a window at zero and
// a full bucket are left out.
func (s *Store) readCounters(ctx context.Context, names []storedName, del bool) ([]counteradmin.Counter, error) {
	var out []counteradmin.Counter
	for from := 0; from < len(names); from += adminReadBatch {
		batch := names[from:min(from+adminReadBatch, len(names))]
		cmds := make(rueidis.Commands, 0, 2*len(batch))
		for _, n := range batch {
			cmds = append(cmds, s.client.B().Pexpiretime().Key(n.name).Build())
			if del {
				cmds = append(cmds, s.client.B().Getdel().Key(n.name).Build())
			} else {
				cmds = append(cmds, s.client.B().Get().Key(n.name).Build())
			}
		}
		res := s.client.DoMulti(ctx, cmds...)
		for i, n := range batch {
			exp, err := res[2*i].AsInt64()
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", n.key, err)
			}
			v, err := res[2*i+1].ToString()
			if rueidis.IsRedisNil(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", n.key, err)
			}
			c := counteradmin.Counter{Key: n.key, Algorithm: n.algo, WindowIndex: n.idx}
			if exp > 0 {
				c.ExpiresAt = time.UnixMilli(exp)
			}
			if n.algo == enforce.AlgorithmTokenBucket {
				sec, nsec, ok := strings.Cut(v, ":")
				a, err1 := strconv.ParseInt(sec, 10, 64)
				b, err2 := strconv.ParseInt(nsec, 10, 64)
				if !ok || err1 != nil || err2 != nil {
					continue
				}
				c.State.TAT = time.Unix(a, b)
			} else {
				count, err := strconv.ParseInt(v, 10, 64)
				if err != nil || count <= 0 {
					continue
				}
				c.State.Count = count
			}
			out = append(out, c)
		}
	}
	return out, nil
}
