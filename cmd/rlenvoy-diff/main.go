// Command rlenvoy-diff compares rlapi's Envoy rate-limit service with
// Envoy's own (github.com/envoyproxy/ratelimit) answer by answer: both fed
// the same seeded sequences of ShouldRateLimit requests over Envoy's own
// configuration files, compared per descriptor (code, current_limit,
// limit_remaining, duration_until_reset within a tolerance).
// scripts/diff-envoy-ratelimit.sh starts both services and runs it; docs/envoy.md,
// "Differential test against Envoy's service", has the figures.
//
//	rlenvoy-diff configs -envoy-repo ~/src/ratelimit -out DIR
//	rlenvoy-diff run -envoy 127.0.0.1:8081 -rlapi 127.0.0.1:9081 -config DIR \
//	    -envoy-redis redis://127.0.0.1:6379/0 -rlapi-redis redis://127.0.0.1:6379/1
//
// configs copies Envoy's configuration files from a checkout of its
// repository into DIR, the same for both services (domains renamed apart,
// the descriptors rlctl cannot import left out, each named with the reason).
// run needs both services serving DIR's configuration: Envoy's loading the
// directory, rlapi the definitions `rlctl import envoy-ratelimit
// --merge-domains DIR --apply` wrote, served with --grpc-count-mode
// every-descriptor and trusting the caller's address (--grpc-trusted-clients).
// Each sequence starts on empty counters when -envoy-redis and -rlapi-redis
// name the two services' counter databases (emptied with FLUSHDB: give
// databases only the run uses).
//
// Exit status: 0 when every difference is in the allowlist (each entry
// names the docs/envoy.md section that documents it), 1 when one is not,
// 2 when the run could not be made.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

const usage = `usage: rlenvoy-diff configs -envoy-repo DIR -out DIR
       rlenvoy-diff run -envoy ADDR -rlapi ADDR -config DIR [flags]`

func realMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fail := func(err error) int {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "rlenvoy-diff:", err)
		}
		return 2
	}
	switch args[0] {
	case "configs":
		fs := flag.NewFlagSet("rlenvoy-diff configs", flag.ContinueOnError)
		fs.SetOutput(stderr)
		repo := fs.String("envoy-repo", getenv("ENVOY_RLS_REPO"), "a checkout of github.com/envoyproxy/ratelimit (ENVOY_RLS_REPO)")
		out := fs.String("out", "", "the directory to write the configuration files to")
		if err := fs.Parse(args[1:]); err != nil {
			return fail(err)
		}
		if *repo == "" || *out == "" {
			return fail(errors.New("configs: -envoy-repo (or ENVOY_RLS_REPO) and -out are required"))
		}
		drops, err := copyConfigs(*repo, *out)
		if err != nil {
			return fail(err)
		}
		for _, s := range configSources {
			fmt.Fprintf(stdout, "%s -> %s\n", s.Path, s.File)
		}
		for _, d := range drops {
			fmt.Fprintf(stdout, "left out %s %s: %s\n", d.File, d.Descriptor, d.Reason)
		}
		for _, p := range unusedConfigs(*repo) {
			fmt.Fprintf(stdout, "not used %s\n", p)
		}
		return 0
	case "run":
		fs := flag.NewFlagSet("rlenvoy-diff run", flag.ContinueOnError)
		fs.SetOutput(stderr)
		var o runOpts
		fs.StringVar(&o.envoyAddr, "envoy", "", "host:port of Envoy's ratelimit service (gRPC)")
		fs.StringVar(&o.oursAddr, "rlapi", "", "host:port of rlapi's --grpc-addr (served with --grpc-count-mode every-descriptor)")
		fs.StringVar(&o.envoyRedis, "envoy-redis", "", "redis://host:port/db of Envoy's counters, emptied before each sequence (empty: never emptied)")
		fs.StringVar(&o.oursRedis, "rlapi-redis", "", "redis://host:port/db of rlapi's counters (--counters-url), emptied before each sequence")
		fs.StringVar(&o.configDir, "config", "", "the configuration directory both services serve (rlenvoy-diff configs)")
		fs.Uint64Var(&o.seed, "seed", 1, "seed of the generated requests: a seed and a configuration give the same requests")
		fs.IntVar(&o.sequences, "sequences", 1000, "sequences of requests, each on empty counters")
		fs.IntVar(&o.maxRequests, "max-requests", 12, "requests per sequence, at most (at least 2)")
		fs.DurationVar(&o.tolerance, "reset-tolerance", 2*time.Second, "how far apart duration_until_reset may be")
		fs.IntVar(&o.show, "show", 20, "differences outside the allowlist to print")
		fs.StringVar(&o.diffsFile, "diffs", "", "write every request that differs (request, both answers, differences) to this file as JSON lines")
		fs.DurationVar(&o.callTimeout, "timeout", 5*time.Second, "deadline of each call")
		fs.DurationVar(&o.readyAfter, "ready-timeout", 60*time.Second, "how long to wait for both services to have loaded the configuration")
		fs.DurationVar(&o.guard, "guard", 50*time.Millisecond, "send no request this close to the end of a second (both must count it in the same windows)")
		trace := fs.String("trace", "", "comma-separated sequence numbers whose every request to print with both answers")
		if err := fs.Parse(args[1:]); err != nil {
			return fail(err)
		}
		o.trace = map[int]bool{}
		for _, f := range strings.FieldsFunc(*trace, func(r rune) bool { return r == ',' }) {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				return fail(fmt.Errorf("run: -trace: %q is not a sequence number", f))
			}
			o.trace[n] = true
		}
		switch {
		case o.envoyAddr == "" || o.oursAddr == "" || o.configDir == "":
			return fail(errors.New("run: -envoy, -rlapi and -config are required"))
		case o.sequences < 1:
			return fail(errors.New("run: -sequences: at least 1"))
		case o.maxRequests < 2:
			return fail(errors.New("run: -max-requests: at least 2"))
		case o.guard < 0 || o.guard >= time.Second:
			return fail(errors.New("run: -guard: between 0 and 1s"))
		}
		differs, err := run(ctx, o, stdout)
		if err != nil {
			return fail(err)
		}
		if differs {
			return 1
		}
		return 0
	}
	fmt.Fprintln(stderr, usage)
	return 2
}
