package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	redisstore "github.com/rlctl/rlctl/pkg/enforce/redis"
)

// serverInfo is what one Redis server's INFO cpu and INFO commandstats
// say at one instant.
type serverInfo struct {
	// cpuSys and cpuUser are used_cpu_sys and used_cpu_user: every
	// thread of the server, in seconds.
	cpuSys, cpuUser float64
	// mainSys and mainUser are used_cpu_sys_main_thread and
	// used_cpu_user_main_thread (Redis 7 and later): the thread that runs
	// every command and script, the one that saturates. hasMain says the
	// server reported them.
	mainSys, mainUser float64
	hasMain           bool
	// calls and usec are commandstats' per command (cmdstat_NAME, NAME
	// as Redis spells it: "evalsha", "client|list").
	calls, usec map[string]int64
}

// cpu is the CPU time of every thread.
func (s serverInfo) cpu() time.Duration { return seconds(s.cpuSys + s.cpuUser) }

// mainCPU is the main thread's CPU time, or every thread's when the
// server does not report the main thread's (before Redis 7, where the
// main thread does nearly all the work unless io-threads is raised).
func (s serverInfo) mainCPU() time.Duration {
	if !s.hasMain {
		return s.cpu()
	}
	return seconds(s.mainSys + s.mainUser)
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// parseInfo reads the text of INFO cpu and INFO commandstats (one reply
// holding both sections, or the two replies concatenated). used_cpu_sys
// and used_cpu_user must be there; a field that is there must parse.
func parseInfo(text string) (serverInfo, error) {
	s := serverInfo{calls: map[string]int64{}, usec: map[string]int64{}}
	var seenSys, seenUser, seenMainSys, seenMainUser bool
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			return s, fmt.Errorf("INFO: line %q: want field:value", line)
		}
		if name, ok := strings.CutPrefix(key, "cmdstat_"); ok {
			calls, usec, err := parseCommandStat(value)
			if err != nil {
				return s, fmt.Errorf("INFO commandstats: %s: %w", key, err)
			}
			s.calls[name], s.usec[name] = calls, usec
			continue
		}
		var dst *float64
		switch key {
		case "used_cpu_sys":
			dst, seenSys = &s.cpuSys, true
		case "used_cpu_user":
			dst, seenUser = &s.cpuUser, true
		case "used_cpu_sys_main_thread":
			dst, seenMainSys = &s.mainSys, true
		case "used_cpu_user_main_thread":
			dst, seenMainUser = &s.mainUser, true
		default:
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || f < 0 {
			return s, fmt.Errorf("INFO cpu: %s: %q is not a non-negative number of seconds", key, value)
		}
		*dst = f
	}
	if !seenSys || !seenUser {
		return s, fmt.Errorf("INFO cpu: no used_cpu_sys and used_cpu_user (not a Redis server's INFO cpu?)")
	}
	s.hasMain = seenMainSys && seenMainUser
	return s, nil
}

// parseCommandStat reads a commandstats value,
// "calls=N,usec=N,usec_per_call=F,rejected_calls=N,failed_calls=N"
// (Redis 6.0 stops after usec_per_call): calls and usec must be there.
func parseCommandStat(value string) (calls, usec int64, err error) {
	var seenCalls, seenUsec bool
	for field := range strings.SplitSeq(value, ",") {
		k, v, _ := strings.Cut(field, "=")
		var dst *int64
		switch k {
		case "calls":
			dst, seenCalls = &calls, true
		case "usec":
			dst, seenUsec = &usec, true
		default:
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("%s: %q is not a non-negative integer", k, v)
		}
		*dst = n
	}
	if !seenCalls || !seenUsec {
		return 0, 0, fmt.Errorf("%q: want calls=N and usec=N", value)
	}
	return calls, usec, nil
}

// clusterMaster is a master of CLUSTER NODES that serves slots.
type clusterMaster struct {
	addr  string // host:port, as clients reach it
	slots int
}

// parseClusterNodes reads CLUSTER NODES and returns the masters that
// serve slots, sorted by address: a replica has no counters of its own
// (it replays its master's), and a master that has failed or serves no
// slot has none either.
func parseClusterNodes(text string) ([]clusterMaster, error) {
	var masters []clusterMaster
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES: line %q: want at least 8 fields (id, address, flags, master, ping, pong, epoch, link)", line)
		}
		flags := strings.Split(f[2], ",")
		if !slices.Contains(flags, "master") || slices.Contains(flags, "fail") || slices.Contains(flags, "noaddr") ||
			slices.Contains(flags, "handshake") {
			continue
		}
		// ip:port@cport[,hostname]
		addr, _, _ := strings.Cut(f[1], "@")
		if addr == "" || strings.HasPrefix(addr, ":") {
			return nil, fmt.Errorf("CLUSTER NODES: master %s: address %q: want host:port@cport", f[0], f[1])
		}
		slots := 0
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being imported or migrated
			}
			lo, hi, isRange := strings.Cut(r, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER NODES: master %s: slot range %q: want N or N-M", f[0], r)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(hi); err != nil || b < a {
					return nil, fmt.Errorf("CLUSTER NODES: master %s: slot range %q: want N or N-M", f[0], r)
				}
			}
			slots += b - a + 1
		}
		if slots > 0 {
			masters = append(masters, clusterMaster{addr: addr, slots: slots})
		}
	}
	if len(masters) == 0 {
		return nil, fmt.Errorf("CLUSTER NODES: no master serving slots")
	}
	slices.SortFunc(masters, func(a, b clusterMaster) int { return strings.Compare(a.addr, b.addr) })
	return masters, nil
}

// redisWatch reads INFO from every master of one Redis store (the one
// server of a standalone store), each over a connection of its own, so
// that a row can report the servers' CPU per decision.
type redisWatch struct {
	addrs   []string
	clients []rueidis.Client
}

// openRedisWatch connects to each master of the store rawURL names (a
// counters URL, as redisstore.Open takes). A cluster's masters come from
// CLUSTER NODES, asked of its seed nodes in turn.
func openRedisWatch(ctx context.Context, rawURL string) (*redisWatch, error) {
	co, cluster, err := redisstore.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	dial := func(addr string) (rueidis.Client, error) {
		o := co
		o.InitAddress, o.ForceSingleClient = []string{addr}, true
		c, err := rueidis.NewClient(o)
		if err != nil {
			return nil, fmt.Errorf("redis %s: %w", addr, err)
		}
		return c, nil
	}
	w := &redisWatch{}
	if !cluster {
		c, err := dial(co.InitAddress[0])
		if err != nil {
			return nil, err
		}
		w.addrs, w.clients = co.InitAddress[:1], []rueidis.Client{c}
		return w, nil
	}
	var masters []clusterMaster
	var errs []string
	for _, seed := range co.InitAddress {
		c, err := dial(seed)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		text, err := c.Do(ctx, c.B().ClusterNodes().Build()).ToString()
		cancel()
		c.Close()
		if err == nil {
			masters, err = parseClusterNodes(text)
		}
		if err == nil {
			break
		}
		errs = append(errs, fmt.Sprintf("%s: %v", seed, err))
	}
	if masters == nil {
		return nil, fmt.Errorf("redis cluster %s: list its masters: %s", redisstore.Redact(rawURL), strings.Join(errs, "; "))
	}
	for _, m := range masters {
		c, err := dial(m.addr)
		if err != nil {
			w.Close()
			return nil, err
		}
		w.addrs, w.clients = append(w.addrs, m.addr), append(w.clients, c)
	}
	return w, nil
}

// Close closes the watch's connections.
func (w *redisWatch) Close() {
	for _, c := range w.clients {
		c.Close()
	}
}

// sample reads every master's INFO cpu and INFO commandstats (two
// commands: Redis before 7 takes one section per INFO).
func (w *redisWatch) sample(ctx context.Context) ([]serverInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out := make([]serverInfo, len(w.clients))
	for i, c := range w.clients {
		var text strings.Builder
		for _, section := range []string{"cpu", "commandstats"} {
			s, err := c.Do(ctx, c.B().Info().Section(section).Build()).ToString()
			if err != nil {
				return nil, fmt.Errorf("redis %s: INFO %s: %w", w.addrs[i], section, err)
			}
			text.WriteString(s)
			text.WriteString("\n")
		}
		info, err := parseInfo(text.String())
		if err != nil {
			return nil, fmt.Errorf("redis %s: %w", w.addrs[i], err)
		}
		out[i] = info
	}
	return out, nil
}

// serverDelta is what one master did between two samples.
type serverDelta struct {
	main, all time.Duration // main thread's CPU, every thread's
	// scripts and scriptTime are the script calls (EVAL, EVALSHA and
	// their _RO forms) and the time inside them (commandstats' usec:
	// execution only, without reading and writing the connection).
	scripts    int64
	scriptTime time.Duration
}

// scriptCommands are the commandstats names of the calls that run a
// script: the store's takes, give-backs and lease refills.
var scriptCommands = []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}

// delta is what each master did from before to after (both from one
// watch, so in the same order).
func delta(before, after []serverInfo) []serverDelta {
	out := make([]serverDelta, min(len(before), len(after)))
	for i := range out {
		b, a := before[i], after[i]
		d := serverDelta{main: a.mainCPU() - b.mainCPU(), all: a.cpu() - b.cpu()}
		for _, name := range scriptCommands {
			d.scripts += a.calls[name] - b.calls[name]
			d.scriptTime += time.Duration(a.usec[name]-b.usec[name]) * time.Microsecond
		}
		out[i] = d
	}
	return out
}

// cpuRow is one row of the -cpu table.
type cpuRow struct {
	alg, label, shape string
	gor               int
	decisions         int
	proc              time.Duration // the load program's CPU, every thread
	masters           []serverDelta // nil: not a Redis store
	err               error         // reading the servers failed
}

// printCPUTable prints the -cpu table: per row, the load program's CPU
// per decision and, for the Redis stores, the masters' (docs/scaling.md,
// "A capacity model").
func printCPUTable(rows []cpuRow) {
	fmt.Println()
	fmt.Println("CPU per decision (-cpu): proc is this process (getrusage, every thread: the deciding side, an rlapi or gateway replica's share);")
	fmt.Println("main, all and script are the Redis masters' summed (INFO cpu main thread, every thread; INFO commandstats time inside scripts);")
	fmt.Println("scripts is script calls per decision; share is each master's part of main; per-master is 1e6/main, the decisions/s one")
	fmt.Println("master's core carries when keys spread evenly; ceiling is 1e6/(busiest master's main), the decisions/s at which this")
	fmt.Println("row's keys saturate their busiest master's core")
	fmt.Println()
	fmt.Printf("%-14s %-14s %-7s %5s %10s %8s %8s %8s %8s %8s %-17s %10s %10s\n", "algorithm", "impl", "keys", "gor", "decisions",
		"proc µs", "main µs", "all µs", "script", "scripts", "share %", "per-master", "ceiling")
	for _, r := range rows {
		n := float64(max(r.decisions, 1))
		us := func(d time.Duration) string {
			return strconv.FormatFloat(float64(d)/float64(time.Microsecond)/n, 'f', 2, 64)
		}
		fmt.Printf("%-14s %-14s %-7s %5d %10d %8s", r.alg, r.label, r.shape, r.gor, r.decisions, us(r.proc))
		switch {
		case r.err != nil:
			fmt.Printf("  redis: %v\n", r.err)
			continue
		case r.masters == nil:
			fmt.Printf(" %8s %8s %8s %8s %-17s %10s %10s\n", "-", "-", "-", "-", "-", "-", "-")
			continue
		}
		var main, all, scriptTime, busiest time.Duration
		var scripts int64
		for _, m := range r.masters {
			main, all, scriptTime, scripts = main+m.main, all+m.all, scriptTime+m.scriptTime, scripts+m.scripts
			busiest = max(busiest, m.main)
		}
		shares := make([]string, len(r.masters))
		for i, m := range r.masters {
			shares[i] = "-"
			if main > 0 {
				shares[i] = strconv.Itoa(int(100*float64(m.main)/float64(main) + 0.5))
			}
		}
		rate := func(d time.Duration) string {
			if d <= 0 {
				return "-"
			}
			v := n / (float64(d) / float64(time.Second))
			if v >= 1e8 {
				return ">1e8" // leased rows: the servers saw refills only
			}
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		fmt.Printf(" %8s %8s %8s %8.3f %-17s %10s %10s\n", us(main), us(all), us(scriptTime), float64(scripts)/n,
			strings.Join(shares, "/"), rate(main), rate(busiest))
	}
}
