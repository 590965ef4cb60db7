package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/envoyrls"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// h2Attacker speaks raw HTTP/2 to the gRPC listener, as a hostile client
// would: it opens streams to ShouldRateLimit, declares a large message on
// each and sends as much of it as the server's flow control lets it, never
// finishing it. It honours flow control (a client that does not is simply
// disconnected), so what the server buffers is what it chose to accept.
type h2Attacker struct {
	conn net.Conn
	fr   *http2.Framer
	wmu  sync.Mutex // the framer's writes

	mu      sync.Mutex
	connWin int64
	initWin int64
	win     map[uint32]int64 // open streams' send windows
	refused map[codes.Code]int
	closed  bool
}

func dialAttacker(t *testing.T, addr string) *h2Attacker {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	a := &h2Attacker{conn: c, fr: http2.NewFramer(c, c), connWin: 65535, initWin: 65535,
		win: map[uint32]int64{}, refused: map[codes.Code]int{}}
	a.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := a.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	go a.read()
	t.Cleanup(func() { c.Close() })
	return a
}

// read follows the server: settings, window updates and the end of streams.
func (a *h2Attacker) read() {
	defer func() {
		a.mu.Lock()
		a.closed = true
		a.mu.Unlock()
	}()
	for {
		f, err := a.fr.ReadFrame()
		if err != nil {
			return
		}
		a.mu.Lock()
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
					for id := range a.win {
						a.win[id] += int64(v) - a.initWin
					}
					a.initWin = int64(v)
				}
				a.mu.Unlock()
				a.wmu.Lock()
				_ = a.fr.WriteSettingsAck()
				a.wmu.Unlock()
				a.mu.Lock()
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				a.connWin += int64(f.Increment)
			} else if _, ok := a.win[f.StreamID]; ok {
				a.win[f.StreamID] += int64(f.Increment)
			}
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				code := codes.Unknown
				if v := f.PseudoValue("status"); v == "200" {
					for _, hf := range f.RegularFields() {
						if hf.Name == "grpc-status" {
							var n int
							for _, ch := range hf.Value {
								n = n*10 + int(ch-'0')
							}
							code = codes.Code(n)
						}
					}
				}
				a.refused[code]++
				delete(a.win, f.StreamID)
			}
		case *http2.RSTStreamFrame:
			a.refused[codes.Unavailable]++
			delete(a.win, f.StreamID)
		case *http2.GoAwayFrame:
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
	}
}

// open starts n calls to ShouldRateLimit (with token unless it is empty)
// and, when declared is not 0, the first bytes of a message of that length.
func (a *h2Attacker) open(t *testing.T, n int, token string, declared uint32) []uint32 {
	t.Helper()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	ids := make([]uint32, 0, n)
	for i := range n {
		id := uint32(2*i + 1)
		hb.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"},
			{":path", "/" + rlsv3.RateLimitService_ServiceDesc.ServiceName + "/ShouldRateLimit"},
			{":authority", "rlapi"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if token != "" {
			_ = enc.WriteField(hpack.HeaderField{Name: "authorization", Value: "Bearer " + token})
		}
		a.mu.Lock()
		a.win[id] = a.initWin
		a.mu.Unlock()
		a.wmu.Lock()
		err := a.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true})
		if err == nil && declared > 0 {
			var prefix [5]byte
			binary.BigEndian.PutUint32(prefix[1:], declared)
			err = a.fr.WriteData(id, false, prefix[:])
		}
		a.wmu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		a.mu.Lock()
		a.win[id] -= 5
		a.connWin -= 5
		a.mu.Unlock()
		ids = append(ids, id)
	}
	return ids
}

// send pushes message bytes on the streams still open, as far as the
// server's windows allow, until it has sent total bytes on each or the
// windows stay shut for quiet.
func (a *h2Attacker) send(total int64, quiet time.Duration) {
	chunk := make([]byte, 16384)
	sent := map[uint32]int64{}
	idle := time.Now().Add(quiet)
	for {
		a.mu.Lock()
		var id uint32
		var n int64
		for s, w := range a.win {
			if sent[s] < total && w > 0 && a.connWin > 0 {
				id, n = s, min(w, a.connWin, int64(len(chunk)), total-sent[s])
				break
			}
		}
		closed := a.closed
		if id != 0 {
			a.win[id] -= n
			a.connWin -= n
		}
		a.mu.Unlock()
		if id == 0 {
			if closed || time.Now().After(idle) {
				return
			}
			time.Sleep(10 * time.Millisecond) // for a window update
			continue
		}
		a.wmu.Lock()
		err := a.fr.WriteData(id, false, chunk[:n])
		a.wmu.Unlock()
		if err != nil {
			return
		}
		sent[id] += n
		idle = time.Now().Add(quiet)
	}
}

func (a *h2Attacker) refusals() map[codes.Code]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := make(map[codes.Code]int, len(a.refused))
	for k, v := range a.refused {
		m[k] = v
	}
	return m
}

// heapInUse is the process's live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestGRPCUnauthenticatedFloodHoldsNothing: callers without a token open
// streams that declare a 4 MB message and send what flow control allows,
// or open streams with headers only, and never finish them. rlapi refuses
// each from its metadata, before reading any of its message: its heap and
// its goroutines stay where they were. With a valid token, a message
// larger than the largest valid request is refused before it is read.
func TestGRPCUnauthenticatedFloodHoldsNothing(t *testing.T) {
	// Not parallel: the heap and goroutine counts are the process's.
	dsn := pgtest.NewMigratedDatabase(t)
	vars := env(map[string]string{"DATABASE_URL": dsn})
	tok := createToken(t, vars, "envoy", "enforcer")
	grpcAddr := freeAddr(t)
	startServe(t, vars, "--grpc-addr", grpcAddr)

	const conns, streams, declared = 4, 25, 4_194_000
	before, goroutines := heapInUse(), runtime.NumGoroutine()
	var attackers []*h2Attacker
	for range conns {
		a := dialAttacker(t, grpcAddr)
		a.open(t, streams, "", declared)
		attackers = append(attackers, a)
	}
	var wg sync.WaitGroup
	for _, a := range attackers {
		wg.Go(func() { a.send(declared, 2*time.Second) })
	}
	wg.Wait()
	after := heapInUse()
	// 4 x 25 streams of 4 MB would be 400 MB; the refusals leave at most
	// the connections' own buffers and what the collector has not yet
	// returned.
	if grown := int64(after) - int64(before); grown > 48<<20 {
		t.Errorf("the heap grew by %d MB under %d unauthenticated streams declaring %d bytes each, want under 48 MB", grown>>20, conns*streams, declared)
	}
	for i, a := range attackers {
		if got := a.refusals()[codes.Unauthenticated]; got != streams {
			t.Errorf("connection %d: %d of %d streams refused Unauthenticated (%v)", i, got, streams, a.refusals())
		}
	}

	// Headers only: no goroutine waits for a message that never comes.
	for range conns {
		dialAttacker(t, grpcAddr).open(t, 500, "", 0)
	}
	time.Sleep(500 * time.Millisecond) // let the server take the frames
	if grown := runtime.NumGoroutine() - goroutines; grown > 200 {
		t.Errorf("%d goroutines more after %d header-only unauthenticated streams, want under 200", grown, conns*500)
	}

	// A token only the database can judge: at most DefaultMaxUnverified
	// such calls are read at once (each at most a valid request's size);
	// the rest are refused from their metadata.
	bogus := dialAttacker(t, grpcAddr)
	bogus.open(t, 50, "not-a-token", 2_000_000)
	bogus.send(2_000_000, 2*time.Second)
	// Each stream ends with a status (a reset may follow it): the ones let
	// through are refused by their handler (Unauthenticated, or Internal
	// when their junk message could not even be decoded).
	r := bogus.refusals()
	if r[codes.Unauthenticated]+r[codes.Internal]+r[codes.ResourceExhausted] != 50 || r[codes.ResourceExhausted] < 50-envoyrls.DefaultMaxUnverified {
		t.Errorf("50 streams with a bogus token: %v; want every one refused, all but %d of them before being read", r, envoyrls.DefaultMaxUnverified)
	}
	if grown := int64(heapInUse()) - int64(before); grown > 64<<20 {
		t.Errorf("the heap grew by %d MB with bogus tokens, want under 64 MB", grown>>20)
	}

	// A valid token does not make an oversized message acceptable.
	a := dialAttacker(t, grpcAddr)
	a.open(t, 10, tok, declared)
	a.send(declared, 2*time.Second)
	if got := a.refusals()[codes.ResourceExhausted]; got != 10 {
		t.Errorf("%d of 10 authenticated streams declaring %d bytes refused ResourceExhausted (%v)", got, declared, a.refusals())
	}

	// The listener still serves a well-behaved caller.
	rls := rlsv3.NewRateLimitServiceClient(dialGRPC(t, grpcAddr))
	_, err := rls.ShouldRateLimit(metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tok), oneDescriptor("edge", "x"))
	if err != nil {
		t.Errorf("a valid call after the flood: %v", err)
	}
	if _, err := rls.ShouldRateLimit(t.Context(), oneDescriptor("edge", "x")); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a call without a token: %v, want Unauthenticated", err)
	}
}

// TestGRPCCapsConnectionsAndHandshakes: --grpc-max-conns holds the gRPC
// listener to its cap (a connection past it waits until one closes), and a
// connection that never completes the HTTP/2 handshake is closed well
// before grpc-go's default of two minutes.
func TestGRPCCapsConnectionsAndHandshakes(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	vars := env(map[string]string{"DATABASE_URL": dsn})
	tok := createToken(t, vars, "envoy", "enforcer")
	grpcAddr := freeAddr(t)
	startServe(t, vars, "--grpc-addr", grpcAddr, "--grpc-max-conns", "1")

	silent, err := net.Dial("tcp", grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// The silent connection holds the only slot until the handshake
	// timeout closes it; a read sees that close.
	_ = silent.SetReadDeadline(time.Now().Add(60 * time.Second))
	_, err = silent.Read(make([]byte, 1024))
	for err == nil {
		_, err = silent.Read(make([]byte, 1024)) // the server's SETTINGS, then the close
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a connection that never sent the HTTP/2 preface was still open after 60 s")
	}

	// The slot is free again: a real client is served.
	authed := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tok)
	if _, err := rlsv3.NewRateLimitServiceClient(dialGRPC(t, grpcAddr)).ShouldRateLimit(authed, oneDescriptor("edge", "x")); err != nil {
		t.Fatalf("a call once the silent connection was closed: %v", err)
	}
	// The held connection has the slot: a second one is not served while
	// it lasts. Not being answered is the expected outcome, so a slow
	// machine cannot fail this.
	second, err := net.Dial("tcp", grpcAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if _, err := io.WriteString(second, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	_ = second.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if n, err := second.Read(make([]byte, 64)); n > 0 || err == nil {
		t.Errorf("a second connection was answered while the cap of 1 was held")
	}
}

// oneDescriptor is a request of one generic_key descriptor.
func oneDescriptor(domain, value string) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: domain, Descriptors: []*ratelimitv3.RateLimitDescriptor{{
		Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "generic_key", Value: value}}}}}
}

// TestGRPCBurstNeverAdmitsAUsedUpCaller: 10,000 concurrent ShouldRateLimit
// calls over 80 connections, half of them for a descriptor whose limit is
// used up. The used-up descriptor is answered OVER_LIMIT every time (never
// OK, nor an error Envoy could turn into an allow); a fresh one OK or
// RESOURCE_EXHAUSTED (shed): a burst is shed, never decided by the fail
// policy.
func TestGRPCBurstNeverAdmitsAUsedUpCaller(t *testing.T) {
	dsn := pgtest.NewMigratedDatabase(t)
	vars := env(map[string]string{"DATABASE_URL": dsn})
	adminTok := createToken(t, vars, "admin", "admin")
	tok := createToken(t, vars, "envoy", "enforcer")
	grpcAddr := freeAddr(t)
	// Trusted: no token to verify, so every answer is the limit's or the
	// shedding's.
	httpAddr, _ := startServe(t, vars, "--grpc-addr", grpcAddr, "--grpc-trusted-clients", "127.0.0.0/8")
	admin, err := client.New("http://"+httpAddr, client.Options{Token: adminTok})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		value string
		limit int
	}{{"hog", 1}, {"fresh", 1_000_000}} {
		d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: 86400,
			MaxRequests: new(c.limit), Enabled: true, DescriptorFields: ratelimit.DescriptorFields{Domain: "edge",
				Descriptor: []ratelimit.DescriptorEntry{{Key: "generic_key", Value: c.value}}}}
		if _, err := admin.PutDefinition(t.Context(), d, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	authed := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tok)
	conns := make([]rlsv3.RateLimitServiceClient, 80)
	for i := range conns {
		conns[i] = rlsv3.NewRateLimitServiceClient(dialGRPC(t, grpcAddr))
	}
	// Use the hog's limit up, once the replica knows the definitions.
	// (grpc.NewClient connects lazily: the connections are opened below,
	// before the burst, so that what the burst measures is the server's
	// answers, not 80 handshakes racing 10,000 calls on a loaded machine.)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := conns[0].ShouldRateLimit(authed, oneDescriptor("edge", "hog"))
		if err == nil && resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hog's limit never applied: %v %v", resp, err)
		}
	}

	for i, c := range conns {
		if _, err := c.ShouldRateLimit(authed, oneDescriptor("edge", "fresh")); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}

	start := time.Now()
	var mu sync.Mutex
	got := map[string]int{}
	why := map[string]string{} // an error message per outcome, for a failure's report
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range 10_000 {
		wg.Go(func() {
			value := "hog"
			if i%2 == 1 {
				value = "fresh"
			}
			<-gate
			resp, err := conns[i%len(conns)].ShouldRateLimit(authed, oneDescriptor("edge", value))
			outcome := status.Code(err).String()
			if err == nil {
				outcome = resp.OverallCode.String()
			}
			mu.Lock()
			got[value+" "+outcome]++
			if err != nil {
				why[value+" "+outcome] = err.Error()
			}
			mu.Unlock()
		})
	}
	close(gate)
	wg.Wait()
	if start.Unix()/86400 != time.Now().Unix()/86400 {
		t.Skip("the day's window turned during the test")
	}
	for k, n := range got {
		switch k {
		// The used-up descriptor is OVER_LIMIT whatever happens: an error
		// (shed) would let Envoy's failure_mode_deny admit it.
		case "hog OVER_LIMIT", "fresh OK", "fresh ResourceExhausted":
		default:
			t.Errorf("%d calls answered %s (%s; all: %v)", n, k, why[k], got)
		}
	}
	if got["hog OK"] != 0 {
		t.Errorf("the used-up descriptor was admitted %d times in the burst, want 0 (%v)", got["hog OK"], got)
	}
	t.Logf("answers: %v", got)
}

// Callers without a token may use the health and reflection services, in
// bounded numbers: long-lived streams (health Watch) have their own cap,
// so held streams never keep a probe's health Check from being answered.
func TestGRPCHealthChecksSurviveHeldWatches(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	grpcAddr := freeAddr(t)
	startServe(t, env(map[string]string{"DATABASE_URL": dsn}), "--grpc-addr", grpcAddr)
	hc := healthpb.NewHealthClient(dialGRPC(t, grpcAddr))
	req := &healthpb.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"}
	var refused error
	for i := range 40 {
		w, err := hc.Watch(t.Context(), req)
		if err == nil {
			_, err = w.Recv() // the first status, or the refusal
		}
		if err != nil {
			refused = err
			if i == 0 {
				t.Fatalf("the first Watch: %v", err)
			}
			break
		}
	}
	if status.Code(refused) != codes.ResourceExhausted {
		t.Fatalf("40 Watch streams held at once: last error %v, want ResourceExhausted past the cap", refused)
	}
	if r, err := hc.Check(t.Context(), req); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("a health Check while Watch streams fill their cap: %v %v, want SERVING", r, err)
	}
}
