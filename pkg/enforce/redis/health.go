package redis

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"
)

// SafePolicy is the only maxmemory-policy under which Redis never drops a
// counter. Every other one evicts keys when memory is full, and an
// evicted counter forgets its counts, so its limit admits again from
// zero. The volatile-* policies are no safer: they evict only keys with a
// time to live, and every key the store writes has one.
const SafePolicy = "noeviction"

// NodeState is what Inspect read from one node.
type NodeState struct {
	// Addr is the node's address as the client knows it.
	Addr string
	// Policy is the node's maxmemory-policy: from CONFIG GET, or from
	// INFO memory where CONFIG is disabled (as on managed Redis); empty
	// when neither answered (PolicyErr says why).
	Policy    string
	PolicyErr error
	// MaxMemory is the node's maxmemory in bytes (0: no limit; -1: not
	// read).
	MaxMemory int64
	// EvictedKeys is INFO stats' evicted_keys: the keys the node has
	// evicted since it started (-1: not read).
	EvictedKeys int64
	// RunID is INFO server's run_id, new at every start of the node
	// (empty: not read): a changed one is a restart.
	RunID string
	// KeysLoaded is what the node read back from disk when it started:
	// INFO persistence's rdb_last_load_keys_loaded, or -1 when it
	// replays an append-only file (aof_enabled:1), which keeps every
	// write, or could not be read.
	KeysLoaded int64
}

// restart is what report makes of a node whose run_id changed.
func (n NodeState) restart() (empty bool, how string) {
	switch {
	case n.KeysLoaded < 0:
		return false, "it replays its append-only file: counters kept"
	case n.KeysLoaded == 0:
		return true, "it loaded no keys: every counter it held starts from zero, so limits admit up to one window's worth again"
	default:
		return false, "it loaded keys from its last RDB snapshot: counts taken since that snapshot are lost"
	}
}

// Evicts reports whether the node may evict counters: its policy is not
// noeviction, or could not be read.
func (n NodeState) Evicts() bool { return n.Policy != SafePolicy }

// policyText is the node's policy for messages and labels.
func (n NodeState) policyText() string {
	if n.Policy == "" {
		return "unknown"
	}
	return n.Policy
}

// EvictionError is Open's refusal of servers that may evict counters
// (Options.AllowEviction turns it into a warning).
type EvictionError struct {
	// Nodes are the nodes that may evict.
	Nodes []NodeState
}

func (e *EvictionError) Error() string {
	var b strings.Builder
	b.WriteString("redis: counters may be evicted: ")
	for i, n := range e.Nodes {
		if i > 0 {
			b.WriteString(", ")
		}
		if n.Policy == "" {
			fmt.Fprintf(&b, "%s: maxmemory-policy could not be read (%v)", n.Addr, n.PolicyErr)
		} else {
			fmt.Fprintf(&b, "%s has maxmemory-policy %s", n.Addr, n.Policy)
		}
	}
	b.WriteString("; an evicted counter forgets its counts and its limit stops holding: run CONFIG SET maxmemory-policy noeviction on every node (and set it in redis.conf)")
	return b.String()
}

// evicting are the nodes of ns that may evict.
func evicting(ns []NodeState) []NodeState {
	var out []NodeState
	for _, n := range ns {
		if n.Evicts() {
			out = append(out, n)
		}
	}
	return out
}

// readNode reads one node's eviction policy, maxmemory and evicted keys,
// in one round trip.
func readNode(ctx context.Context, addr string, c rueidis.Client) NodeState {
	n := NodeState{Addr: addr, MaxMemory: -1, EvictedKeys: -1, KeysLoaded: -1}
	res := c.DoMulti(ctx,
		c.B().ConfigGet().Parameter("maxmemory-policy").Build(),
		c.B().Info().Section("memory").Build(),
		c.B().Info().Section("stats").Build(),
		c.B().Info().Section("server").Build(),
		c.B().Info().Section("persistence").Build())
	cfgErr := res[0].Error()
	if cfgErr == nil {
		m, err := res[0].AsStrMap()
		if err != nil {
			cfgErr = err
		} else if p := m["maxmemory-policy"]; p != "" {
			n.Policy = p
		} else {
			cfgErr = fmt.Errorf("CONFIG GET answered no maxmemory-policy")
		}
	}
	mem, memErr := res[1].ToString()
	if memErr == nil {
		fields := infoFields(mem)
		if n.Policy == "" {
			n.Policy = fields["maxmemory_policy"]
		}
		if v, err := strconv.ParseInt(fields["maxmemory"], 10, 64); err == nil {
			n.MaxMemory = v
		}
	}
	if n.Policy == "" {
		if memErr == nil {
			memErr = fmt.Errorf("INFO memory has no maxmemory_policy")
		}
		n.PolicyErr = fmt.Errorf("CONFIG GET: %v; INFO memory: %v", cfgErr, memErr)
	}
	if stats, err := res[2].ToString(); err == nil {
		if v, err := strconv.ParseInt(infoFields(stats)["evicted_keys"], 10, 64); err == nil {
			n.EvictedKeys = v
		}
	}
	if server, err := res[3].ToString(); err == nil {
		n.RunID = infoFields(server)["run_id"]
	}
	if p, err := res[4].ToString(); err == nil {
		f := infoFields(p)
		if v, err := strconv.ParseInt(f["rdb_last_load_keys_loaded"], 10, 64); err == nil && f["aof_enabled"] == "0" {
			n.KeysLoaded = v
		}
	}
	return n
}

// infoFields are the name:value lines of an INFO answer.
func infoFields(info string) map[string]string {
	m := map[string]string{}
	// Over RESP3 the answer is a verbatim string, which reaches us with
	// its format ("txt:") before the first line.
	info = strings.TrimPrefix(info, "txt:")
	for line := range strings.SplitSeq(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}

// Inspect reads every node the client knows (masters and replicas: a
// replica's policy applies once it is promoted): its eviction policy and
// evicted keys, which the metrics export and whose changes are logged
// (at WARN when a node may evict, once per change), and its clock, so
// that deadlines are put on the servers' clocks (see serverDeadline). Open
// runs it, then every Options.CheckInterval.
func (s *Store) Inspect(ctx context.Context) []NodeState {
	return s.inspect(ctx, true)
}

// inspect is Inspect, logging what changed only if tell (Open refusing
// the servers says it in its error instead).
func (s *Store) inspect(ctx context.Context, tell bool) []NodeState {
	s.inspecting.Lock()
	defer s.inspecting.Unlock()
	nodes := s.client.Nodes()
	var out []NodeState
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		out = append(out, readNode(ctx, addr, nodes[addr]))
	}
	s.nodeClocks(ctx, nodes)
	if tell {
		s.report(out)
	}
	s.nodes.Store(&out)
	return out
}

// report logs what changed since the last Inspect: a node that may evict
// (WARN, once per policy), one that no longer does, and keys evicted
// since (WARN, while it goes on).
func (s *Store) report(ns []NodeState) {
	prev := map[string]NodeState{}
	if p := s.nodes.Load(); p != nil {
		for _, n := range *p {
			prev[n.Addr] = n
		}
	}
	for _, n := range ns {
		was, seen := prev[n.Addr]
		switch {
		case n.Evicts() && (!seen || was.Policy != n.Policy):
			if n.Policy == "" {
				s.log.Warn("redis: cannot read the node's maxmemory-policy: if it evicts, limits stop holding; make sure it is noeviction",
					"node", n.Addr, "err", n.PolicyErr)
			} else {
				s.log.Warn("redis: the node may evict counters: an evicted counter forgets its counts and its limit stops holding; run CONFIG SET maxmemory-policy noeviction",
					"node", n.Addr, "maxmemory_policy", n.Policy, "maxmemory", n.MaxMemory)
			}
		case !n.Evicts() && seen && was.Evicts():
			s.log.Info("redis: the node no longer evicts", "node", n.Addr, "maxmemory_policy", n.Policy)
		}
		if seen && was.RunID != "" && n.RunID != "" && n.RunID != was.RunID {
			empty, how := n.restart()
			s.restarts.Lock()
			if s.restarts.n == nil {
				s.restarts.n = map[restartKey]int64{}
			}
			s.restarts.n[restartKey{n.Addr, empty}]++
			s.restarts.Unlock()
			if empty {
				s.log.Warn("redis: the node restarted empty: "+how, "node", n.Addr)
			} else {
				s.log.Warn("redis: the node restarted: "+how, "node", n.Addr)
			}
		}
		if seen && was.EvictedKeys >= 0 && n.EvictedKeys > was.EvictedKeys {
			s.log.Warn("redis: the node evicted keys since the last check: counters among them forgot their counts",
				"node", n.Addr, "evicted", n.EvictedKeys-was.EvictedKeys, "evicted_keys", n.EvictedKeys, "maxmemory_policy", n.policyText())
		}
	}
}

// restartKey counts a node's restarts, empty or not.
type restartKey struct {
	node  string
	empty bool
}

// collector exports what the last Inspect read.
type collector struct {
	s                               *Store
	safe, policy, evicted, restarts *prometheus.Desc
}

func newCollector(s *Store) *collector {
	return &collector{s: s,
		safe: prometheus.NewDesc("rlctl_redis_eviction_safe",
			"1 when every Redis node's maxmemory-policy is noeviction, else 0: under any other policy a full Redis evicts counters and their limits stop holding.", nil, nil),
		policy: prometheus.NewDesc("rlctl_redis_maxmemory_policy",
			"Each Redis node's maxmemory-policy (unknown: it could not be read), as a label of a series of value 1.", []string{"node", "policy"}, nil),
		evicted: prometheus.NewDesc("rlctl_redis_evicted_keys",
			"Each Redis node's evicted_keys (INFO stats): the keys it has evicted since it started; any rise under rlctl's counters is counts lost.", []string{"node"}, nil),
		restarts: prometheus.NewDesc("rlctl_redis_node_restarts_total",
			"Restarts of a Redis node this process saw (its run_id changed between two checks); empty=\"true\": it came back with no keys, so its counters started from zero.", []string{"node", "empty"}, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.safe
	ch <- c.policy
	ch <- c.evicted
	ch <- c.restarts
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.s.restarts.Lock()
	for k, n := range c.s.restarts.n {
		ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(n), k.node, strconv.FormatBool(k.empty))
	}
	c.s.restarts.Unlock()
	p := c.s.nodes.Load()
	if p == nil {
		return
	}
	safe := 1.0
	for _, n := range *p {
		if n.Evicts() {
			safe = 0
		}
		ch <- prometheus.MustNewConstMetric(c.policy, prometheus.GaugeValue, 1, n.Addr, n.policyText())
		if n.EvictedKeys >= 0 {
			ch <- prometheus.MustNewConstMetric(c.evicted, prometheus.GaugeValue, float64(n.EvictedKeys), n.Addr)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.safe, prometheus.GaugeValue, safe)
}
