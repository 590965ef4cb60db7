package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/cputime"
	"github.com/rlctl/rlctl/pkg/client"
)

// BenchmarkCheckHTTP measures POST /api/check through the real listener,
// with the token cache off (every call looks its token up: two database
// transactions per decision, as before the cache) and on (the default:
// one, the counters), at 1 and 64 concurrent clients on keep-alive
// connections. One target gate whose limit no run reaches, so every call
// takes the full allowed path. Reported: decisions/s, p50 and p99 latency,
// pool acquires per decision (the counters' round trips are shared by
// batched decisions, so under load that is below one per decision), and
// this process's CPU per decision (client and rlapi together, PostgreSQL
// apart): the figure a busy machine still measures honestly.
//
//	go test -run '^$' -bench BenchmarkCheckHTTP -benchtime 5s ./internal/api/
func BenchmarkCheckHTTP(b *testing.B) {
	for _, cache := range []struct {
		name string
		ttl  time.Duration
	}{{"cache=off", -1}, {"cache=on", 0}} {
		for _, clients := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", cache.name, clients), func(b *testing.B) {
				benchCheck(b, api.Config{AuthMaxFailures: -1, TokenCacheTTL: cache.ttl}, clients, false)
			})
		}
	}
}

// BenchmarkCheckSDK is BenchmarkCheckHTTP's allowed path (token cache on)
// through pkg/client's Check, as a Go gateway calls rlapi: the SDK's
// encoding of the request and decoding of the answer are in its figures.
//
//	go test -run '^$' -bench BenchmarkCheckSDK -benchtime 5s ./internal/api/
func BenchmarkCheckSDK(b *testing.B) {
	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			benchCheck(b, api.Config{AuthMaxFailures: -1}, clients, true)
		})
	}
}

func benchCheck(b *testing.B, cfg api.Config, clients int, sdk bool) {
	env := apitest.Start(b, cfg)
	admin, err := client.New(env.URL, client.Options{Token: env.AdminToken, Retries: -1})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := admin.PutDefinition(context.Background(), targetLimit("mcp_server", "srv", 60, 1_000_000_000), client.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := env.Enforcer.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	gw := env.Token(b, "gateway", "enforcer")
	hc := benchHTTPClient(clients)
	body := []byte(`{"username":"alice","target_type":"mcp_server","target_name":"srv"}`)
	gwc, err := client.New(env.URL, client.Options{Token: gw, Retries: -1, HTTPClient: hc})
	if err != nil {
		b.Fatal(err)
	}
	call := client.CheckRequest{Username: "alice", TargetType: "mcp_server", TargetName: "srv"}
	check := func() error {
		if sdk {
			res, err := gwc.Check(context.Background(), call)
			if err == nil && !res.Allowed {
				err = fmt.Errorf("check: %s", res.Reason)
			}
			return err
		}
		req, err := http.NewRequest(http.MethodPost, env.URL+"/api/check", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+gw)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("check: %d", resp.StatusCode)
		}
		return nil
	}
	var wg sync.WaitGroup
	for range clients { // warm: connections, the token cache, plans
		wg.Go(func() {
			for range 20 {
				if err := check(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	var (
		mu  sync.Mutex
		lat []time.Duration
	)
	acquires := env.Store.Pool().Stat().AcquireCount()
	cpu := cputime.Process()
	start := time.Now()
	b.ResetTimer()
	if clients == 1 {
		for b.Loop() {
			t := time.Now()
			if err := check(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t))
		}
	} else {
		b.SetParallelism((clients + 1) / 2) // GOMAXPROCS 2 on the project machine
		b.RunParallel(func(pb *testing.PB) {
			var mine []time.Duration
			for pb.Next() {
				t := time.Now()
				if err := check(); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	b.StopTimer()
	elapsed := time.Since(start)
	cpu = cputime.Process() - cpu
	n := len(lat)
	if n == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64(lat[n/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[n*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(env.Store.Pool().Stat().AcquireCount()-acquires)/float64(n), "acquires/op")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/decision")
	}
	b.ReportMetric(0, "ns/op")
}
