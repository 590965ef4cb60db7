package envoyrls_test

// ShouldRateLimit through a real gRPC client built from the published
// Envoy API (go-control-plane) on a real listener, over a real rlapi and
// PostgreSQL. The enforcer and the service share a fixed clock, so no
// window turns during a test.

import (
	"context"
	"errors"
	"math"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
	"github.com/rlctl/rlctl/pkg/envoyrls"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// testNow is the tests' clock: 10 s into an hour (and a day), so that
// windows of a minute, an hour and a day all end well after it.
var testNow = time.Date(2026, 3, 1, 0, 0, 10, 0, time.UTC)

type harness struct {
	env   *apitest.Env
	admin *client.Client
	enf   *enforce.Enforcer
	rec   *violations.Recorder
	rls   rlsv3.RateLimitServiceClient
}

func start(t *testing.T, mut func(*envoyrls.Options)) *harness {
	t.Helper()
	// rlapi's retention sweep runs on the real clock and would delete the
	// record's rows, whose minutes are testNow's (months ago), whenever it
	// happens to run after a test's flush: it is off here.
	env := apitest.Start(t, api.Config{EventsRetention: -1})
	return startOn(t, env, mut)
}

// startOn serves the gRPC service over env's database with an enforcer of
// its own (a replica of rlapi's, on the test clock).
func startOn(t *testing.T, env *apitest.Env, mut func(*envoyrls.Options)) *harness {
	t.Helper()
	// A backend timeout no loaded test machine reaches: a decision the
	// fail-open policy answered would count nothing, and the counts below
	// are exact.
	rec, err := violations.New(postgres.NewEventSink(env.Store.Pool()), violations.Opts{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	enf, err := postgres.New(context.Background(), env.Store.Pool(), enforce.Options{SweepInterval: -1, BackendTimeout: time.Minute,
		Now: func() time.Time { return testNow }, Observers: []enforce.Observer{rec}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { enf.Close(); rec.Close() })
	opts := envoyrls.Options{Enforcer: enf, Now: func() time.Time { return testNow }}
	if mut != nil {
		mut(&opts)
	}
	conn := serve(t, opts)
	admin, err := client.New(env.URL, client.Options{Token: env.AdminToken, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{env: env, admin: admin, enf: enf, rec: rec, rls: rlsv3.NewRateLimitServiceClient(conn)}
}

// serve serves a Service of opts on a gRPC server of its own, built with
// sopts, and returns a client connection to it.
func serve(t *testing.T, opts envoyrls.Options, sopts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	svc, err := envoyrls.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(sopts...)
	svc.Register(gs)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func (h *harness) define(t *testing.T, defs ...ratelimit.Definition) {
	t.Helper()
	for _, d := range defs {
		if _, err := h.admin.PutDefinition(t.Context(), d, client.WriteOptions{}); err != nil {
			t.Fatalf("put %s: %v", d.Key(), err)
		}
	}
	h.refresh(t)
}

func (h *harness) refresh(t *testing.T) {
	t.Helper()
	if err := h.enf.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func desc(domain string, window, limit int, kv ...string) ratelimit.Definition {
	d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: window, Enabled: true}
	if limit > 0 {
		d.MaxRequests = &limit
	} else {
		d.Unlimited = true
	}
	d.Domain = domain
	for i := 0; i < len(kv); i += 2 {
		d.Descriptor = append(d.Descriptor, ratelimit.DescriptorEntry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// rd is a request descriptor of key, value pairs.
func rd(kv ...string) *ratelimitv3.RateLimitDescriptor {
	d := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i < len(kv); i += 2 {
		d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func (h *harness) ask(t *testing.T, domain string, ds ...*ratelimitv3.RateLimitDescriptor) *rlsv3.RateLimitResponse {
	t.Helper()
	resp, err := h.rls.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds})
	if err != nil {
		t.Fatalf("ShouldRateLimit(%s): %v", domain, err)
	}
	if len(resp.Statuses) != len(ds) {
		t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(ds))
	}
	return resp
}

// codes renders the overall code and each descriptor's.
func codesOf(r *rlsv3.RateLimitResponse) string {
	s := []string{r.OverallCode.String()}
	for _, st := range r.Statuses {
		s = append(s, st.Code.String())
	}
	return strings.Join(s, " ")
}

// TestShouldRateLimitCountsAndAnswers: a limit admits its
// requests_per_unit, then answers OVER_LIMIT, with current_limit,
// limit_remaining and duration_until_reset per descriptor.
func TestShouldRateLimitCountsAndAnswers(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.define(t, desc("mongo_cps", 60, 2, "database", "users"))
	for i, want := range []string{"OK OK", "OK OK", "OVER_LIMIT OVER_LIMIT"} {
		r := h.ask(t, "mongo_cps", rd("database", "users"))
		if got := codesOf(r); got != want {
			t.Fatalf("request %d: %s, want %s", i+1, got, want)
		}
		st := r.Statuses[0]
		if st.CurrentLimit == nil || st.CurrentLimit.RequestsPerUnit != 2 || st.CurrentLimit.Unit != rlsv3.RateLimitResponse_RateLimit_MINUTE {
			t.Fatalf("request %d: current_limit %v, want 2 per MINUTE", i+1, st.CurrentLimit)
		}
		if wantRemaining := uint32(max(1-i, 0)); st.LimitRemaining != wantRemaining {
			t.Errorf("request %d: limit_remaining %d, want %d", i+1, st.LimitRemaining, wantRemaining)
		}
		if d := st.DurationUntilReset.AsDuration(); d != 50*time.Second {
			t.Errorf("request %d: duration_until_reset %v, want 50s (the minute ends 50 s after the clock)", i+1, d)
		}
	}
	// Another value of the key has no limit: it matches nothing.
	if got := codesOf(h.ask(t, "mongo_cps", rd("database", "orders"))); got != "OK OK" {
		t.Errorf("database=orders: %s, want OK", got)
	}
}

// TestMostSpecificMatchWins: the exact value wins over the key alone, and
// the key alone counts each value on its own; a request deeper or
// shallower than the configuration matches nothing.
func TestMostSpecificMatchWins(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.define(t, desc("rl", 3600, 1, "key1", ""), desc("rl", 3600, 3, "key1", "value1"),
		desc("rl", 3600, 1, "key1", "value1", "key2", ""))
	for i := range 3 {
		if got := codesOf(h.ask(t, "rl", rd("key1", "value1"))); got != "OK OK" {
			t.Fatalf("key1=value1 request %d: %s, want OK (limit 3)", i+1, got)
		}
	}
	if got := codesOf(h.ask(t, "rl", rd("key1", "value1"))); got != "OVER_LIMIT OVER_LIMIT" {
		t.Errorf("key1=value1 request 4: %s, want OVER_LIMIT", got)
	}
	for _, v := range []string{"a", "b"} {
		if got := codesOf(h.ask(t, "rl", rd("key1", v))); got != "OK OK" {
			t.Errorf("key1=%s first request: %s, want OK (each value its own counter)", v, got)
		}
		if got := codesOf(h.ask(t, "rl", rd("key1", v))); got != "OVER_LIMIT OVER_LIMIT" {
			t.Errorf("key1=%s second request: %s, want OVER_LIMIT", v, got)
		}
	}
	// Nested: key1=value1, key2=<any>.
	if got := codesOf(h.ask(t, "rl", rd("key1", "value1", "key2", "x"))); got != "OK OK" {
		t.Errorf("nested first: %s, want OK", got)
	}
	if got := codesOf(h.ask(t, "rl", rd("key1", "value1", "key2", "x"))); got != "OVER_LIMIT OVER_LIMIT" {
		t.Errorf("nested second: %s, want OVER_LIMIT", got)
	}
	// Deeper than any configuration: no limit.
	if r := h.ask(t, "rl", rd("key1", "a", "key3", "z")); codesOf(r) != "OK OK" || r.Statuses[0].CurrentLimit != nil {
		t.Errorf("deeper request: %s %v, want OK without a limit", codesOf(r), r.Statuses[0].CurrentLimit)
	}
}

// TestWildcardAndShareThreshold: a wildcard value matches by pattern;
// without share_threshold each value counts on its own, with it all share.
func TestWildcardAndShareThreshold(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	shared := desc("files", 3600, 2, "path", "/shared/*")
	shared.ShareThreshold = true
	h.define(t, desc("files", 3600, 1, "path", "/own/*"), shared)
	for _, p := range []string{"/own/a", "/own/b"} {
		if got := codesOf(h.ask(t, "files", rd("path", p))); got != "OK OK" {
			t.Errorf("%s: %s, want OK (own counter)", p, got)
		}
	}
	if got := codesOf(h.ask(t, "files", rd("path", "/own/a"))); got != "OVER_LIMIT OVER_LIMIT" {
		t.Errorf("/own/a again: %s, want OVER_LIMIT", got)
	}
	for i, p := range []string{"/shared/a.pdf", "/shared/b.csv", "/shared/c"} {
		want := "OK OK"
		if i == 2 {
			want = "OVER_LIMIT OVER_LIMIT"
		}
		if got := codesOf(h.ask(t, "files", rd("path", p))); got != want {
			t.Errorf("%s (request %d on the shared threshold): %s, want %s", p, i+1, got, want)
		}
	}
	if got := codesOf(h.ask(t, "files", rd("path", "/other"))); got != "OK OK" {
		t.Errorf("/other: %s, want OK (no match)", got)
	}
}

// TestUnlimitedReplacesShadow: unlimited answers OK with remaining
// 4294967295; a limit that replaces another by name leaves the other
// unevaluated; shadow_mode counts but answers OK.
func TestUnlimitedReplacesShadow(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	general := desc("rl", 3600, 1, "category", "read")
	general.LimitName = "read"
	special := desc("rl", 3600, 3, "category", "read", "endpoint", "/search")
	special.Replaces = []string{"read"}
	shadow := desc("rl", 3600, 1, "bulk", "")
	shadow.Mode = ratelimit.ModeShadow
	h.define(t, desc("rl", 1, 0, "user", "vip"), general, special, shadow)

	for range 5 {
		r := h.ask(t, "rl", rd("user", "vip"))
		if codesOf(r) != "OK OK" || r.Statuses[0].LimitRemaining != math.MaxUint32 {
			t.Fatalf("unlimited: %s remaining %d, want OK with 4294967295", codesOf(r), r.Statuses[0].LimitRemaining)
		}
	}
	// Both descriptors match; the special one replaces the general one.
	for i := range 3 {
		if got := codesOf(h.ask(t, "rl", rd("category", "read"), rd("category", "read", "endpoint", "/search"))); got != "OK OK OK" {
			t.Fatalf("replaced request %d: %s, want OK (the read limit of 1 is replaced)", i+1, got)
		}
	}
	if got := codesOf(h.ask(t, "rl", rd("category", "read"), rd("category", "read", "endpoint", "/search"))); got != "OVER_LIMIT OK OVER_LIMIT" {
		t.Errorf("replaced request 4: %s, want the special limit of 3 over", got)
	}
	// Alone, the general limit applies.
	if got := codesOf(h.ask(t, "rl", rd("category", "read"))); got != "OK OK" {
		t.Errorf("read alone: %s, want OK (its counter was not touched)", got)
	}
	for i := range 3 {
		if got := codesOf(h.ask(t, "rl", rd("bulk", "x"))); got != "OK OK" {
			t.Errorf("shadow request %d: %s, want OK", i+1, got)
		}
	}
}

// TestAllOrNothing: a request denied by one descriptor consumes nothing on
// the others.
func TestAllOrNothing(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.define(t, desc("rl", 3600, 1, "a", ""), desc("rl", 3600, 5, "b", ""))
	if got := codesOf(h.ask(t, "rl", rd("a", "1"), rd("b", "1"))); got != "OK OK OK" {
		t.Fatalf("first: %s", got)
	}
	for range 3 {
		r := h.ask(t, "rl", rd("a", "1"), rd("b", "1"))
		if got := codesOf(r); got != "OVER_LIMIT OVER_LIMIT OK" {
			t.Fatalf("denied by a: %s, want OVER_LIMIT OVER_LIMIT OK", got)
		}
		if r.Statuses[1].LimitRemaining != 4 {
			t.Fatalf("b's remaining %d after denials, want 4: a denied request took from b", r.Statuses[1].LimitRemaining)
		}
	}
}

// TestHitsAddendAndLimitOverride: hits_addend is the cost; a huge one is
// InvalidArgument; the per-descriptor limit override replaces the
// configured rate in a known domain.
func TestHitsAddendAndLimitOverride(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.define(t, desc("rl", 3600, 10, "k", ""))
	resp, err := h.rls.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{rd("k", "v")}, HitsAddend: 7})
	if err != nil || codesOf(resp) != "OK OK" || resp.Statuses[0].LimitRemaining != 3 {
		t.Fatalf("hits_addend 7: %v %v, want OK with 3 remaining", resp, err)
	}
	resp, err = h.rls.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{rd("k", "v")}, HitsAddend: 4})
	if err != nil || codesOf(resp) != "OVER_LIMIT OVER_LIMIT" {
		t.Fatalf("hits_addend 4 with 3 left: %v %v, want OVER_LIMIT", resp, err)
	}
	_, err = h.rls.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{rd("k", "v")}, HitsAddend: math.MaxUint32})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "hits_addend") {
		t.Errorf("huge hits_addend: %v, want InvalidArgument naming hits_addend", err)
	}
	over := rd("k", "w")
	over.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_DAY}
	r := h.ask(t, "rl", over)
	if codesOf(r) != "OK OK" || r.Statuses[0].CurrentLimit.GetRequestsPerUnit() != 1 || r.Statuses[0].CurrentLimit.GetUnit() != rlsv3.RateLimitResponse_RateLimit_DAY {
		t.Fatalf("override: %s %v, want OK at 1 per DAY", codesOf(r), r.Statuses[0].CurrentLimit)
	}
	if got := codesOf(h.ask(t, "rl", over)); got != "OVER_LIMIT OVER_LIMIT" {
		t.Errorf("override second: %s, want OVER_LIMIT", got)
	}
}

// TestBadInput: each is a clear gRPC status, never a crash; an unknown
// domain is OK without limits, as Envoy's service answers.
func TestBadInput(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.define(t, desc("rl", 60, 1, "k", ""))
	tests := []struct {
		name string
		req  *rlsv3.RateLimitRequest
		want string
	}{
		{"empty domain", &rlsv3.RateLimitRequest{Descriptors: []*ratelimitv3.RateLimitDescriptor{rd("k", "v")}}, "domain"},
		{"no descriptors", &rlsv3.RateLimitRequest{Domain: "rl"}, "descriptors"},
		{"descriptor without entries", &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{{}}}, "descriptors[0]"},
		{"entry without key", &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{rd("", "v")}}, "descriptors[0].entries[0].key"},
		{"huge value", &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{rd("k", strings.Repeat("v", 5000))}}, "at most 1024 bytes"},
		{"too many entries", &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{
			rd(strings.Split(strings.Repeat("k,v,", 17), ",")[:34]...)}}, "descriptors[0].entries: at most 16"},
		{"too many descriptors", &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: slices.Repeat([]*ratelimitv3.RateLimitDescriptor{rd("k", "v")}, 65)}, "at most 64"},
		{"bad target type", &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{rd("target_type", "http")}}, "target_type"},
		{"override without unit", &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{{
			Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}},
			Limit:   &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5}}}}, "limit.unit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.rls.ShouldRateLimit(t.Context(), tt.req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v, want InvalidArgument naming %s", err, tt.want)
			}
		})
	}
	r := h.ask(t, "nobody-configured-this", rd("k", "v"))
	if codesOf(r) != "OK OK" || r.Statuses[0].CurrentLimit != nil {
		t.Errorf("unknown domain: %s %v, want OK without a limit", codesOf(r), r.Statuses[0].CurrentLimit)
	}
}

// TestQuarantineAdminsAndIdentities: descriptor entries map to our
// identities, so caller quarantine denies (OVER_LIMIT, no headers) and
// administrators are never limited.
func TestQuarantineAdminsAndIdentities(t *testing.T) {
	t.Parallel()
	h := start(t, func(o *envoyrls.Options) { o.Headers = true })
	h.define(t, desc("rl", 3600, 1, "user", ""))
	if _, err := h.admin.Quarantine(t.Context(), ratelimit.SubjectUser, "mallory", client.QuarantineRequest{Reason: "abuse"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.admin.PutAdmin(t.Context(), ratelimit.Admin{SubjectType: ratelimit.SubjectUser, Subject: "root"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.admin.Quarantine(t.Context(), ratelimit.SubjectNetwork, "192.0.2.0/24", client.QuarantineRequest{Reason: "deny list"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.refresh(t)
	r := h.ask(t, "rl", rd("user", "mallory"))
	if codesOf(r) != "OVER_LIMIT OVER_LIMIT" || len(r.ResponseHeadersToAdd) != 1 || !hasHeader(r, envoyrls.QuarantineHeader, "caller") || r.Statuses[0].CurrentLimit != nil {
		t.Errorf("quarantined user: %s headers %v limit %v, want OVER_LIMIT without rate headers or limit, marked %s: caller", codesOf(r), r.ResponseHeadersToAdd, r.Statuses[0].CurrentLimit, envoyrls.QuarantineHeader)
	}
	if got := codesOf(h.ask(t, "rl", rd("remote_address", "192.0.2.7"))); got != "OVER_LIMIT OVER_LIMIT" {
		t.Errorf("quarantined network: %s, want OVER_LIMIT", got)
	}
	for i := range 3 {
		if got := codesOf(h.ask(t, "rl", rd("user", "root"))); got != "OK OK" {
			t.Errorf("admin request %d: %s, want OK: administrators are never limited", i+1, got)
		}
	}
	r = h.ask(t, "rl", rd("user", "alice"))
	if codesOf(r) != "OK OK" || !hasHeader(r, "X-Ratelimit-Limit", "1") {
		t.Errorf("alice: %s headers %v, want OK with X-RateLimit-Limit 1", codesOf(r), r.ResponseHeadersToAdd)
	}
	r = h.ask(t, "rl", rd("user", "alice"))
	if codesOf(r) != "OVER_LIMIT OVER_LIMIT" || !hasHeader(r, "Retry-After", "3590") {
		t.Errorf("alice again: %s headers %v, want OVER_LIMIT with Retry-After 3590", codesOf(r), r.ResponseHeadersToAdd)
	}
}

func hasHeader(r *rlsv3.RateLimitResponse, key, value string) bool {
	for _, h := range r.ResponseHeadersToAdd {
		if strings.EqualFold(h.Key, key) && h.Value == value {
			return true
		}
	}
	return false
}

// TestAuthentication: without a trusted address a token is needed; an
// Authenticate error is the answer.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	errBad := errors.New("invalid token")
	h := start(t, func(o *envoyrls.Options) {
		o.Authenticate = func(_ context.Context, tok string, _ netip.Addr) error {
			if tok != "s3cret" {
				return errBad
			}
			return nil
		}
	})
	req := &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{rd("k", "v")}}
	if _, err := h.rls.ShouldRateLimit(t.Context(), req); status.Code(err) != codes.Unauthenticated {
		t.Errorf("no token: %v, want Unauthenticated", err)
	}
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer s3cret")
	if _, err := h.rls.ShouldRateLimit(ctx, req); err != nil {
		t.Errorf("with the token: %v", err)
	}
	trusted := startOn(t, h.env, func(o *envoyrls.Options) {
		o.Authenticate = func(context.Context, string, netip.Addr) error { return errBad }
		o.TrustedClients = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	if _, err := trusted.rls.ShouldRateLimit(t.Context(), req); err != nil {
		t.Errorf("from a trusted network without a token: %v", err)
	}
}

// TestMetricsLabelsBounded: descriptors count by domain and the matched
// definition's keys, never by what a request invents (an unknown domain
// is "unknown", no match "unmatched"); values only for detailed_metric.
func TestMetricsLabelsBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	h := start(t, func(o *envoyrls.Options) { o.Registerer = reg })
	detailed := desc("rl", 3600, 1, "user", "")
	detailed.DetailedMetric = true
	h.define(t, desc("rl", 3600, 5, "database", "users", "table", ""), detailed)
	h.ask(t, "rl", rd("database", "users", "table", "t1"))
	h.ask(t, "rl", rd("database", "users", "table", "t2"))
	h.ask(t, "rl", rd("nothing", "x"))
	h.ask(t, "invented-domain-1", rd("k", "v"))
	h.ask(t, "invented-domain-2", rd("k", "v"))
	h.ask(t, "rl", rd("user", "alice"))
	h.ask(t, "rl", rd("user", "alice"))

	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			got[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"rlctl_envoy_descriptors_total{code=ok,domain=rl,keys=database.table}":                    2,
		"rlctl_envoy_descriptors_total{code=ok,domain=rl,keys=unmatched}":                         1,
		"rlctl_envoy_descriptors_total{code=ok,domain=unknown,keys=unmatched}":                    2,
		"rlctl_envoy_descriptors_total{code=ok,domain=rl,keys=user}":                              1,
		"rlctl_envoy_descriptors_total{code=over_limit,domain=rl,keys=user}":                      1,
		"rlctl_envoy_descriptor_values_total{code=ok,descriptor=rl/user=alice,domain=rl}":         1,
		"rlctl_envoy_descriptor_values_total{code=over_limit,descriptor=rl/user=alice,domain=rl}": 1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("metrics %v, want exactly %v", got, want)
	}
}

// TestCallerLimitsApplyToEnvoyTraffic: a user named by a descriptor entry
// is limited by the caller groups it is a member of, in the same take as
// the descriptors: a request the caller's limit denies consumes nothing on
// the descriptor.
func TestCallerLimitsApplyToEnvoyTraffic(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	two := 2
	h.define(t, ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "envoy-users",
		WindowSeconds: 3600, UserMaxRequests: &two, Enabled: true}, desc("rl", 3600, 5, "route", "checkout"))
	if _, err := h.admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: "bob",
		Groups: []string{"envoy-users"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.refresh(t)
	h.drive(t, 2, "OK OK OK", "rl", rd("route", "checkout"), rd("user", "bob"))
	r := h.ask(t, "rl", rd("route", "checkout"), rd("user", "bob"))
	if codesOf(r) != "OVER_LIMIT OK OK" || r.Statuses[0].LimitRemaining != 3 {
		t.Errorf("bob's third request: %s, route remaining %d; want OVER_LIMIT by his caller limit, 3 left on the route", codesOf(r), r.Statuses[0].LimitRemaining)
	}
	// Another user is not limited by bob's bucket.
	h.drive(t, 1, "OK OK OK", "rl", rd("route", "checkout"), rd("user", "carol"))
}

// TestDescriptorThrottlesNameTheCaller: through the gRPC listener, a
// descriptor throttle is recorded against the identity the descriptor
// carries (user=bob, mapped by the identity keys), and one without an
// identity against its domain; GET /api/rate-limit-events selects each by
// its subject, and no row has the subject ":".
func TestDescriptorThrottlesNameTheCaller(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.define(t, desc("edge", 60, 1, "user", ""), desc("edge", 60, 1, "path", "/api"))
	h.ask(t, "edge", rd("user", "bob"))
	if got := codesOf(h.ask(t, "edge", rd("user", "bob"))); got != "OVER_LIMIT OVER_LIMIT" {
		t.Fatalf("bob's second request: %s, want OVER_LIMIT", got)
	}
	h.ask(t, "edge", rd("path", "/api"))
	if got := codesOf(h.ask(t, "edge", rd("path", "/api"))); got != "OVER_LIMIT OVER_LIMIT" {
		t.Fatalf("the second anonymous request: %s, want OVER_LIMIT", got)
	}
	h.rec.Flush(t.Context())
	for subject, def := range map[string]string{"user:bob": "target:descriptor:edge/user:60", "descriptor:edge": "target:descriptor:edge/path=%2Fapi:60"} {
		page, err := h.admin.ListEvents(t.Context(), client.EventFilter{Subject: subject})
		if err != nil || len(page.Events) != 1 || page.Events[0].DefinitionID != def || page.Events[0].Count != 1 {
			t.Errorf("events of %s: %+v %v, want one throttle under %s", subject, page, err, def)
		}
	}
	page, err := h.admin.ListEvents(t.Context(), client.EventFilter{})
	if err != nil || len(page.Events) != 2 {
		t.Errorf("every event: %+v %v, want the two rows", page, err)
	}
}
