// Command filegateway is a small HTTP gateway that enforces rate limits and
// quarantine from a state file (the format of rlctl apply and rlctl
// export), with the counters in memory: no rlapi, no database. Replace
// the file (write a temporary file in its directory, then rename it over
// the old one) and the new limits apply within two poll intervals; a
// change that does not parse, or that looks like a file cut short (it
// empties a quarantine group, or drops more than -max-shrink of the
// definitions and memberships), is logged once and the last good state
// stays in force. To let a meant shrink through, end the file with the
// line "# rlctl: allow-shrink", or restart with -allow-shrink (the first
// load is never refused for its size). GET /metrics counts refusals in
// rlctl_filesource_refused_total, beside the Enforcer's metrics.
//
//	go run ./examples/filegateway -file state.yaml -listen 127.0.0.1:8080
//	curl -H 'X-User: alice' http://127.0.0.1:8080/mcp/github/search
//
// Requests under /mcp/{server}/[{tool}] and /a2a/{agent}/[{skill}] are
// data-plane calls on that target; the caller is the X-User header (a
// human) or the X-Client-Id header (an agent). Those headers stand in for
// the gateway's own authentication: a real gateway takes the caller from
// its verified token, never from a header the client chooses. Allowed
// calls get a 200 from a stand-in upstream; throttled ones 429 with
// Retry-After and the rate-limit headers; quarantined ones 403.
//
// Counters live in this process: run one replica, or accept that each
// replica counts on its own (rlapi and PostgreSQL share counters between
// replicas).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/filesource"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "filegateway:", err)
		os.Exit(1)
	}
}

// run starts the gateway and serves until ctx ends. It prints the address
// it listens on to stdout once it accepts connections.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("filegateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "state.yaml", "the state file (YAML or JSON, as rlctl export writes it)")
	listen := fs.String("listen", "127.0.0.1:8080", "the address to listen on (port 0: any free port)")
	poll := fs.Duration("poll", time.Second, "how often the state file is checked for changes")
	failClosed := fs.Bool("fail-closed", false, "deny calls when limits cannot be checked")
	maxShrink := fs.Float64("max-shrink", filesource.DefaultMaxShrink, "refuse a change that drops more than this fraction of the definitions and memberships (0 to 1)")
	allowShrink := fs.Bool("allow-shrink", false, "load changes however much they shrink the state or empty a quarantine group")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *maxShrink <= 0 || *maxShrink > 1 {
		return fmt.Errorf("-max-shrink %g: must be above 0 and at most 1 (1 lets any count through; -allow-shrink turns the guards off)", *maxShrink)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	reg := prometheus.NewRegistry()

	src, err := filesource.New(*file, filesource.Options{Interval: *poll, Logger: log, Registerer: reg,
		MaxShrink: *maxShrink, AllowShrink: *allowShrink})
	if err != nil {
		return err
	}
	e, err := enforce.New(ctx, enforce.Options{
		Counters:   memory.New(),
		Source:     src,
		FailClosed: *failClosed,
		Logger:     log,
		Registerer: reg,
	})
	if err != nil {
		return err
	}
	defer e.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", httpgate.Middleware(e, classify, httpgate.MiddlewareOptions{ErrorLog: log})(http.HandlerFunc(upstream)))

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// classify maps /mcp/{server}/[{tool}] and /a2a/{agent}/[{skill}] to a
// call; anything else is not a data-plane call.
func classify(r *http.Request) (enforce.Call, bool) {
	kind, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	var targetType string
	switch kind {
	case "mcp":
		targetType = ratelimit.EntityMCPServer
	case "a2a":
		targetType = ratelimit.EntityA2AAgent
	default:
		return enforce.Call{}, false
	}
	target, tool, _ := strings.Cut(rest, "/")
	if target == "" {
		return enforce.Call{}, false
	}
	return enforce.Call{
		Username:   r.Header.Get("X-User"),
		ClientID:   r.Header.Get("X-Client-Id"),
		TargetType: targetType,
		TargetName: target,
		Tool:       strings.Trim(tool, "/"),
	}, true
}

// upstream stands in for the service behind the gateway.
func upstream(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "upstream: %s %s\n", r.Method, r.URL.Path)
}
