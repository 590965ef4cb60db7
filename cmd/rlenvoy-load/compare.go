package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// -targets: instead of the in-process rlapi, drive servers that already
// run (an rlapi started with --grpc-addr, Envoy's ratelimit service, ...)
// in interleaved rounds, and print each one's ratio to the first target.
// rlenvoy-load still seeds -dsn (definitions and an enforcer token), so
// every rlapi target must serve that database; a non-rlapi gRPC server
// needs the same three descriptors configured (scripts/bench-envoy-ratelimit.sh).
var (
	targetsFlag = flag.String("targets", "", "instead of the in-process rlapi, drive running servers in interleaved rounds: name=grpc://host:port (ShouldRateLimit, 3 descriptors) or name=http://host:port (POST /api/check, 3 gates), comma-separated, each optionally ?pid=N (the server's process, whose CPU per decision is then reported); ratios are to the first")
	sharedPID   = flag.Int("shared-pid", 0, "with -targets: a process every target uses (the Redis server), whose CPU is charged to the target running at the time")
)

type target struct {
	name, kind, addr string
	pid              int
	call             func(i int) error
	ready            func(ctx context.Context) error
}

// cpuTime is the user and system CPU time pid has used (Linux: /proc);
// 0 when it cannot be read.
func cpuTime(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command (which may hold spaces), from state.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b)[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ: 100 on Linux
}

func parseTargets(s string) ([]target, error) {
	var ts []target
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, u, ok := strings.Cut(part, "=")
		u, pidStr, hasPID := strings.Cut(u, "?pid=")
		kind, addr, ok2 := strings.Cut(u, "://")
		if !ok || !ok2 || name == "" || addr == "" || (kind != "grpc" && kind != "http") {
			return nil, fmt.Errorf("-targets: %q is not name=grpc://host:port or name=http://host:port", part)
		}
		pid := 0
		if hasPID {
			var err error
			if pid, err = strconv.Atoi(pidStr); err != nil || pid < 1 {
				return nil, fmt.Errorf("-targets: %q: pid %q is not a process id", part, pidStr)
			}
		}
		if seen[name] {
			return nil, fmt.Errorf("-targets: name %q twice", name)
		}
		seen[name] = true
		ts = append(ts, target{name: name, kind: kind, addr: addr, pid: pid})
	}
	return ts, nil
}

// runTargets is rlenvoy-load -targets: the same calls as the in-process
// load (grpcCall's three descriptors, httpCall's three gates), against
// the servers named, each concurrency's rounds rotating the order.
func runTargets(ctx context.Context, ts []target, secret string, concurrency []int, duration time.Duration, rounds, keys, grpcConns int) error {
	gctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+secret)
	for i := range ts {
		t := &ts[i]
		switch t.kind {
		case "grpc":
			var clients []rlsv3.RateLimitServiceClient
			for range max(grpcConns, 1) {
				conn, err := grpc.NewClient(t.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					return fmt.Errorf("target %s: %w", t.name, err)
				}
				defer conn.Close()
				clients = append(clients, rlsv3.NewRateLimitServiceClient(conn))
			}
			do := func(i int) (*rlsv3.RateLimitResponse, error) {
				k := strconv.Itoa(i % keys)
				return clients[i%len(clients)].ShouldRateLimit(gctx, &rlsv3.RateLimitRequest{Domain: "load", Descriptors: []*ratelimitv3.RateLimitDescriptor{
					entries("route", "checkout", "tenant", "t"+k), entries("api_key", "k"+k), entries("zone", "/files/x")}})
			}
			t.call = func(i int) error {
				resp, err := do(i)
				if err == nil && resp.OverallCode != rlsv3.RateLimitResponse_OK {
					err = fmt.Errorf("ShouldRateLimit: %s", resp.OverallCode)
				}
				return err
			}
			// Ready: every descriptor matched a limit (the server has the
			// configuration, not just a listener).
			t.ready = func(ctx context.Context) error {
				resp, err := do(0)
				if err != nil {
					return err
				}
				if len(resp.Statuses) != 3 {
					return fmt.Errorf("%d statuses, want 3", len(resp.Statuses))
				}
				for j, st := range resp.Statuses {
					if st.CurrentLimit == nil {
						return fmt.Errorf("descriptor %d matched no limit", j)
					}
				}
				return nil
			}
		case "http":
			hc, err := client.New("http://"+t.addr, client.Options{Token: secret, Retries: -1,
				HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}})
			if err != nil {
				return fmt.Errorf("target %s: %w", t.name, err)
			}
			do := func(i int) (client.CheckResult, error) {
				ip := fmt.Sprintf("10.0.%d.%d", (i%keys)/256%256, (i%keys)%256)
				return hc.Check(ctx, client.CheckRequest{ClientIP: ip, TargetType: ratelimit.EntityMCPServer, TargetName: "load-srv"})
			}
			t.call = func(i int) error {
				res, err := do(i)
				if err == nil && !res.Allowed {
					err = fmt.Errorf("check denied: %s", res.Reason)
				}
				return err
			}
			t.ready = func(ctx context.Context) error {
				res, err := do(0)
				if err == nil && len(res.Gates) != 3 {
					err = fmt.Errorf("%d gates, want 3", len(res.Gates))
				}
				return err
			}
		}
	}
	// Wait for every target to know the configuration (an rlapi learns
	// the seeded definitions by LISTEN/NOTIFY), then warm it.
	for _, t := range ts {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		var err error
		for {
			if err = t.ready(wctx); err == nil || wctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("target %s (%s://%s) not ready: %w", t.name, t.kind, t.addr, err)
		}
		for i := range 200 {
			if err := t.call(i); err != nil {
				return fmt.Errorf("target %s warm-up: %w", t.name, err)
			}
		}
	}
	host, _ := os.Hostname()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("rlenvoy-load -targets: %d cores (GOMAXPROCS %d), %s per target and concurrency in %d rounds, %d keys, %d gRPC connections, host %s, %s, loadavg %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), duration, rounds, keys, max(grpcConns, 1), host, time.Now().UTC().Format(time.RFC3339), strings.TrimSpace(string(load)))
	// CPU per decision: what the target's own process (and the shared
	// Redis) used while its rounds ran, divided by its decisions. Unlike
	// decisions/s it hardly moves with what else the machine is doing.
	fmt.Printf("| target | call | streams | decisions/s | p50 | p99 | ÷ %s | server CPU/decision | shared CPU/decision |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n", ts[0].name)
	perDecision := func(cpu time.Duration, n int, known bool) string {
		if !known || n == 0 {
			return "-"
		}
		return (cpu / time.Duration(n)).Round(100 * time.Nanosecond).String()
	}
	for _, c := range concurrency {
		samples := make([]sample, len(ts))
		own, shared := make([]time.Duration, len(ts)), make([]time.Duration, len(ts))
		for r := range rounds {
			// Rotate the order each round so that no target always runs
			// first (or last) after the others warmed the machine.
			for j := range ts {
				k := (j + r) % len(ts)
				o0, s0 := cpuTime(ts[k].pid), cpuTime(*sharedPID)
				if err := samples[k].run(ctx, c, duration/time.Duration(rounds), ts[k].call); err != nil {
					return fmt.Errorf("target %s: %w", ts[k].name, err)
				}
				own[k] += cpuTime(ts[k].pid) - o0
				shared[k] += cpuTime(*sharedPID) - s0
			}
		}
		base := samples[0].result()
		for j, t := range ts {
			res := samples[j].result()
			call := "ShouldRateLimit, 3 descriptors"
			if t.kind == "http" {
				call = "POST /api/check, 3 gates"
			}
			n := len(samples[j].lat)
			fmt.Printf("| %s | %s | %d | %.0f | %s | %s | %.2fx | %s | %s |\n", t.name, call, c, res.rate, res.p50, res.p99, res.rate/base.rate,
				perDecision(own[j], n, t.pid > 0), perDecision(shared[j], n, *sharedPID > 0))
		}
	}
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return nil
}
