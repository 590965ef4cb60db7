// Command rlload puts a running rlapi under load and reports throughput and
// latency. It is a development tool: bounded in time and in requests, and
// it refuses any server that is not on this machine unless -allow-remote.
//
//	go run ./cmd/rlload -url http://127.0.0.1:8080 -token-file .rl/admin.token \
//	    -concurrency 16 -duration 10s -op put
//
// Operations:
//
//	put   PUT caller:group:<prefix><n>:60, every client cycling over its own
//	      -ids definitions and raising user_max_requests each round, so
//	      every request is a real update (created, untimed, before the run)
//	get   GET one of those definitions
//	list  GET /api/rate-limits, the whole unpaged list, read to the end but
//	      not decoded (the server's cost, not the client's)
//
// The definitions it creates are deleted at the end unless -cleanup=false.
// Every write lands in the audit log of the server's database: point it at
// a development database only.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Bounds: a load run is short, and its latency samples stay in memory.
const (
	maxDuration    = 10 * time.Minute
	maxRequests    = 5_000_000
	maxConcurrency = 1024
)

type config struct {
	url, tokenFile, op, prefix string
	concurrency, ids, requests int
	duration, timeout          time.Duration
	allowRemote, cleanup       bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rlload:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("rlload", flag.ContinueOnError)
	fs.StringVar(&c.url, "url", "http://127.0.0.1:8080", "rlapi base URL")
	fs.StringVar(&c.tokenFile, "token-file", ".rl/admin.token", "file holding an admin API token (viewer is enough for get and list)")
	fs.StringVar(&c.op, "op", "put", "put, get or list")
	fs.IntVar(&c.concurrency, "concurrency", 16, "concurrent clients, each with its own keep-alive connection")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to send requests (at most 10m)")
	fs.IntVar(&c.requests, "requests", 0, "stop after this many requests (0: only -duration bounds the run)")
	fs.IntVar(&c.ids, "ids", 64, "definitions per client for put and get")
	fs.StringVar(&c.prefix, "prefix", "rlload-", "name prefix of the definitions put and get use")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "per-request timeout")
	fs.BoolVar(&c.allowRemote, "allow-remote", false, "allow a server that is not on a loopback address")
	fs.BoolVar(&c.cleanup, "cleanup", true, "delete the definitions put and get created when done")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.op != "put" && c.op != "get" && c.op != "list":
		return c, fmt.Errorf("-op must be put, get or list, not %q", c.op)
	case c.concurrency < 1 || c.concurrency > maxConcurrency:
		return c, fmt.Errorf("-concurrency must be between 1 and %d", maxConcurrency)
	case c.duration <= 0 || c.duration > maxDuration:
		return c, fmt.Errorf("-duration must be positive and at most %s", maxDuration)
	case c.requests < 0 || c.requests > maxRequests:
		return c, fmt.Errorf("-requests must be between 0 and %d", maxRequests)
	case c.ids < 1 || c.ids > 100_000:
		return c, errors.New("-ids must be between 1 and 100000")
	case c.timeout <= 0:
		return c, errors.New("-timeout must be positive")
	}
	return c, nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	if err := checkHost(cfg.url, cfg.allowRemote); err != nil {
		return err
	}
	raw, err := os.ReadFile(cfg.tokenFile)
	if err != nil {
		return fmt.Errorf("read token: %w", err)
	}
	tok := strings.TrimSpace(string(raw))
	hc := &http.Client{Transport: &http.Transport{
		Proxy:               nil, // loopback: never through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        cfg.concurrency,
		MaxIdleConnsPerHost: cfg.concurrency, // one kept-alive connection per client
		IdleConnTimeout:     90 * time.Second,
	}}
	c, err := client.New(cfg.url, client.Options{Token: tok, HTTPClient: hc, Retries: -1, Timeout: cfg.timeout, UserAgent: "rlload"})
	if err != nil {
		return err
	}
	l := &loader{cfg: cfg, c: c, hc: hc, token: tok}

	if cfg.op != "list" {
		fmt.Fprintf(out, "rlload: creating %d definitions (untimed)\n", cfg.concurrency*cfg.ids)
		if err := l.setup(ctx); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		if cfg.cleanup {
			defer func() {
				// A fresh context: an interrupted run still cleans up.
				cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := l.teardown(cctx); err != nil {
					fmt.Fprintln(os.Stderr, "rlload: cleanup:", err)
				}
			}()
		}
	}

	fmt.Fprintf(out, "rlload: %s against %s, %d clients, %s", cfg.op, cfg.url, cfg.concurrency, cfg.duration)
	if cfg.requests > 0 {
		fmt.Fprintf(out, " or %d requests", cfg.requests)
	}
	fmt.Fprintln(out)
	res := l.load(ctx)
	res.print(out)
	if res.n == 0 {
		return errors.New("no request completed")
	}
	return nil
}

// checkHost refuses a server that is not on this machine unless allowed:
// load is for development servers, not someone's production.
func checkHost(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("-url %q: scheme must be http or https", raw)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("-url %q: missing host", raw)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("-url host %q is not a loopback address; pass -allow-remote to load a remote server", host)
}

type loader struct {
	cfg   config
	c     *client.Client
	hc    *http.Client
	token string
}

func (l *loader) name(worker, k int) string {
	return fmt.Sprintf("%s%d-%d", l.cfg.prefix, worker, k)
}

func (l *loader) definition(worker, k, limit int) ratelimit.Definition {
	return ratelimit.Definition{
		Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: l.name(worker, k),
		WindowSeconds: 60, UserMaxRequests: &limit, Enabled: true, Description: "rlload",
	}
}

// forEachID runs fn for every (worker, id) pair, concurrency at a time.
func (l *loader) forEachID(ctx context.Context, fn func(ctx context.Context, w, k int) error) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for w := range l.cfg.concurrency {
		wg.Go(func() {
			for k := range l.cfg.ids {
				if err := fn(ctx, w, k); err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

func (l *loader) setup(ctx context.Context) error {
	return l.forEachID(ctx, func(ctx context.Context, w, k int) error {
		_, err := l.c.PutDefinition(ctx, l.definition(w, k, 100), client.WriteOptions{})
		return err
	})
}

func (l *loader) teardown(ctx context.Context) error {
	return l.forEachID(ctx, func(ctx context.Context, w, k int) error {
		_, err := l.c.DeleteDefinition(ctx, l.definition(w, k, 100).Key(), client.WriteOptions{})
		if errors.Is(err, client.ErrNotFound) {
			return nil
		}
		return err
	})
}

// op sends one request of the run; seq counts the worker's requests.
func (l *loader) op(ctx context.Context, worker, seq int) error {
	k := seq % l.cfg.ids
	switch l.cfg.op {
	case "put":
		// Set up at 100; 1000+round differs from it and from the last round.
		_, err := l.c.PutDefinition(ctx, l.definition(worker, k, 1000+seq/l.cfg.ids), client.WriteOptions{})
		return err
	case "get":
		_, err := l.c.GetDefinition(ctx, l.definition(worker, k, 100).Key())
		return err
	default:
		return l.list(ctx)
	}
}

func (l *loader) list(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(l.cfg.url, "/")+"/api/rate-limits", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	resp, err := l.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

type result struct {
	n, errs   int
	elapsed   time.Duration
	latencies []time.Duration // of the successful requests
	errKinds  map[string]int
}

func (l *loader) load(ctx context.Context) result {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.duration)
	defer cancel()
	var (
		mu      sync.Mutex
		res     = result{errKinds: map[string]int{}}
		started int
		wg      sync.WaitGroup
	)
	// take reserves the next request, so -requests bounds the total.
	take := func() bool {
		if ctx.Err() != nil {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if l.cfg.requests > 0 && started >= l.cfg.requests {
			return false
		}
		started++
		return true
	}
	start := time.Now()
	for w := range l.cfg.concurrency {
		wg.Go(func() {
			var (
				lat  []time.Duration
				errs = map[string]int{}
			)
			for seq := 0; take(); seq++ {
				t := time.Now()
				// The run's deadline must not fail the last requests in
				// flight: each has its own timeout instead.
				err := l.op(context.WithoutCancel(ctx), w, seq)
				d := time.Since(t)
				if err != nil {
					errs[errKind(err)]++
					continue
				}
				lat = append(lat, d)
			}
			mu.Lock()
			res.latencies = append(res.latencies, lat...)
			for k, v := range errs {
				res.errKinds[k] += v
				res.errs += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.n = len(res.latencies) + res.errs
	return res
}

// errKind groups errors for the report: the API's status, else the message.
func errKind(err error) string {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		return fmt.Sprintf("HTTP %d", apiErr.StatusCode)
	}
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120] + "..."
	}
	return msg
}

func (r result) print(out io.Writer) {
	slices.Sort(r.latencies)
	pct := func(p float64) time.Duration {
		if len(r.latencies) == 0 {
			return 0
		}
		i := int(p/100*float64(len(r.latencies))+0.5) - 1
		return r.latencies[min(max(i, 0), len(r.latencies)-1)]
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }
	fmt.Fprintf(out, "requests    %d in %s (%d errors)\n", r.n, r.elapsed.Round(time.Millisecond), r.errs)
	fmt.Fprintf(out, "throughput  %.1f req/s\n", float64(r.n)/r.elapsed.Seconds())
	fmt.Fprintf(out, "latency     p50 %s  p90 %s  p99 %s  max %s\n", ms(pct(50)), ms(pct(90)), ms(pct(99)), ms(pct(100)))
	kinds := make([]string, 0, len(r.errKinds))
	for k := range r.errKinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		fmt.Fprintf(out, "error       %dx %s\n", r.errKinds[k], k)
	}
}
