// Package envoyrls serves Envoy's rate-limit protocol,
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, over an
// *enforce.Enforcer: Envoy, Istio, Contour, Emissary, Gloo and Envoy
// Gateway ask it for global rate-limit decisions, decided from the same
// definitions and counters as every other gateway of rlctl.
//
// It is an adapter (docs/design/envoy.md; docs/design/enforcement.md, "Seams"): it builds an enforce.Call from the
// request (the domain and descriptors, the hits_addend as the cost, the
// identities found in descriptor entries) and renders the Decision as
// Envoy expects it; descriptor matching is pkg/enforce's. rlapi serves it
// on --grpc-addr; a Go program registers it on its own grpc.Server:
//
//	svc, err := envoyrls.New(envoyrls.Options{Enforcer: enf})
//	svc.Register(grpcServer)
//
// docs/envoy.md has the mapping, Envoy's configuration and the differences
// from Envoy's own service.
package envoyrls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// IdentityKeys name the descriptor entries whose values are the call's
// identities, so that caller, caller_target, target and quarantine
// definitions apply to Envoy traffic. An empty key maps nothing.
type IdentityKeys struct {
	User       string // the user (Call.Username)
	ClientID   string // the agent's client id (Call.ClientID)
	ClientIP   string // the client address (Call.ClientIP); Envoy's remote_address action
	TargetType string // mcp_server or a2a_agent (Call.TargetType)
	TargetName string // the target's name (Call.TargetName)
	Tool       string // the MCP tool or A2A skill (Call.Tool)
}

// DefaultIdentityKeys is the mapping Options takes when it names none.
func DefaultIdentityKeys() IdentityKeys {
	return IdentityKeys{User: "user", ClientID: "client_id", ClientIP: "remote_address",
		TargetType: "target_type", TargetName: "target_name", Tool: "tool"}
}

// Options configure a Service.
type Options struct {
	// Enforcer decides (required).
	Enforcer *enforce.Enforcer
	// Identity maps descriptor entries to identities (zero value:
	// DefaultIdentityKeys; set NoIdentity to map none).
	Identity   IdentityKeys
	NoIdentity bool
	// Headers adds the rate-limit headers (X-RateLimit-*, RateLimit,
	// RateLimit-Policy, Retry-After: httpgate.SetHeaders) to the answer's
	// response_headers_to_add.
	Headers bool
	// Authenticate checks the token of the authorization metadata
	// ("Bearer <token>" or the token alone); peer is the client's
	// address. nil: no token is needed. Its error is the answer's: a
	// *status.Status error as it is, anything else Unauthenticated.
	Authenticate func(ctx context.Context, token string, peer netip.Addr) error
	// TrustedClients are the networks whose calls need no token.
	TrustedClients []netip.Prefix
	// TokenCached, when set, answers from memory alone whether a token is
	// known to be valid (known true: valid says), or only Authenticate can
	// tell (known false). Tap uses it, since it runs where blocking would
	// stall a connection: a token known invalid is refused there, one not
	// known is authorized by the call's handler, at most MaxUnverified such
	// calls at once.
	TokenCached func(token string) (valid, known bool)
	// MaxUnverified bounds the calls in flight whose token Tap could not
	// tell from memory (default DefaultMaxUnverified): each may make the
	// server read a message before its token is checked.
	MaxUnverified int
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Now is the clock the answers' durations are computed from (the
	// Enforcer's should be the same); default time.Now.
	Now func() time.Time
	// CountMode is how a request's descriptors are counted (zero value:
	// CountAllOrNothing).
	CountMode CountMode
}

// CountMode is how a request's descriptors are counted.
type CountMode string

const (
	// CountAllOrNothing takes a request's cost from every gate of its
	// descriptors (and identities) at once, or from none when one has no
	// room: a request one descriptor denies consumes nothing on the others,
	// as every decision of rlctl does.
	CountAllOrNothing CountMode = "all-or-nothing"
	// CountEveryDescriptor counts each descriptor on its own, as Envoy's
	// ratelimit service does: one a limit denies takes nothing, the
	// others take their hits_addend all the same. Descriptors may then
	// carry hits_addends of their own.
	CountEveryDescriptor CountMode = "every-descriptor"
)

// ParseCountMode reads a CountMode ("" is CountAllOrNothing).
func ParseCountMode(s string) (CountMode, error) {
	switch m := CountMode(s); m {
	case "", CountAllOrNothing:
		return CountAllOrNothing, nil
	case CountEveryDescriptor:
		return m, nil
	}
	return "", fmt.Errorf("count mode %q: must be %s or %s", s, CountAllOrNothing, CountEveryDescriptor)
}

// Service is the RateLimitService. It is safe for concurrent use.
type Service struct {
	rlsv3.UnimplementedRateLimitServiceServer
	opts    Options
	now     func() time.Time
	metrics *metrics
	// unverified holds a slot per call in flight whose token Tap could not
	// tell from memory.
	unverified chan struct{}
}

// New builds a Service.
func New(opts Options) (*Service, error) {
	if opts.Enforcer == nil {
		return nil, errors.New("envoyrls: Options.Enforcer is required")
	}
	if opts.Identity == (IdentityKeys{}) && !opts.NoIdentity {
		opts.Identity = DefaultIdentityKeys()
	}
	if opts.NoIdentity {
		opts.Identity = IdentityKeys{}
	}
	mode, err := ParseCountMode(string(opts.CountMode))
	if err != nil {
		return nil, fmt.Errorf("envoyrls: Options.CountMode: %w", err)
	}
	opts.CountMode = mode
	if opts.MaxUnverified <= 0 {
		opts.MaxUnverified = DefaultMaxUnverified
	}
	s := &Service{opts: opts, now: opts.Now, unverified: make(chan struct{}, opts.MaxUnverified)}
	if s.now == nil {
		s.now = time.Now
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	return s, nil
}

// Register registers the service on gs. Serve it with
// grpc.ForceServerCodecV2(Codec{}) for a request that is not valid UTF-8
// to be InvalidArgument naming the field, not grpc-go's Internal.
func (s *Service) Register(gs grpc.ServiceRegistrar) {
	rlsv3.RegisterRateLimitServiceServer(gs, s)
}

// QuarantineHeader marks a quarantined call's answer (its value is the
// quarantine's scope, caller or target): the only header such an answer
// carries.
const QuarantineHeader = "x-rlctl-quarantined"

// DegradedHeader marks, with the value 1, the answer to a call decided in
// the degraded mode (enforce.Decision.Degraded: the counter store was
// unreachable and this replica decided on its share of the limits), with
// or without Options.Headers.
const DegradedHeader = "x-rlctl-degraded"

// Bounds on a request: its descriptors, and each entry's key and value
// (a descriptor's values are part of its counter's key; a descriptor has at
// most ratelimit.MaxDescriptorEntries entries).
const (
	MaxDescriptors = 64
	MaxEntryBytes  = 1024
)

// MaxRequestBytes bounds a request's encoded size (the gRPC listener's
// receive limit): the largest valid request, MaxDescriptors descriptors of
// ratelimit.MaxDescriptorEntries entries whose key and value are
// MaxEntryBytes each, is 2 MiB, and each field's framing adds a few bytes.
// A larger message is refused before it is read.
const MaxRequestBytes = MaxDescriptors*ratelimit.MaxDescriptorEntries*(2*MaxEntryBytes+16) + 64<<10

// MaxHitsAddend bounds hits_addend: what one request takes from each of
// its gates (enforce.MaxCost).
const MaxHitsAddend = enforce.MaxCost

// errOverloaded answers a request shed unmade (enforce.ReasonOverloaded).
var errOverloaded = status.Error(codes.ResourceExhausted,
	"rlapi is overloaded: more decisions are waiting than its counter store can answer in time; retry shortly")

// errUntrusted refuses a client outside TrustedClients when no token can
// admit it.
var errUntrusted = status.Error(codes.PermissionDenied, "this client address is not a trusted client of the rate-limit service")

// DefaultMaxUnverified is Options.MaxUnverified's default.
const DefaultMaxUnverified = 16

// trustedKey marks a stream's context that Tap found from a trusted
// client: its handler needs no token.
type trustedKey struct{}

// Tap is the grpc.InTapHandle of a server the Service is registered on. It
// looks at a call to the rate-limit service before grpc-go reads any of its
// message, from its metadata and memory alone (grpc-go runs it on the
// connection's reader, with the connection locked: it must not block):
// a trusted client passes; a call without a token, or with one
// Options.TokenCached knows to be invalid, is refused, so it makes the
// server buffer nothing and start no goroutine; a call whose token only
// Authenticate can tell passes to its handler, which authorizes it before
// anything else, at most MaxUnverified such calls at once (past that:
// ResourceExhausted). Calls to other services pass untouched.
func (s *Service) Tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if !strings.HasPrefix(info.FullMethodName, rateLimitMethods) {
		return ctx, nil
	}
	refuse := func(err error) (context.Context, error) {
		s.metrics.refused.WithLabelValues(status.Code(err).String()).Inc()
		return ctx, err
	}
	addr := peerAddr(ctx)
	if s.trusted(addr) {
		return context.WithValue(ctx, trustedKey{}, true), nil
	}
	if s.opts.Authenticate == nil {
		if len(s.opts.TrustedClients) > 0 {
			return refuse(errUntrusted)
		}
		return ctx, nil
	}
	tok := bearer(ctx)
	if tok == "" {
		return refuse(status.Error(codes.Unauthenticated, "missing token: send 'authorization: Bearer <token>' metadata"))
	}
	if s.opts.TokenCached != nil {
		valid, known := s.opts.TokenCached(tok)
		if known && !valid {
			// Refused here, without counting a failure: the handler's
			// Authenticate counted it when it first saw the token.
			return refuse(status.Error(codes.Unauthenticated, "invalid, expired or revoked token, or one whose role may not decide"))
		}
		if known {
			return ctx, nil
		}
	}
	select {
	case s.unverified <- struct{}{}:
		context.AfterFunc(ctx, func() { <-s.unverified })
		return ctx, nil
	default:
		return refuse(status.Errorf(codes.ResourceExhausted, "more than %d calls with tokens not yet verified are in flight; retry shortly", cap(s.unverified)))
	}
}

// rateLimitMethods prefixes the full method names of the rate-limit service.
var rateLimitMethods = "/" + rlsv3.RateLimitService_ServiceDesc.ServiceName + "/"

// ShouldRateLimit decides one request.
func (s *Service) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	if ctx.Value(trustedKey{}) == nil {
		if err := s.authorize(ctx); err != nil {
			s.metrics.refused.WithLabelValues(status.Code(err).String()).Inc()
			return nil, err
		}
	}
	call, costs, err := s.call(req)
	if err != nil {
		s.metrics.refused.WithLabelValues(codes.InvalidArgument.String()).Inc()
		return nil, err
	}
	matches := s.opts.Enforcer.MatchDescriptors(call.Descriptors)
	var dec enforce.Decision
	if s.opts.CountMode == CountEveryDescriptor {
		dec = s.everyDescriptor(ctx, call, costs, matches)
	} else {
		cost, err := commonCost(call, costs, matches)
		if err != nil {
			s.metrics.refused.WithLabelValues(codes.InvalidArgument.String()).Inc()
			return nil, err
		}
		// A backend failure is decided by the fail policy: follow it.
		if cost == 0 {
			call.Cost = 1
			dec, _ = s.opts.Enforcer.Peek(ctx, call)
		} else {
			call.Cost = cost
			dec, _ = s.opts.Enforcer.Check(ctx, call)
		}
	}
	if dec.Reason == enforce.ReasonOverloaded {
		// Shed unmade: an error, to which Envoy's filter applies its own
		// failure_mode_deny, rather than an answer a limit did not give.
		s.metrics.refused.WithLabelValues(codes.ResourceExhausted.String()).Inc()
		return nil, errOverloaded
	}
	now := s.now()
	resp := render(call, dec, matches, now)
	if dec.Reason == enforce.ReasonQuarantined {
		// No rate headers (an access decision, not a rate), but a mark
		// Envoy's local_reply_config can turn into a 403 (docs/envoy.md).
		resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd, &corev3.HeaderValue{Key: QuarantineHeader, Value: dec.QuarantineScope})
	}
	if dec.Degraded {
		resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd, &corev3.HeaderValue{Key: DegradedHeader, Value: "1"})
	}
	if s.opts.Headers && dec.Reason != enforce.ReasonQuarantined {
		h := http.Header{}
		httpgate.SetHeaders(h, dec, now)
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range h {
				if !yield(k) {
					return
				}
			}
		}) {
			for _, v := range h[k] {
				resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd, &corev3.HeaderValue{Key: k, Value: v})
			}
		}
	}
	s.metrics.observe(call.Descriptors, matches, resp)
	return resp, nil
}

// commonCost is what an all-or-nothing request takes from every gate: the
// hits_addend of its descriptors that have a limit (they must agree: a take
// has one cost), else the request's. 0 is "check only": a peek.
func commonCost(c enforce.Call, costs []int64, matches []enforce.DescriptorMatch) (int64, error) {
	cost, from := c.Cost, -1
	for i, d := range c.Descriptors.Descriptors {
		if !limited(d, matches, i) {
			continue
		}
		if from >= 0 && costs[i] != cost {
			return 0, status.Errorf(codes.InvalidArgument, "descriptors[%d].hits_addend: %d differs from the %d of descriptors[%d]; "+
				"a request takes one cost from all its limits at once (all or nothing): send one hits_addend, "+
				"or serve with the every-descriptor count mode (rlapi --grpc-count-mode=every-descriptor)", i, costs[i], cost, from)
		}
		cost, from = costs[i], i
	}
	return cost, nil
}

// limited reports whether descriptor i of a call has a gate: a limit
// override in a known domain, or a matched definition with a limit.
func limited(d enforce.Descriptor, matches []enforce.DescriptorMatch, i int) bool {
	if i >= len(matches) || !matches[i].Known {
		return false
	}
	if d.Limit != nil {
		return true
	}
	for _, def := range matches[i].Definitions {
		if !def.Unlimited && def.MaxRequests != nil {
			return true
		}
	}
	return false
}

// everyDescriptor decides a call as Envoy's service does: every descriptor
// on its own, each taking its own hits_addend whatever the others say, and
// on a fixed window even when it has no room (CountOver: Envoy's counters
// go past their limits). Each descriptor is matched with the whole
// request, so that a limit another descriptor replaces is not taken. The
// identities' own limits (caller and target definitions) and their
// quarantine are decided first, once; a call they refuse for anything but
// a limit (quarantine, lockout, fail closed) counts nothing. The
// descriptors' takes run at once, sharing the counter store's round trip,
// unless two of them may count on one counter: then one after the other,
// in the request's order, as Envoy's service increments them.
func (s *Service) everyDescriptor(ctx context.Context, c enforce.Call, costs []int64, matches []enforce.DescriptorMatch) enforce.Decision {
	descs := c.Descriptors.Descriptors
	first := enforce.Decision{Allowed: true, Reason: enforce.ReasonAllowed}
	if c.Username != "" || c.ClientID != "" || c.ClientIP != "" || c.TargetType != "" || c.Tool != "" {
		ic := c
		ic.Descriptors = &enforce.DescriptorRequest{Domain: c.Descriptors.Domain}
		first, _ = s.opts.Enforcer.Check(ctx, ic)
		if !first.Allowed && first.Reason != enforce.ReasonThrottled {
			return first
		}
	}
	decs := make([]enforce.Decision, len(descs))
	decide := func(i int) {
		dc := c
		dc.Descriptors = &enforce.DescriptorRequest{Domain: c.Descriptors.Domain, Descriptors: descs,
			DescriptorsOnly: true, Only: i + 1, CountOver: true}
		if costs[i] == 0 {
			dc.Cost = 1
			decs[i], _ = s.opts.Enforcer.Peek(ctx, dc)
		} else {
			dc.Cost = costs[i]
			decs[i], _ = s.opts.Enforcer.Check(ctx, dc)
		}
	}
	if mayShareCounter(descs, matches) {
		for i := range descs {
			decide(i)
		}
		return merge(first, decs)
	}
	var wg sync.WaitGroup
	for i := 1; i < len(descs); i++ {
		wg.Go(func() { decide(i) })
	}
	decide(0)
	wg.Wait()
	return merge(first, decs)
}

// mayShareCounter reports whether two descriptors of a request may count
// on one counter: the same entries (a counter is keyed by the request's
// entries, whatever definition or override it counts for), or a common
// matched definition (share_threshold keys every value of a wildcard
// alike).
func mayShareCounter(descs []enforce.Descriptor, matches []enforce.DescriptorMatch) bool {
	for i := range descs {
		for j := i + 1; j < len(descs); j++ {
			if slices.Equal(descs[i].Entries, descs[j].Entries) {
				return true
			}
			if i < len(matches) && j < len(matches) {
				for _, d := range matches[i].Definitions {
					if slices.ContainsFunc(matches[j].Definitions, func(o ratelimit.Definition) bool { return o.ID == d.ID }) {
						return true
					}
				}
			}
		}
	}
	return false
}

// merge is the decision of a call decided in parts: first (the
// identities' limits) and one per descriptor, whose gates are renumbered
// as the call's. The call is allowed when every part is; its reason is
// the first refusal's; its headline limit (the rate headers') is, among
// the parts with a limit, the denied one with the longest wait, else the
// one with the least remaining.
func merge(first enforce.Decision, decs []enforce.Decision) enforce.Decision {
	d := first
	d.Gates = slices.Clone(first.Gates)
	d.Denied, d.Shadow = slices.Clone(first.Denied), slices.Clone(first.Shadow)
	var head *enforce.Decision
	better := func(p *enforce.Decision) bool {
		switch {
		case p.Limit <= 0:
			return false
		case head == nil:
			return true
		case p.Allowed != head.Allowed:
			return !p.Allowed
		case !p.Allowed:
			return p.RetryAfter > head.RetryAfter
		}
		return p.Remaining < head.Remaining
	}
	if better(&first) {
		head = &first
	}
	for i := range decs {
		p := &decs[i]
		for _, gs := range [][]enforce.Gate{p.Gates, p.Denied, p.Shadow} {
			for j := range gs {
				gs[j].Descriptor = i + 1
			}
		}
		d.Gates = append(d.Gates, p.Gates...)
		d.Denied = append(d.Denied, p.Denied...)
		d.Shadow = append(d.Shadow, p.Shadow...)
		switch {
		case !p.Allowed && d.Allowed:
			d.Allowed, d.Reason = false, p.Reason
		case d.Reason == enforce.ReasonOverloaded && !p.Allowed:
			// A part known to be refused wins over a part shed unmade: the
			// request is answered OVER_LIMIT, not an error to which
			// Envoy's failure_mode_deny may admit it.
			d.Reason = p.Reason
		}
		if better(p) {
			head = p
		}
	}
	if head != nil {
		d.Limit, d.Remaining, d.Reset, d.RetryAfter = head.Limit, head.Remaining, head.Reset, head.RetryAfter
	}
	return d
}

// authorize lets trusted clients through, then asks for a token when
// Authenticate is set.
func (s *Service) authorize(ctx context.Context) error {
	addr := peerAddr(ctx)
	if s.trusted(addr) {
		return nil
	}
	if s.opts.Authenticate == nil {
		if len(s.opts.TrustedClients) > 0 {
			return errUntrusted
		}
		return nil
	}
	if err := s.opts.Authenticate(ctx, bearer(ctx), addr); err != nil {
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.Error(codes.Unauthenticated, err.Error())
	}
	return nil
}

// peerAddr is the client's address (invalid when unknown).
func peerAddr(ctx context.Context) netip.Addr {
	if p, ok := peer.FromContext(ctx); ok {
		if tcp, ok := p.Addr.(*net.TCPAddr); ok {
			return tcp.AddrPort().Addr().Unmap()
		}
	}
	return netip.Addr{}
}

// trusted reports whether addr is in Options.TrustedClients.
func (s *Service) trusted(addr netip.Addr) bool {
	for _, n := range s.opts.TrustedClients {
		if addr.IsValid() && n.Contains(addr) {
			return true
		}
	}
	return false
}

// bearer is the token of the call's authorization metadata ("Bearer
// <token>" or the token alone).
func bearer(ctx context.Context) string {
	v := metadata.ValueFromIncomingContext(ctx, "authorization")
	if len(v) == 0 {
		return ""
	}
	tok, _ := strings.CutPrefix(v[0], "Bearer ")
	return tok
}

// call builds the enforce.Call of a request and each descriptor's
// hits_addend (its own, else the request's, at least 1: 0 is a descriptor's
// own "check, count nothing"), or an InvalidArgument status naming what is
// wrong.
func (s *Service) call(req *rlsv3.RateLimitRequest) (enforce.Call, []int64, error) {
	invalid := func(format string, args ...any) (enforce.Call, []int64, error) {
		return enforce.Call{}, nil, status.Errorf(codes.InvalidArgument, format, args...)
	}
	if f := undecodable(req); f != "" {
		return invalid("%s: must be valid UTF-8 (protobuf strings are)", f)
	}
	if req.GetDomain() == "" {
		return invalid("domain: must not be empty (rate limit domain must not be empty)")
	}
	if len(req.GetDescriptors()) == 0 {
		return invalid("descriptors: must not be empty (rate limit descriptor list must not be empty)")
	}
	if n := len(req.GetDescriptors()); n > MaxDescriptors {
		return invalid("descriptors: at most %d per request (got %d)", MaxDescriptors, n)
	}
	if req.GetHitsAddend() > MaxHitsAddend {
		return invalid("hits_addend: must be at most %d (got %d)", MaxHitsAddend, req.GetHitsAddend())
	}
	cost := int64(req.GetHitsAddend())
	if cost == 0 {
		cost = 1
	}
	c := enforce.Call{Cost: cost, Descriptors: &enforce.DescriptorRequest{Domain: req.GetDomain()}}
	ids := &s.opts.Identity
	c.Descriptors.Descriptors = make([]enforce.Descriptor, 0, len(req.GetDescriptors()))
	costs := make([]int64, len(req.GetDescriptors()))
	for i, d := range req.GetDescriptors() {
		if len(d.GetEntries()) == 0 {
			return invalid("descriptors[%d]: must have at least one entry", i)
		}
		costs[i] = cost
		if h := d.GetHitsAddend(); h != nil {
			if h.GetValue() > MaxHitsAddend {
				return invalid("descriptors[%d].hits_addend: must be at most %d (got %d)", i, MaxHitsAddend, h.GetValue())
			}
			costs[i] = int64(h.GetValue())
		}
		if n := len(d.GetEntries()); n > ratelimit.MaxDescriptorEntries {
			return invalid("descriptors[%d].entries: at most %d (got %d)", i, ratelimit.MaxDescriptorEntries, n)
		}
		desc := enforce.Descriptor{Entries: make([]ratelimit.DescriptorEntry, len(d.GetEntries()))}
		for j, e := range d.GetEntries() {
			if e.GetKey() == "" {
				return invalid("descriptors[%d].entries[%d].key: must not be empty", i, j)
			}
			if len(e.GetKey()) > MaxEntryBytes || len(e.GetValue()) > MaxEntryBytes {
				return invalid("descriptors[%d].entries[%d]: key and value must be at most %d bytes each (got %d and %d): they are part of counter keys", i, j, MaxEntryBytes, len(e.GetKey()), len(e.GetValue()))
			}
			desc.Entries[j] = ratelimit.DescriptorEntry{Key: e.GetKey(), Value: e.GetValue()}
			if e.GetValue() == "" {
				continue
			}
			// The identities this entry names (every field of the
			// mapping whose key it is, in the mapping's order).
			for f, key := range [...]string{ids.User, ids.ClientID, ids.ClientIP, ids.TargetType, ids.TargetName, ids.Tool} {
				if key == "" || e.GetKey() != key {
					continue
				}
				to := [...]*string{&c.Username, &c.ClientID, &c.ClientIP, &c.TargetType, &c.TargetName, &c.Tool}[f]
				v := e.GetValue()
				if to == &c.ClientIP {
					a, err := netip.ParseAddr(v)
					if err != nil {
						continue // not an address: not an identity (its descriptor still counts)
					}
					v = a.Unmap().String()
				}
				if *to != "" && *to != v {
					return invalid("descriptors[%d].entries[%d]: %s %q differs from %q given by an earlier entry; a request has one of each identity", i, j, key, v, *to)
				}
				*to = v
			}
		}
		if l := d.GetLimit(); l != nil {
			w, ok := unitSeconds(l.GetUnit())
			if !ok {
				return invalid("descriptors[%d].limit.unit: %s is not supported; use SECOND, MINUTE, HOUR or DAY", i, l.GetUnit())
			}
			desc.Limit = &enforce.DescriptorLimit{RequestsPerUnit: int64(l.GetRequestsPerUnit()), WindowSeconds: w}
		}
		c.Descriptors.Descriptors = append(c.Descriptors.Descriptors, desc)
	}
	norm, err := c.Normalize()
	if err != nil {
		var ce *enforce.CallError
		if errors.As(err, &ce) {
			return invalid("descriptor identity entries: %s", strings.ReplaceAll(ce.Error(), "target_type: must be mcp_server, a2a_agent or empty", "target_type: must be mcp_server or a2a_agent"))
		}
		return invalid("%v", err)
	}
	return norm, costs, nil
}

func unitSeconds(u typev3.RateLimitUnit) (int, bool) {
	switch u {
	case typev3.RateLimitUnit_SECOND:
		return 1, true
	case typev3.RateLimitUnit_MINUTE:
		return 60, true
	case typev3.RateLimitUnit_HOUR:
		return 3600, true
	case typev3.RateLimitUnit_DAY:
		return 86400, true
	}
	return 0, false
}

func responseUnit(window int) rlsv3.RateLimitResponse_RateLimit_Unit {
	switch window {
	case 1:
		return rlsv3.RateLimitResponse_RateLimit_SECOND
	case 60:
		return rlsv3.RateLimitResponse_RateLimit_MINUTE
	case 3600:
		return rlsv3.RateLimitResponse_RateLimit_HOUR
	case 86400:
		return rlsv3.RateLimitResponse_RateLimit_DAY
	}
	return rlsv3.RateLimitResponse_RateLimit_UNKNOWN
}

// render turns a decision into Envoy's answer: the overall code, and per
// descriptor its code and the tightest of its gates.
//
// A quarantined or fail-closed call is OVER_LIMIT on every descriptor,
// without limits (quarantine is an access decision, not a rate). Otherwise
// a descriptor is OVER_LIMIT when one of its enforce gates had no room,
// with that gate's limit, remaining 0 (as Envoy's service answers: the
// request does not fit) and the time until it fits; else OK with its
// tightest enforce gate's limit, remaining and reset, or, when it has only
// shadow gates, its tightest shadow gate's (OK even when full, as Envoy's
// shadow_mode). An unlimited one is OK with remaining 4294967295 as in
// Envoy's service, one that matched nothing (or whose limits another
// descriptor replaces) is OK without a limit.
func render(c enforce.Call, dec enforce.Decision, matches []enforce.DescriptorMatch, now time.Time) *rlsv3.RateLimitResponse {
	n := len(c.Descriptors.Descriptors)
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK, Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, n)}
	if !dec.Allowed {
		resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	if dec.Reason == enforce.ReasonQuarantined || dec.Reason == enforce.ReasonFailClosed {
		for i := range resp.Statuses {
			resp.Statuses[i] = &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OVER_LIMIT}
		}
		return resp
	}
	// rank orders a descriptor's gates: a denying one first, then enforce
	// gates, then shadow ones.
	rank := func(g *enforce.Gate) int {
		switch {
		case g.Shadow:
			return 0
		case deniedGate(dec.Denied, g):
			return 2
		}
		return 1
	}
	for i := range resp.Statuses {
		st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		resp.Statuses[i] = st
		var best *enforce.Gate
		bestRank := -1
		for j := range dec.Gates {
			g := &dec.Gates[j]
			if g.Descriptor != i+1 {
				continue
			}
			if r := rank(g); r > bestRank || (r == bestRank && g.Remaining < best.Remaining) {
				best, bestRank = g, r
			}
		}
		if best == nil {
			if i < len(matches) && matches[i].Unlimited {
				st.LimitRemaining = math.MaxUint32
			}
			continue
		}
		st.CurrentLimit = &rlsv3.RateLimitResponse_RateLimit{
			Name: best.DefinitionID, RequestsPerUnit: clampUint32(best.Limit), Unit: responseUnit(best.WindowSeconds)}
		reset := best.Reset.Sub(now)
		if bestRank == 2 {
			st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
			if best.RetryAfter > 0 {
				reset = best.RetryAfter
			}
		} else if !best.Shadow || !deniedGate(dec.Shadow, best) {
			// (a shadow gate without room for the request says 0, as
			// Envoy's service answers a shadow limit it is over)
			st.LimitRemaining = clampUint32(best.Remaining)
		}
		st.DurationUntilReset = durationpb.New(max(reset, 0).Round(time.Second))
	}
	return resp
}

// deniedGate reports whether g is among denied, a decision's denied (or
// full shadow) gates (its key is not exported; the definition, window and
// descriptor are enough to tell a decision's gates apart).
func deniedGate(denied []enforce.Gate, g *enforce.Gate) bool {
	for i := range denied {
		if d := &denied[i]; d.Descriptor == g.Descriptor && d.WindowSeconds == g.WindowSeconds && d.DefinitionID == g.DefinitionID {
			return true
		}
	}
	return false
}

func clampUint32(v int64) uint32 {
	switch {
	case v < 0:
		return 0
	case v > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(v)
}
