// Package api is rlapi's HTTP server: the management API over the store.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/internal/connlimit"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counteradmin"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Config is what an operator tunes; zero values take the defaults.
type Config struct {
	Floors validate.Floors
	// TrustedProxies are the peers whose forwarding header (ClientIPHeader)
	// is believed: by the auth lockout, GET /api/validate and POST
	// /api/check's client_ip default.
	TrustedProxies []netip.Prefix
	// ClientIPHeader is the forwarding header believed from trusted
	// proxies (clientip.Headers; default X-Forwarded-For).
	ClientIPHeader string
	// IPv6Prefix is the prefix length IPv6 client addresses are keyed by
	// (default 64): decisions' anonymous ip callers and network lookups.
	IPv6Prefix int
	// Classifier says which paths GET /api/validate reads as an MCP
	// server or an A2A agent (zero: the default, httpgate.ClassifyURI's).
	Classifier httpgate.Classifier
	// GatewaySecret is what a gateway (nginx) sends as X-Gateway-Secret on
	// GET /api/validate, which answers only trusted proxies that send it;
	// empty refuses every /api/validate call.
	GatewaySecret string
	// AuthMaxFailures failed authentications from one address within
	// AuthWindow lock it out for AuthLockout (defaults 5, 60s, 300s),
	// counted in Opts.Counters, so shared by every replica counting
	// there. A negative AuthMaxFailures turns the
	// lockout off. Window and lockout are whole seconds, 1s to 24h.
	AuthMaxFailures int
	AuthWindow      time.Duration
	AuthLockout     time.Duration
	// BackendTimeout bounds the token lookup of a decision (POST
	// /api/check) when the token is not cached (default 250ms, as the
	// Enforcer's counter round trip).
	BackendTimeout time.Duration
	// TokenCacheTTL is how long a verified token is trusted without
	// asking the database (default 10s; negative: never cached).
	// Revocations empty every replica's cache at once (NOTIFY); the TTL
	// bounds staleness when a notification is lost.
	TokenCacheTTL time.Duration
	// RequestTimeout bounds each request's database work (default 10s).
	RequestTimeout time.Duration
	// ShutdownTimeout bounds the wait for in-flight requests on SIGTERM.
	ShutdownTimeout time.Duration
	// MaxClientConns caps the client connections served at once (default
	// DefaultMaxClientConns; negative: no cap). Connections beyond it wait
	// in the kernel's accept queue until one closes, so a flood of idle
	// connections cannot use up rlapi's file descriptors.
	MaxClientConns int
	// AccessLogDecisions writes the access log lines of the decision
	// routes (isDecisionRoute), left out by default: a gateway calls
	// them for every request it decides.
	AccessLogDecisions bool
	// EventsRetention is how long the record of violations keeps a
	// minute's rows (default DefaultEventsRetention; negative: this
	// replica never deletes them). Serve deletes older rows every
	// eventsSweepInterval.
	EventsRetention time.Duration
}

// DefaultEventsRetention is Config.EventsRetention's default: a week.
const DefaultEventsRetention = 7 * 24 * time.Hour

// DefaultMaxClientConns is Config.MaxClientConns' default: well below the
// usual file limit of a service (ulimit -n 65536 under systemd) while far
// above what a management API and its gateways need.
const DefaultMaxClientConns = 4096

func (c *Config) setDefaults() {
	if c.Floors == (validate.Floors{}) {
		c.Floors = validate.DefaultFloors()
	}
	if c.AuthMaxFailures == 0 {
		c.AuthMaxFailures = 5
	}
	if c.AuthWindow == 0 {
		c.AuthWindow = time.Minute
	}
	if c.AuthLockout == 0 {
		c.AuthLockout = 5 * time.Minute
	}
	if c.BackendTimeout <= 0 {
		c.BackendTimeout = 250 * time.Millisecond
	}
	if c.TokenCacheTTL == 0 {
		c.TokenCacheTTL = 10 * time.Second
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 20 * time.Second
	}
	if c.MaxClientConns == 0 {
		c.MaxClientConns = DefaultMaxClientConns
	}
	if c.IPv6Prefix == 0 {
		c.IPv6Prefix = clientip.DefaultIPv6Prefix
	}
	if c.EventsRetention == 0 {
		c.EventsRetention = DefaultEventsRetention
	}
}

// Server serves the API.
type Server struct {
	store        *store.Store
	cfg          Config
	log          *slog.Logger
	now          func() time.Time
	metrics      *metrics
	authThrottle *authThrottle
	// authStore verifies tokens; rlapi gives it the decisions' pool so a
	// busy management pool cannot delay a decision's token check.
	authStore *store.Store
	tokens    *tokenCache
	// tokensLive: the token listener is connected, so cached tokens hear
	// of revocations (TokenListenerLive).
	tokensLive atomic.Bool
	// enforcer answers the decision endpoints; nil when rlapi serves only
	// the management API (they then answer 503).
	enforcer *enforce.Enforcer
	// gatewayThrottle counts the authentications gateways report (POST
	// /api/auth-events): the throttle the Enforcer was built with as its
	// guard (nil: none, reports then lock nothing).
	gatewayThrottle *auththrottle.Throttle
	// counterAdmin lists and resets the decisions' counters; nil when
	// rlapi was given none (the counters API then answers 503).
	counterAdmin counteradmin.Admin
	// countersBackend names the store rlapi's and the gateways'
	// failed-credential throttles count in (Opts.Counters' BackendName;
	// "" when none is given).
	countersBackend string
	// clientIPs finds a request's client address (pkg/clientip), the one
	// resolver of the lockout and the decision endpoints.
	clientIPs *clientip.Resolver
	// ready are /readyz's checks besides the database (Opts.Ready).
	ready []ReadyCheck
	// setup is what GET /api/server reports (Opts.Setup).
	setup ServerSetup
	// sweepHook, set by tests only, is called as a sweep round starts
	// under its lock (handle_events.go).
	sweepHook atomic.Pointer[func(ctx context.Context, lock string)]
}

// Opts are optional dependencies of New.
type Opts struct {
	Logger *slog.Logger
	Now    func() time.Time
	// Enforcer serves POST /api/check and GET /api/validate.
	Enforcer *enforce.Enforcer
	// AuthThrottle is the gateways' failed-credential throttle (scope
	// gateway): the one Enforcer was built with as its Options.Guard, so
	// that the addresses POST /api/auth-events locks are refused by the
	// decisions. nil: reports count nothing.
	AuthThrottle *auththrottle.Throttle
	// AuthStore is where tokens are looked up (nil: the management store).
	AuthStore *store.Store
	// Registry is where /metrics' series live; pass the one the Enforcer
	// registered in so its series are served too (nil: a fresh one).
	Registry *prometheus.Registry
	// Counters is where rlapi's own failed-credential lockout counts:
	// the decisions' counter store (rlapi --counters-url), so that every
	// replica shares one count. Required unless Config.AuthMaxFailures is
	// negative (the lockout off).
	Counters enforce.CounterStore
	// CounterAdmin lists and resets the decisions' counters (GET and
	// DELETE /api/rate-limit-counters); nil: those answer 503.
	CounterAdmin counteradmin.Admin
	// Violations is the record of violations rlapi's own failed-credential
	// lockouts are added to (pkg/enforce/violations' Recorder, the one
	// observing the Enforcer's decisions); nil: they are not recorded.
	Violations EventRecorder
	// Ready are what /readyz checks besides the database: the counter
	// store when it is not the database (Redis).
	Ready []ReadyCheck
	// Setup is what GET /api/server reports.
	Setup ServerSetup
}

// EventRecorder adds an event to the record of violations.
type EventRecorder interface {
	RecordEvent(ev ratelimit.Event) error
}

// New returns a server over st.
func New(st *store.Store, cfg Config, opts Opts) *Server {
	cfg.setDefaults()
	if opts.Counters == nil && cfg.AuthMaxFailures >= 0 {
		// A programming error, not a setting: the lockout would be off
		// without anyone having turned it off.
		panic("api: New: Opts.Counters is required unless Config.AuthMaxFailures < 0 (the auth lockout off)")
	}
	s := &Server{store: st, cfg: cfg, log: opts.Logger, now: opts.Now, enforcer: opts.Enforcer, counterAdmin: opts.CounterAdmin,
		gatewayThrottle: opts.AuthThrottle, ready: opts.Ready, setup: opts.Setup}
	if opts.Counters != nil {
		s.countersBackend = opts.Counters.BackendName()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	ips, err := clientip.New(cfg.TrustedProxies, cfg.ClientIPHeader)
	if err != nil {
		// rlapi's flags are checked before New; a Config built in code
		// falls back to the default header rather than failing.
		s.log.Error("client IP header refused; believing X-Forwarded-For", "err", err)
		ips, _ = clientip.New(cfg.TrustedProxies, "")
	}
	s.clientIPs = ips
	s.metrics = newMetrics(opts.Registry)
	s.authStore = opts.AuthStore
	if s.authStore == nil {
		s.authStore = st
	}
	s.authThrottle = newAuthThrottle(opts.Counters, cfg.AuthMaxFailures, cfg.AuthWindow, cfg.AuthLockout,
		maxTracked, s.now, s.log)
	s.metrics.registry.MustRegister(s.authThrottle.lockouts, s.authThrottle.active)
	if opts.Violations != nil {
		s.authThrottle.recordTo(opts.Violations)
	}
	s.tokens = newTokenCache(cfg.TokenCacheTTL, maxCachedTokens)
	return s
}

// TokenListenerLive reports whether the token change listener is
// connected. Until it is, what the cache holds is emptied when it connects
// (a token cached before could have missed a revocation); tests wait for it
// so that what their first calls cache stays cached.
func (s *Server) TokenListenerLive() bool { return s.tokensLive.Load() }

// tokenListenerWait bounds how long Serve waits for the token listener's
// first attempt before it accepts connections.
const tokenListenerWait = 2 * time.Second

// Serve answers on ln until ctx ends, then lets in-flight requests finish
// (up to Config.ShutdownTimeout) before returning.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      5 * time.Minute, // whole-list streams of large stores
		IdleTimeout:       2 * time.Minute, // an idle keep-alive holds one of MaxClientConns this long at most
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	if s.cfg.MaxClientConns > 0 {
		ln = connlimit.Listen(ln, s.cfg.MaxClientConns)
	}
	listenCtx, stopListen := context.WithCancel(ctx)
	listening := make(chan struct{})
	defer func() {
		// The listener holds a connection: hand it back before the
		// caller closes the pool.
		stopListen()
		<-listening
	}()
	// The token listener's first connection empties the cache (a token
	// cached before it could have missed a revocation), so serving
	// before it is up would verify the first tokens twice and lose what
	// the first calls cached. Wait for its first attempt, a bounded while.
	firstAttempt := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(listening)
		// Without a token cache it still runs: lifted auth lockouts
		// reach this replica's throttle through it.
		s.listenTokens(listenCtx, func() { once.Do(func() { close(firstAttempt) }) })
	}()
	if s.tokens.ttl > 0 {
		select {
		case <-firstAttempt:
		case <-time.After(tokenListenerWait):
			s.log.Warn("token change listener not up yet; serving anyway, verified tokens are cached once it is", "waited", tokenListenerWait)
		case <-ctx.Done():
		}
	}
	sweeping := make(chan struct{})
	go func() {
		defer close(sweeping)
		s.sweepEventsLoop(listenCtx)
	}()
	defer func() { stopListen(); <-sweeping }()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return err
}
