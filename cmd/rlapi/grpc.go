package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/connlimit"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/envoyrls"
)

// grpcConfig is the Envoy rate-limit service's listener (off unless
// --grpc-addr is set; docs/envoy.md).
type grpcConfig struct {
	addr, trusted, certFile, keyFile, clientCA *string
	headers                                    *bool
	countMode                                  *string
	maxConns, maxStreams                       *int
}

// Bounds of the gRPC listener's defaults (docs/envoy.md, "Limits of the
// listener"). A connection serves at most defaultGRPCMaxStreams calls at
// once (a gateway's client queues past it or opens another connection),
// and the listener holds at most defaultGRPCMaxConns connections: their
// product times envoyrls.MaxRequestBytes bounds what authenticated callers
// can make rlapi buffer, and callers without a token make it buffer
// nothing (envoyrls.Service.Tap).
const (
	defaultGRPCMaxConns   = 1024
	defaultGRPCMaxStreams = 128
	// grpcHandshakeTimeout bounds a new connection's TLS handshake and
	// HTTP/2 preface (grpc-go's default keeps a silent one 120 s).
	grpcHandshakeTimeout = 5 * time.Second
	// grpcMaxHeaderBytes bounds a call's metadata (grpc-go's default is
	// 16 MiB); a token and Envoy's headers take a few hundred bytes.
	grpcMaxHeaderBytes = 64 << 10
	// The services that need no token (health and reflection) have caps of
	// their own across all connections, so that nobody can make the server
	// buffer their messages without bound: short calls (a health Check)
	// and long ones (a health Watch, a reflection stream) apart, so that
	// held Watch streams never starve a probe's Check, and each with a
	// deadline, so that a slot held open is given back.
	grpcMaxAnonymousCalls   = 64
	grpcAnonymousCallTime   = 5 * time.Second
	grpcMaxAnonymousStreams = 16
	grpcAnonymousStreamTime = 10 * time.Minute
	// One client address may hold 1/grpcConnsShare of --grpc-max-conns
	// (at least 8), so that one host cannot take every slot;
	// --grpc-trusted-clients are exempt.
	grpcConnsShare = 16
)

func grpcFlags(fs *flag.FlagSet, getenv func(string) string) (grpcConfig, error) {
	maxConns, err := envInt(getenv, "RLAPI_GRPC_MAX_CONNS", defaultGRPCMaxConns)
	if err != nil {
		return grpcConfig{}, err
	}
	maxStreams, err := envInt(getenv, "RLAPI_GRPC_MAX_STREAMS", defaultGRPCMaxStreams)
	if err != nil {
		return grpcConfig{}, err
	}
	return grpcConfig{
		maxConns: fs.Int("grpc-max-conns", maxConns,
			"gRPC client connections held at once; more wait in the accept queue until one closes; -1: no cap (RLAPI_GRPC_MAX_CONNS)"),
		maxStreams: fs.Int("grpc-max-streams", maxStreams,
			"gRPC calls in flight on one connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); clients queue past it (RLAPI_GRPC_MAX_STREAMS)"),
		addr: fs.String("grpc-addr", getenv("RLAPI_GRPC_ADDR"),
			"listen address of Envoy's rate-limit service (envoy.service.ratelimit.v3 over gRPC); empty: off (RLAPI_GRPC_ADDR)"),
		trusted: fs.String("grpc-trusted-clients", getenv("RLAPI_GRPC_TRUSTED_CLIENTS"),
			"comma-separated CIDRs whose gRPC calls need no token; others send an enforcer token as 'authorization: Bearer <token>' metadata (RLAPI_GRPC_TRUSTED_CLIENTS)"),
		certFile: fs.String("grpc-tls-cert", getenv("RLAPI_GRPC_TLS_CERT"), "PEM certificate of the gRPC listener; with --grpc-tls-key it serves TLS (RLAPI_GRPC_TLS_CERT)"),
		keyFile:  fs.String("grpc-tls-key", getenv("RLAPI_GRPC_TLS_KEY"), "PEM private key of --grpc-tls-cert (RLAPI_GRPC_TLS_KEY)"),
		clientCA: fs.String("grpc-client-ca", getenv("RLAPI_GRPC_CLIENT_CA"),
			"PEM CA bundle: gRPC clients must present a certificate it signed (mutual TLS; needs --grpc-tls-cert) (RLAPI_GRPC_CLIENT_CA)"),
		headers: fs.Bool("grpc-headers", envBool(getenv, "RLAPI_GRPC_HEADERS"),
			"add the rate-limit headers (X-RateLimit-*, RateLimit, RateLimit-Policy, Retry-After) to ShouldRateLimit answers (RLAPI_GRPC_HEADERS)"),
		countMode: fs.String("grpc-count-mode", cmp.Or(getenv("RLAPI_GRPC_COUNT_MODE"), string(envoyrls.CountAllOrNothing)),
			"how a request's descriptors are counted: all-or-nothing (one a limit denies consumes nothing on the others) or every-descriptor "+
				"(each counted on its own, as Envoy's ratelimit service does; descriptors may then carry their own hits_addend) (RLAPI_GRPC_COUNT_MODE)"),
	}, nil
}

// check validates the flags before anything starts.
func (g grpcConfig) check() ([]netip.Prefix, error) {
	if _, err := envoyrls.ParseCountMode(*g.countMode); err != nil {
		return nil, fmt.Errorf("%w: --grpc-count-mode: %w", errUsage, err)
	}
	if *g.addr == "" {
		for name, v := range map[string]string{"--grpc-trusted-clients": *g.trusted, "--grpc-tls-cert": *g.certFile,
			"--grpc-tls-key": *g.keyFile, "--grpc-client-ca": *g.clientCA} {
			if v != "" {
				return nil, fmt.Errorf("%w: %s needs --grpc-addr", errUsage, name)
			}
		}
		return nil, nil
	}
	if *g.maxConns == 0 || *g.maxConns < -1 {
		return nil, fmt.Errorf("%w: --grpc-max-conns: must be >= 1, or -1 for no cap (got %d)", errUsage, *g.maxConns)
	}
	if *g.maxStreams < 1 || *g.maxStreams > 1<<20 {
		return nil, fmt.Errorf("%w: --grpc-max-streams: must be between 1 and %d (got %d)", errUsage, 1<<20, *g.maxStreams)
	}
	if (*g.certFile == "") != (*g.keyFile == "") {
		return nil, fmt.Errorf("%w: --grpc-tls-cert and --grpc-tls-key go together", errUsage)
	}
	if *g.clientCA != "" && *g.certFile == "" {
		return nil, fmt.Errorf("%w: --grpc-client-ca needs --grpc-tls-cert and --grpc-tls-key (mutual TLS is TLS)", errUsage)
	}
	return parsePrefixes("--grpc-trusted-clients (RLAPI_GRPC_TRUSTED_CLIENTS)", *g.trusted)
}

func (g grpcConfig) credentials() (grpc.ServerOption, error) {
	if *g.certFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(*g.certFile, *g.keyFile)
	if err != nil {
		return nil, fmt.Errorf("--grpc-tls-cert/--grpc-tls-key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if *g.clientCA != "" {
		pem, err := os.ReadFile(*g.clientCA)
		if err != nil {
			return nil, fmt.Errorf("--grpc-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--grpc-client-ca: %s holds no PEM certificate", *g.clientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return grpc.Creds(credentials.NewTLS(cfg)), nil
}

// startGRPC listens and serves the Envoy rate-limit service, the gRPC
// health service and server reflection until ctx ends; stop waits for it.
func startGRPC(ctx context.Context, g grpcConfig, trusted []netip.Prefix, enf *enforce.Enforcer, srv *api.Server,
	registry prometheus.Registerer, log *slog.Logger, stdout io.Writer, shutdown time.Duration) (stop func(), err error) {
	if *g.addr == "" {
		return func() {}, nil
	}
	creds, err := g.credentials()
	if err != nil {
		return nil, err
	}
	svc, err := envoyrls.New(envoyrls.Options{
		Enforcer: enf, Headers: *g.headers, TrustedClients: trusted, Registerer: registry, CountMode: envoyrls.CountMode(*g.countMode),
		Authenticate: func(ctx context.Context, tok string, peer netip.Addr) error {
			return tokenStatus(srv.VerifyDecisionToken(ctx, tok, peer))
		},
		TokenCached: srv.DecisionTokenCached,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", *g.addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (--grpc-addr): %w", *g.addr, err)
	}
	if *g.maxConns > 0 {
		ln = connlimit.Listen(ln, *g.maxConns)
		ln = connlimit.PerAddress(ln, max(8, *g.maxConns/grpcConnsShare), trusted)
	}
	calls, streams := make(chan struct{}, grpcMaxAnonymousCalls), make(chan struct{}, grpcMaxAnonymousStreams)
	anonymous := func(ctx context.Context, slots chan struct{}, d time.Duration) (context.Context, error) {
		select {
		case slots <- struct{}{}:
			ctx, cancel := context.WithTimeout(ctx, d)
			context.AfterFunc(ctx, func() { cancel(); <-slots })
			return ctx, nil
		default:
			return ctx, status.Errorf(codes.ResourceExhausted, "more than %d such calls in flight; retry shortly", cap(slots))
		}
	}
	opts := []grpc.ServerOption{
		// Authorize from the metadata, before any message is read, and
		// bound what the calls that pass may make the server hold.
		grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
			switch {
			case info.FullMethodName == "/grpc.health.v1.Health/Check":
				return anonymous(ctx, calls, grpcAnonymousCallTime)
			case strings.HasPrefix(info.FullMethodName, "/grpc.health.") || strings.HasPrefix(info.FullMethodName, "/grpc.reflection."):
				return anonymous(ctx, streams, grpcAnonymousStreamTime)
			}
			return svc.Tap(ctx, info)
		}),
		grpc.MaxRecvMsgSize(envoyrls.MaxRequestBytes),
		// A request that is not valid UTF-8 is InvalidArgument naming
		// its field (envoyrls.Codec), not grpc-go's Internal.
		grpc.ForceServerCodecV2(envoyrls.Codec{}),
		grpc.MaxConcurrentStreams(uint32(*g.maxStreams)),
		grpc.MaxHeaderListSize(grpcMaxHeaderBytes),
		grpc.ConnectionTimeout(grpcHandshakeTimeout),
		// Ping a connection idle for a minute, close it when the ping goes
		// unanswered for 20 s (a vanished gateway's slot comes back), and
		// close one without calls for 15 minutes.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 15 * time.Minute, Time: time.Minute, Timeout: 20 * time.Second}),
	}
	if creds != nil {
		opts = append(opts, creds)
	}
	// Long-lived stream workers, one per core, instead of a goroutine per
	// call: a new goroutine's stack grew on every decision (the
	// enforcer's path is deeper than its first 8 KiB), which was 5% of a
	// lone decision's CPU; with workers a single stream made 12% more
	// decisions per second and 64 streams 7% (docs/performance-history.md, "gRPC
	// stream workers"). grpc-go marks the option experimental: when it
	// goes, this line does, and only that measurement is lost.
	opts = append(opts, grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))))
	gs := grpc.NewServer(opts...)
	svc.Register(gs)
	hs := health.NewServer()
	hs.SetServingStatus("envoy.service.ratelimit.v3.RateLimitService", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := gs.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			log.Error("gRPC listener stopped", "err", err)
		}
	}()
	scheme := "grpc"
	if creds != nil {
		scheme = "grpcs"
	}
	clientCerts := ""
	if *g.clientCA != "" {
		clientCerts = " (client certificates required)"
	}
	// One line, as for HTTP (see serve).
	fmt.Fprintf(stdout, "rlapi gRPC listening on %s://%s%s\n", scheme, ln.Addr(), clientCerts)
	return func() {
		hs.Shutdown()
		stopped := make(chan struct{})
		go func() { gs.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(shutdown):
			gs.Stop()
		}
		<-done
	}, nil
}

// tokenStatus words a refused token as gRPC does.
func tokenStatus(err error) error {
	var tr *api.TokenRefusal
	if !errors.As(err, &tr) {
		return err
	}
	code := codes.Unauthenticated
	switch tr.Status {
	case http.StatusForbidden:
		code = codes.PermissionDenied
	case http.StatusTooManyRequests:
		code = codes.ResourceExhausted
	case http.StatusServiceUnavailable:
		code = codes.Unavailable
	}
	return status.Error(code, tr.Detail)
}
