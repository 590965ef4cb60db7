package envoyrls_test

// Per-descriptor hits_addend and the count modes, through the real
// listener over PostgreSQL.

import (
	"strings"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/envoyrls"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// rdh is a request descriptor with its own hits_addend.
func rdh(hits uint64, kv ...string) *ratelimitv3.RateLimitDescriptor {
	d := rd(kv...)
	d.HitsAddend = wrapperspb.UInt64(hits)
	return d
}

func (h *harness) askHits(t *testing.T, hits uint32, domain string, ds ...*ratelimitv3.RateLimitDescriptor) *rlsv3.RateLimitResponse {
	t.Helper()
	resp, err := h.rls.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits})
	if err != nil {
		t.Fatalf("ShouldRateLimit(%s): %v", domain, err)
	}
	return resp
}

// TestDescriptorHitsAddend: a descriptor's hits_addend overrides the
// request's; descriptors without a limit may carry any; 0 checks without
// counting; limits that disagree are a clear InvalidArgument (a take has
// one cost), as is a huge one.
func TestDescriptorHitsAddend(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.define(t, desc("rl", 3600, 10, "k", ""), desc("rl", 3600, 10, "j", ""), desc("rl", 3600, 0, "vip", ""))

	r := h.askHits(t, 1, "rl", rdh(4, "k", "v"))
	if codesOf(r) != "OK OK" || r.Statuses[0].LimitRemaining != 6 {
		t.Fatalf("hits_addend 4 over the request's 1: %s remaining %d, want OK with 6", codesOf(r), r.Statuses[0].LimitRemaining)
	}
	// Unmatched and unlimited descriptors take nothing: their hits_addend
	// may differ.
	r = h.askHits(t, 0, "rl", rdh(2, "k", "v"), rdh(9, "nothing", "x"), rdh(7, "vip", "a"))
	if codesOf(r) != "OK OK OK OK" || r.Statuses[0].LimitRemaining != 4 {
		t.Fatalf("with unlimited descriptors of other hits_addends: %s remaining %d, want OK with 4", codesOf(r), r.Statuses[0].LimitRemaining)
	}
	// Two limits, two costs: refused, naming the descriptor and the way out.
	_, err := h.rls.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{
		rdh(1, "k", "v"), rdh(3, "j", "v")}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "descriptors[1].hits_addend") || !strings.Contains(err.Error(), "every-descriptor") {
		t.Errorf("two limits with different hits_addends: %v, want InvalidArgument naming descriptors[1].hits_addend and the every-descriptor mode", err)
	}
	// The same hits_addend on both, different from the request's: fine.
	r = h.askHits(t, 5, "rl", rdh(2, "k", "v"), rdh(2, "j", "v"))
	if codesOf(r) != "OK OK OK" || r.Statuses[0].LimitRemaining != 2 || r.Statuses[1].LimitRemaining != 8 {
		t.Fatalf("one hits_addend on both: %s remaining %d and %d, want OK with 2 and 8", codesOf(r), r.Statuses[0].LimitRemaining, r.Statuses[1].LimitRemaining)
	}
	// 0: check only.
	r = h.askHits(t, 0, "rl", rdh(0, "k", "v"))
	if codesOf(r) != "OK OK" || r.Statuses[0].LimitRemaining != 2 {
		t.Fatalf("hits_addend 0: %s remaining %d, want OK with 2 (nothing taken)", codesOf(r), r.Statuses[0].LimitRemaining)
	}
	h.askHits(t, 2, "rl", rd("k", "v"))
	r = h.askHits(t, 0, "rl", rdh(0, "k", "v"))
	if codesOf(r) != "OVER_LIMIT OVER_LIMIT" || r.Statuses[0].LimitRemaining != 0 {
		t.Errorf("hits_addend 0 on a full limit: %s remaining %d, want OVER_LIMIT with 0", codesOf(r), r.Statuses[0].LimitRemaining)
	}
	// The override takes the descriptor's hits_addend too.
	over := rdh(3, "k", "w")
	over.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit_MINUTE}
	if r := h.askHits(t, 0, "rl", over); codesOf(r) != "OK OK" || r.Statuses[0].LimitRemaining != 2 {
		t.Errorf("override with hits_addend 3: %s remaining %d, want OK with 2", codesOf(r), r.Statuses[0].LimitRemaining)
	}
	_, err = h.rls.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "rl", Descriptors: []*ratelimitv3.RateLimitDescriptor{rdh(1<<40, "k", "v")}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "descriptors[0].hits_addend: must be at most") {
		t.Errorf("huge descriptor hits_addend: %v, want InvalidArgument naming descriptors[0].hits_addend", err)
	}
}

// TestEveryDescriptorMode: Envoy's counting as an option: a request one
// descriptor denies still counts on the others, each descriptor takes its
// own hits_addend, and the identities keep their meaning: a caller limit
// denies, administrators pass, a quarantined caller counts nothing.
func TestEveryDescriptorMode(t *testing.T) {
	t.Parallel()
	if _, err := envoyrls.New(envoyrls.Options{Enforcer: start(t, nil).enf, CountMode: "some"}); err == nil || !strings.Contains(err.Error(), "every-descriptor") {
		t.Errorf("unknown count mode: %v, want an error naming the modes", err)
	}
	h := start(t, func(o *envoyrls.Options) { o.CountMode, o.Headers = envoyrls.CountEveryDescriptor, true })
	two := 2
	h.define(t, desc("rl", 3600, 1, "a", ""), desc("rl", 3600, 10, "b", ""), desc("rl", 3600, 10, "route", "checkout"),
		ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "envoy-users",
			WindowSeconds: 3600, UserMaxRequests: &two, Enabled: true})
	if got := codesOf(h.ask(t, "rl", rd("a", "1"), rd("b", "1"))); got != "OK OK OK" {
		t.Fatalf("first: %s", got)
	}
	for i := range 3 {
		r := h.ask(t, "rl", rd("a", "1"), rd("b", "1"))
		if got := codesOf(r); got != "OVER_LIMIT OVER_LIMIT OK" {
			t.Fatalf("denied by a: %s, want OVER_LIMIT OVER_LIMIT OK", got)
		}
		if want := uint32(8 - i); r.Statuses[1].LimitRemaining != want {
			t.Fatalf("request %d: b's remaining %d, want %d: every descriptor is counted", i+2, r.Statuses[1].LimitRemaining, want)
		}
		// The headers are the denying limit's.
		if !hasHeader(r, "X-Ratelimit-Limit", "1") || !hasHeader(r, "Retry-After", "3590") {
			t.Fatalf("request %d: headers %v, want a's limit of 1 and Retry-After 3590", i+2, r.ResponseHeadersToAdd)
		}
	}
	// Each descriptor its own hits_addend.
	r := h.ask(t, "rl", rdh(0, "a", "2"), rdh(3, "b", "2"))
	if codesOf(r) != "OK OK OK" || r.Statuses[0].LimitRemaining != 1 || r.Statuses[1].LimitRemaining != 7 {
		t.Errorf("own hits_addends: %s remaining %d and %d, want OK with 1 (checked only) and 7", codesOf(r), r.Statuses[0].LimitRemaining, r.Statuses[1].LimitRemaining)
	}

	if _, err := h.admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: "bob",
		Groups: []string{"envoy-users"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.admin.PutAdmin(t.Context(), ratelimit.Admin{SubjectType: ratelimit.SubjectUser, Subject: "root"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.admin.Quarantine(t.Context(), ratelimit.SubjectUser, "mallory", client.QuarantineRequest{Reason: "abuse"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.refresh(t)
	h.drive(t, 2, "OK OK OK", "rl", rd("route", "checkout"), rd("user", "bob"))
	r = h.ask(t, "rl", rd("route", "checkout"), rd("user", "bob"))
	if codesOf(r) != "OVER_LIMIT OK OK" || r.Statuses[0].LimitRemaining != 7 {
		t.Errorf("bob's third request: %s, route remaining %d; want OVER_LIMIT by his caller limit, the route counted (7 left)", codesOf(r), r.Statuses[0].LimitRemaining)
	}
	for i := range 2 {
		if got := codesOf(h.ask(t, "rl", rd("a", "3"), rd("user", "root"))); got != "OK OK OK" {
			t.Errorf("admin request %d: %s, want OK: administrators are never limited", i+1, got)
		}
	}
	r = h.ask(t, "rl", rd("route", "checkout"), rd("user", "mallory"))
	if codesOf(r) != "OVER_LIMIT OVER_LIMIT OVER_LIMIT" || !hasHeader(r, envoyrls.QuarantineHeader, "caller") {
		t.Errorf("quarantined caller: %s headers %v, want OVER_LIMIT everywhere, marked", codesOf(r), r.ResponseHeadersToAdd)
	}
	if r := h.ask(t, "rl", rd("route", "checkout")); r.Statuses[0].LimitRemaining != 6 {
		t.Errorf("route remaining %d after the quarantined request, want 6 (it counted nothing)", r.Statuses[0].LimitRemaining)
	}
}
