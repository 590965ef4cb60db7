package api_test

// Benchmarks for the performance targets in docs/performance.md. They need
// DATABASE_URL (make bench sets it) and run only with -bench:
//
//	DATABASE_URL=$(scripts/devdb.sh url) go test -run '^$' -bench . -benchmem -count 3 ./internal/api/
//
// Server, clients and PostgreSQL share the machine, so every figure is the
// whole system's on that machine, not rlapi's alone.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// benchHTTPClient keeps one connection per concurrent client alive: with
// fewer idle connections per host than clients, every request beyond the
// limit would pay a TCP handshake and leave a socket in TIME_WAIT.
func benchHTTPClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// seedGroups inserts caller:group:<prefix><i>:60 for i in [0, n) with
// user_max_requests 100, in one statement. The rows satisfy every CHECK
// constraint of the schema, so they are what a PUT would have stored.
func seedGroups(b *testing.B, env *apitest.Env, prefix string, n int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := env.Store.Pool().Exec(ctx, `
		insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, updated_by)
		select 'caller:group:' || $1 || i || ':60', 'caller', 'group', $1 || i, 60, 100, 'bench'
		from generate_series(0, $2::int - 1) as i`, prefix, n)
	if err != nil {
		b.Fatalf("seed %d definitions: %v", n, err)
	}
	// Fresh statistics, as autovacuum would give a long-lived table.
	if _, err := env.Store.Pool().Exec(ctx, `analyze rl_definitions`); err != nil {
		b.Fatal(err)
	}
}

const (
	putClients      = 16 // target: 2,000 PUT/s with 16 concurrent clients
	putIDsPerClient = 64 // each client cycles over its own ids
)

// BenchmarkPutDefinition measures PUT /api/rate-limits/{id} through the SDK
// with 16 concurrent clients on keep-alive connections. Every client owns
// putIDsPerClient definitions (seeded beforehand) and cycles over them,
// raising user_max_requests each round, so every PUT is a real update:
// advisory lock, read of the before-image, upsert and audit row, committed
// with synchronous_commit on. No two clients ever write the same id, so
// the figure is throughput, not lock contention.
func BenchmarkPutDefinition(b *testing.B) {
	env := apitest.Start(b, api.Config{AuthMaxFailures: -1})
	seedGroups(b, env, "g-", putClients*putIDsPerClient)
	c, err := client.New(env.URL, client.Options{
		Token: env.AdminToken, HTTPClient: benchHTTPClient(putClients), Retries: -1, Timeout: 30 * time.Second,
	})
	if err != nil {
		b.Fatal(err)
	}
	put := func(ctx context.Context, worker, seq int) error {
		// Seeded at 100; 1000+seq differs from it and from the previous round.
		limit := 1000 + seq/putIDsPerClient
		d := ratelimit.Definition{
			Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup,
			Name:          fmt.Sprintf("g-%d", worker*putIDsPerClient+seq%putIDsPerClient),
			WindowSeconds: 60, UserMaxRequests: &limit, Enabled: true,
		}
		res, err := c.PutDefinition(ctx, d, client.WriteOptions{})
		if err == nil && res.Created {
			err = fmt.Errorf("PUT %s created a definition; the benchmark expects updates of seeded rows", d.Key())
		}
		return err
	}

	// Warm up outside the timer: open the HTTP connections and the
	// database pool's connections. The warm-up rounds count towards seq so
	// that the first timed PUT of every id still changes it.
	seqs := make([]int, putClients)
	var wg sync.WaitGroup
	for w := range putClients {
		wg.Go(func() {
			for range 4 {
				if err := put(context.Background(), w, seqs[w]); err != nil {
					b.Error(err)
					return
				}
				seqs[w] += putIDsPerClient // next round: a new value for the same id
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}

	var (
		nextWorker atomic.Int64
		errs       atomic.Int64
		errOnce    sync.Once
		firstErr   error
	)
	// RunParallel starts parallelism*GOMAXPROCS goroutines; size it so
	// that there are putClients of them on this machine (8 x 2 cores).
	b.SetParallelism(max(1, putClients/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := int(nextWorker.Add(1)-1) % putClients
		seq := seqs[w]
		ctx := context.Background()
		for pb.Next() {
			if err := put(ctx, w, seq); err != nil {
				errs.Add(1)
				errOnce.Do(func() { firstErr = err })
			}
			seq++
		}
	})
	b.StopTimer()
	if n := errs.Load(); n > 0 {
		b.Fatalf("%d of %d PUTs failed; first: %v", n, b.N, firstErr)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// listAll GETs the unpaged list and reads the whole body, returning its
// size. It does not decode: the figure is what the server takes to produce
// and send the list, not what a client spends parsing it.
func listAll(ctx context.Context, hc *http.Client, env *apitest.Env) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, env.URL+"/api/rate-limits", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return n, err
	}
	if resp.StatusCode != http.StatusOK {
		return n, fmt.Errorf("GET /api/rate-limits: status %d", resp.StatusCode)
	}
	return n, nil
}

// checkListCount decodes one full list and checks it holds want definitions.
func checkListCount(b *testing.B, hc *http.Client, env *apitest.Env, want int) {
	b.Helper()
	req, err := http.NewRequest(http.MethodGet, env.URL+"/api/rate-limits", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Definitions []json.RawMessage `json:"definitions"`
		NextCursor  string            `json:"next_cursor"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		b.Fatalf("decode list: %v", err)
	}
	if len(page.Definitions) != want || page.NextCursor != "" {
		b.Fatalf("list has %d definitions (next_cursor %q), want %d and no cursor", len(page.Definitions), page.NextCursor, want)
	}
}

// BenchmarkListDefinitions10k measures GET /api/rate-limits of 10,000
// definitions plus the two quarantine sentinels, unpaged, on a keep-alive
// connection, reading the whole body. ns/op is the latency of one list.
func BenchmarkListDefinitions10k(b *testing.B) {
	const rows = 10_000
	env := apitest.Start(b, api.Config{AuthMaxFailures: -1})
	seedGroups(b, env, "g-", rows)
	hc := benchHTTPClient(1)
	checkListCount(b, hc, env, rows+2)

	ctx := context.Background()
	var size int64
	for b.Loop() {
		n, err := listAll(ctx, hc, env)
		if err != nil {
			b.Fatal(err)
		}
		size = n
	}
	b.ReportMetric(float64(size), "bytes/resp")
}

// BenchmarkListMemory shows that the server streams the list instead of
// building it in memory, by comparing 1,000 and 10,000 rows. The server
// runs in this process, so the runtime's statistics cover it; the client
// side only copies the body into io.Discard, a constant.
//
// Two measurements per size, each from its own request:
//
//   - B/row, allocs/row: bytes and objects allocated per listed row
//     (runtime.MemStats TotalAlloc and Mallocs around one request, divided
//     by the rows). Constant per row means the same work per row at any
//     size. It cannot tell streaming from buffering on its own: a buffering
//     server allocates per row too.
//   - live-B-paused: the live heap, above the live heap before the
//     request, while the server is held late in the stream. The client
//     reads the body up to pauseMargin bytes before its end (all of it but
//     the headers when the body is smaller) and then stops, so the server
//     blocks writing once the socket buffers are full; startSmallBuffers
//     caps them, else loopback autotuning would swallow a 3 MB list whole.
//     The test waits until nothing allocates, checks that the list handler
//     is still running, and runs two full GCs: HeapAlloc is then exactly
//     what the in-flight request holds. A server that built the rows or
//     the encoded body before writing, or that kept anything per row sent,
//     would hold it here: about 1 MB per 1,000 rows, so megabytes at
//     10,000 rows paused after some 8,000. A streaming one holds the same
//     few buffers at both sizes. paused-at-% says where the pause fell.
//
// Sampling the heap during a running request instead does not work on this
// machine: objects allocated while a GC runs count as live in its result,
// and with the cores busy the samples swing by megabytes of per-row garbage.
//
// The pauses and small buffers slow the requests down, so ns/op here means
// nothing (BenchmarkListDefinitions10k measures the time), and B/op and
// allocs/op cover both requests of an iteration.
func BenchmarkListMemory(b *testing.B) {
	for _, rows := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			env := startSmallBuffers(b)
			seedGroups(b, env, "g-", rows-2) // plus the two sentinels
			hc := smallBufferClient()
			checkListCount(b, hc, env, rows)
			ctx := context.Background()
			size, err := listAll(ctx, hc, env) // warm: connections, plans
			if err != nil {
				b.Fatal(err)
			}
			skip := max(0, size-pauseMargin)

			var (
				allocBytes, allocObjs uint64
				held                  []uint64
				before, after         runtime.MemStats
			)
			b.ReportAllocs()
			for b.Loop() {
				runtime.ReadMemStats(&before)
				if _, err := listAll(ctx, hc, env); err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&after)
				allocBytes += after.TotalAlloc - before.TotalAlloc
				allocObjs += after.Mallocs - before.Mallocs

				live, err := liveHeapMidStream(ctx, hc, env, skip)
				if err != nil {
					b.Fatal(err)
				}
				held = append(held, live)
			}
			n := float64(len(held))
			b.ReportMetric(float64(allocBytes)/n/float64(rows), "B/row")
			b.ReportMetric(float64(allocObjs)/n/float64(rows), "allocs/row")
			b.ReportMetric(float64(slices.Max(held)), "live-B-paused")
			b.ReportMetric(100*float64(skip)/float64(size), "paused-at-%")
		})
	}
}

// pauseMargin is how much of the body liveHeapMidStream leaves unread: more
// than the capped socket buffers hold, so the server is still writing.
const pauseMargin = 512 << 10

// Socket buffer sizes asked for (the kernel doubles them): small enough
// that 300 kB (a 1,000-row list) cannot sit whole in the buffers of an
// unread connection, large enough (a loopback segment is 64 kB) not to
// stall on delayed ACKs.
const (
	serverSendBuffer = 16 << 10
	clientRecvBuffer = 64 << 10
)

// startSmallBuffers serves rlapi as apitest.Start does, but caps the kernel
// send buffer of every accepted connection. Only kernel buffers change: the
// server's code and heap are as deployed.
func startSmallBuffers(b *testing.B) *apitest.Env {
	b.Helper()
	st := pgtest.NewStore(b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := api.New(st, api.Config{AuthMaxFailures: -1}, api.Opts{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, smallSendBuffers{ln.(*net.TCPListener)}) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.Errorf("rlapi stopped with: %v", err)
		}
	})
	env := &apitest.Env{URL: "http://" + ln.Addr().String(), Store: st}
	env.AdminToken = env.Token(b, "bench-admin", ratelimit.RoleAdmin)
	return env
}

type smallSendBuffers struct{ *net.TCPListener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	if err := c.SetWriteBuffer(serverSendBuffer); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// smallBufferClient is benchHTTPClient with a capped receive buffer, which
// also turns off the kernel's receive-buffer autotuning.
func smallBufferClient() *http.Client {
	hc := benchHTTPClient(1)
	d := &net.Dialer{Timeout: 5 * time.Second}
	hc.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := c.(*net.TCPConn).SetReadBuffer(clientRecvBuffer); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	return hc
}

// liveHeap runs two full GCs (the second frees what became garbage while
// the first ran) and returns the live heap.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// liveHeapMidStream starts a full list, reads skip bytes of its body, waits
// for the server to block on the unread rest, and returns the live heap
// above the live heap before the request.
func liveHeapMidStream(ctx context.Context, hc *http.Client, env *apitest.Env, skip int64) (uint64, error) {
	base := liveHeap()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, env.URL+"/api/rate-limits", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	defer io.Copy(io.Discard, resp.Body) //nolint:errcheck // drain, so the connection is reused
	if _, err := io.CopyN(io.Discard, resp.Body, skip); err != nil {
		return 0, err
	}

	// The server must be blocked, not waiting for a delayed ACK (up to
	// 200ms): nothing may allocate for 250ms, nor while the GCs run, since
	// what is allocated during a GC counts as live in its result.
	var ms runtime.MemStats
	for deadline := time.Now().Add(10 * time.Second); ; {
		if time.Now().After(deadline) {
			return 0, errors.New("the server did not block mid-stream within 10s")
		}
		if !allocationStopped(250 * time.Millisecond) {
			continue
		}
		if !listHandlerRunning() {
			return 0, errors.New("the list was complete before the pause: it fits in the socket buffers, so the measurement would see nothing")
		}
		runtime.ReadMemStats(&ms)
		allocated := ms.TotalAlloc
		live := liveHeap()
		runtime.ReadMemStats(&ms)
		if ms.TotalAlloc-allocated < 1<<10 {
			return max(live, base) - base, nil
		}
	}
}

// allocationStopped reports whether the process allocated nothing during d,
// polling every 10ms.
func allocationStopped(d time.Duration) bool {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	start := ms.TotalAlloc
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
		runtime.ReadMemStats(&ms)
		if ms.TotalAlloc != start {
			return false
		}
	}
	return true
}

// listHandlerRunning reports whether a goroutine is inside the list
// handler, i.e. the response is not complete, from the goroutine stacks.
// Should the handler be renamed, the benchmark fails rather than lies.
func listHandlerRunning() bool {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	return bytes.Contains(buf.Bytes(), []byte("handleListDefinitions"))
}
