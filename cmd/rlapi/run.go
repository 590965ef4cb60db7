package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/poolmetrics"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/token"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/internal/version"
	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counteradmin"
	"github.com/rlctl/rlctl/pkg/enforce/escalation"
	"github.com/rlctl/rlctl/pkg/enforce/lease"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	redisstore "github.com/rlctl/rlctl/pkg/enforce/redis"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

const usage = `rlapi: the rlctl management API server

Usage:
  rlapi serve          serve the API (refuses a database whose schema is behind)
  rlapi migrate        apply pending database migrations
  rlapi token create   create an API token directly in the database (bootstrap)
  rlapi auth-lockout lift ADDRESS
                       lift an address's failed-authentication lockout through the
                       database, when every address you could call from is locked out
  rlapi probe          ask the rlapi on this host whether it is ready (a
                       container's health check: exit status 0 if so)
  rlapi version        print the version

Run 'rlapi <command> -h' for a command's flags. Every flag has an environment
fallback, named in its help.
`

// maxEventsRows bounds --events-rows-per-minute: at about 400 bytes a
// row, 100,000 rows a minute is 58 GB a day per replica, past anything a
// record meant to be read by people needs.
const maxEventsRows = 100_000

// errUsage marks errors caused by the command line (exit code 2).
var errUsage = errors.New("usage")

// run is main without the process: tests call it with their own arguments,
// environment and streams.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, getenv, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "rlapi: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "rlapi: %v\n", err)
		return 1
	}
}

func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: missing command", errUsage)
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stdout, stderr)
	case "migrate":
		return migrateCmd(ctx, args[1:], getenv, stdout, stderr)
	case "token":
		if len(args) < 2 || args[1] != "create" {
			return fmt.Errorf("%w: want 'rlapi token create'", errUsage)
		}
		return tokenCreate(ctx, args[2:], getenv, stdout, stderr)
	case "auth-lockout":
		if len(args) < 2 || args[1] != "lift" {
			return fmt.Errorf("%w: want 'rlapi auth-lockout lift ADDRESS'", errUsage)
		}
		return authLockoutLift(ctx, args[2:], getenv, stdout, stderr)
	case "probe":
		return probeCmd(ctx, args[1:], getenv, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "rlapi", version.String())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
}

// envDefault returns the environment's value for key, or def.
func envDefault(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

func envBool(getenv func(string) string, key string) bool {
	b, _ := strconv.ParseBool(getenv(key))
	return b
}

func envInt(getenv func(string) string, key string, def int) (int, error) {
	v := getenv(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q is not an integer", errUsage, key, v)
	}
	return n, nil
}

func envDuration(getenv func(string) string, key string, def time.Duration) (time.Duration, error) {
	v := getenv(key)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q is not a duration such as 30s or 5m", errUsage, key, v)
	}
	return d, nil
}

// newFlagSet returns a flag set whose usage (every flag, some 60 lines
// for serve) is printed for -h only: after a mistake the one-line error
// says what is wrong, and the usage would scroll it away.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("rlapi "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // parseFlags prints it, for -h only
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard) // the flag package's own error line
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
			return err
		}
		return fmt.Errorf("%w: %s", errUsage, flagMessage(fs, err))
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// flagMessage words a flag the flag package could not read as one line
// naming the flag, its environment fallback and the rule, as the
// environment's errors do: "--lease-time (RLAPI_LEASE_TIME): must be a
// duration such as 30s or 5m (got "1sec")", where the package says
// "invalid value "1sec" for flag -lease-time: parse error".
func flagMessage(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Sprintf("unknown flag --%s ('%s -h' lists the flags)", strings.TrimPrefix(name, "-"), fs.Name())
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Sprintf("--%s needs a value", strings.TrimPrefix(name, "-"))
	}
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		if rest, ok = strings.CutPrefix(msg, "invalid boolean value "); !ok {
			return msg
		}
	}
	value, rest, ok := cutQuoted(rest)
	rest = strings.TrimPrefix(strings.TrimPrefix(rest, " for flag -"), " for -")
	name, cause, ok2 := strings.Cut(rest, ": ")
	f := fs.Lookup(strings.TrimPrefix(name, "-"))
	if !ok || !ok2 || f == nil {
		return msg
	}
	label := "--" + f.Name
	if i := strings.Index(f.Usage, "(RLAPI_"); i >= 0 {
		if j := strings.IndexAny(f.Usage[i+1:], ",;) "); j > 0 {
			label += " " + f.Usage[i:i+1+j] + ")"
		}
	}
	var rule string
	switch fmt.Sprintf("%T", f.Value) {
	case "*flag.durationValue":
		rule = "must be a duration such as 30s or 5m"
	case "*flag.intValue", "*flag.int64Value", "*flag.uintValue", "*flag.uint64Value":
		rule = "must be a whole number"
	case "*flag.boolValue":
		rule = "takes no value, or =true or =false"
	default:
		return fmt.Sprintf("%s: %s (got %q)", label, cause, value)
	}
	return fmt.Sprintf("%s: %s (got %q)", label, rule, value)
}

// cutQuoted reads the Go-quoted string s begins with and returns it
// unquoted with what follows.
func cutQuoted(s string) (value, rest string, ok bool) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", s, false
	}
	v, err := strconv.Unquote(q)
	return v, s[len(q):], err == nil
}

// dsnValue is the --database-url flag: it holds the URL as given but shows
// itself (as the default in -h, for one) with the password redacted.
type dsnValue struct{ s string }

func (v *dsnValue) Set(s string) error { v.s = s; return nil }
func (v *dsnValue) String() string {
	if v == nil {
		return ""
	}
	return redactDSN(v.s)
}

// dsnFlag defines --database-url, defaulting to DATABASE_URL, and returns
// where the parsed value lands.
func dsnFlag(fs *flag.FlagSet, getenv func(string) string) *string {
	v := &dsnValue{s: getenv("DATABASE_URL")}
	fs.Var(v, "database-url", "PostgreSQL `URL` (DATABASE_URL)")
	return &v.s
}

// keywordPassword finds password=... in a key=value connection string.
var keywordPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// redactDSN hides the password of a postgres:// URL or a key=value
// connection string; anything it cannot parse is hidden whole.
func redactDSN(dsn string) string {
	if dsn == "" {
		return ""
	}
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "(unparsable URL, not shown)"
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	return keywordPassword.ReplaceAllString(dsn, "${1}xxxxx")
}

func openStore(ctx context.Context, dsn string) (*store.Store, error) {
	if dsn == "" {
		return nil, fmt.Errorf("%w: no database: set DATABASE_URL or --database-url (make run provides a local one)", errUsage)
	}
	return store.Open(ctx, dsn, store.Opts{ApplicationName: "rlapi"})
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// defaultGOGC is the collector's target rlapi runs with unless GOGC is
// set. rlapi's live heap is small (tens of MB) and every decision
// allocates, so at Go's default of 100 the collector ran several times a
// second and took a fifth of rlapi's CPU at 64 streams; at 400 the peak
// memory doubled (93 to 191 MB in that run) and decisions per second rose
// 5-13% (docs/performance-history.md, "The collector").
const defaultGOGC = 400

// gcPercent is the GC percent serve sets: defaultGOGC, unless GOGC is set
// (the runtime has read it then, and it is the operator's).
func gcPercent(getenv func(string) string) (int, bool) {
	if getenv("GOGC") != "" {
		return 0, false
	}
	return defaultGOGC, true
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	addr := fs.String("addr", envDefault(getenv, "RLAPI_ADDR", "127.0.0.1:8080"), "listen address (RLAPI_ADDR)")
	dsn := dsnFlag(fs, getenv)
	logLevel := fs.String("log-level", envDefault(getenv, "RLAPI_LOG_LEVEL", "info"), "debug, info, warn or error (RLAPI_LOG_LEVEL)")
	accessLogDecisions := fs.Bool("access-log-decisions", envBool(getenv, "RLAPI_ACCESS_LOG_DECISIONS"),
		"write an access log line for each call of the decision endpoints, /api/check, /api/validate, /api/auth-events and /api/auth-lockout (RLAPI_ACCESS_LOG_DECISIONS; default left out: a line per decision)")
	floors := validate.DefaultFloors()
	var err error
	if floors.User, err = envInt(getenv, "RLAPI_USER_FLOOR_PER_MIN", floors.User); err != nil {
		return err
	}
	if floors.Agent, err = envInt(getenv, "RLAPI_AGENT_FLOOR_PER_MIN", floors.Agent); err != nil {
		return err
	}
	fs.IntVar(&floors.User, "user-floor", floors.User, "minimum user_max_requests on caller windows <= 60s (RLAPI_USER_FLOOR_PER_MIN)")
	fs.IntVar(&floors.Agent, "agent-floor", floors.Agent, "minimum agent_max_requests on caller windows <= 60s (RLAPI_AGENT_FLOOR_PER_MIN)")
	durations := map[string]time.Duration{}
	for _, d := range []struct {
		env string
		def time.Duration
	}{{"RLAPI_SHUTDOWN_TIMEOUT", 20 * time.Second}, {"RLAPI_AUTH_WINDOW", time.Minute}, {"RLAPI_AUTH_LOCKOUT", 5 * time.Minute},
		{"RLAPI_GATEWAY_AUTH_WINDOW", time.Minute}, {"RLAPI_GATEWAY_AUTH_LOCKOUT", 5 * time.Minute},
		{"RLAPI_LOCKOUT_WITHIN", 5 * time.Minute}, {"RLAPI_LOCKOUT_DURATION", 15 * time.Minute},
		{"RLAPI_BACKEND_TIMEOUT", 250 * time.Millisecond}, {"RLAPI_CACHE_TTL", 30 * time.Second}} {
		if durations[d.env], err = envDuration(getenv, d.env, d.def); err != nil {
			return err
		}
	}
	authFailuresDefault, err := envInt(getenv, "RLAPI_AUTH_MAX_FAILURES", 5)
	if err != nil {
		return err
	}
	gatewayFailuresDefault, err := envInt(getenv, "RLAPI_GATEWAY_AUTH_MAX_FAILURES", 5)
	if err != nil {
		return err
	}
	lockoutAfterDefault, err := envInt(getenv, "RLAPI_LOCKOUT_AFTER", 0)
	if err != nil {
		return err
	}
	shutdown := fs.Duration("shutdown-timeout", durations["RLAPI_SHUTDOWN_TIMEOUT"], "how long SIGTERM waits for in-flight requests (RLAPI_SHUTDOWN_TIMEOUT)")
	proxies := fs.String("trusted-proxies", getenv("RLAPI_TRUSTED_PROXIES"),
		"comma-separated CIDRs whose forwarding header (--client-ip-header) is believed (RLAPI_TRUSTED_PROXIES)")
	clientIPHeader := fs.String("client-ip-header", getenv("RLAPI_CLIENT_IP_HEADER"),
		"the forwarding header believed from trusted proxies: X-Forwarded-For (default), Forwarded or X-Real-IP; only that one is read (RLAPI_CLIENT_IP_HEADER)")
	ipv6PrefixDef, err := envInt(getenv, "RLAPI_IPV6_PREFIX", clientip.DefaultIPv6Prefix)
	if err != nil {
		return err
	}
	ipv6Prefix := fs.Int("ipv6-prefix", ipv6PrefixDef, "prefix length IPv6 client addresses are keyed by: anonymous calls' ip callers (RLAPI_IPV6_PREFIX)")
	mcpSuffixes := fs.String("mcp-suffixes", getenv("RLAPI_MCP_SUFFIXES"),
		"comma-separated last path segments that make GET /api/validate read the path before them as an MCP server; empty: mcp,sse,messages (RLAPI_MCP_SUFFIXES)")
	a2aPrefixes := fs.String("a2a-prefixes", getenv("RLAPI_A2A_PREFIXES"),
		"comma-separated first path segments that make GET /api/validate read the path after them as an A2A agent; empty: agent (RLAPI_A2A_PREFIXES)")
	gatewaySecret := fs.String("gateway-secret", "",
		"secret a trusted proxy sends as X-Gateway-Secret on GET /api/validate; empty turns it off (RLAPI_GATEWAY_SECRET, preferred: flags show in ps)")
	tokenCacheDef, err := envDuration(getenv, "RLAPI_TOKEN_CACHE_TTL", 10*time.Second)
	if err != nil {
		return err
	}
	decisionConnsDef, err := envInt(getenv, "RLAPI_DECISION_MAX_CONNS", 12)
	if err != nil {
		return err
	}
	authFailures := fs.Int("auth-max-failures", authFailuresDefault, "failed authentications (unknown tokens) from one address (IPv6: /64) that lock it out; 0 takes the default, -1 disables (RLAPI_AUTH_MAX_FAILURES)")
	authWindow := fs.Duration("auth-window", durations["RLAPI_AUTH_WINDOW"], "window in which failed authentications are counted (RLAPI_AUTH_WINDOW)")
	authLockout := fs.Duration("auth-lockout", durations["RLAPI_AUTH_LOCKOUT"], "how long an address stays locked out (RLAPI_AUTH_LOCKOUT)")
	lockoutAfter := fs.Int("lockout-after", lockoutAfterDefault,
		"escalation lockouts: throttled calls of one caller within --lockout-within that quarantine it for --lockout-duration; 0 turns them off (RLAPI_LOCKOUT_AFTER)")
	lockoutWithin := fs.Duration("lockout-within", durations["RLAPI_LOCKOUT_WITHIN"],
		"sliding window in which a caller's violations are counted, whole seconds (RLAPI_LOCKOUT_WITHIN)")
	lockoutDuration := fs.Duration("lockout-duration", durations["RLAPI_LOCKOUT_DURATION"],
		"how long an escalation lockout quarantines the caller, whole seconds (RLAPI_LOCKOUT_DURATION)")
	gatewayFailures := fs.Int("gateway-auth-max-failures", gatewayFailuresDefault,
		"failed authentications gateways report (POST /api/auth-events) for one client address (IPv6: /64) within --gateway-auth-window that lock it out; -1 disables (RLAPI_GATEWAY_AUTH_MAX_FAILURES)")
	gatewayWindow := fs.Duration("gateway-auth-window", durations["RLAPI_GATEWAY_AUTH_WINDOW"],
		"sliding window in which reported failures are counted, whole seconds (RLAPI_GATEWAY_AUTH_WINDOW)")
	gatewayLockout := fs.Duration("gateway-auth-lockout", durations["RLAPI_GATEWAY_AUTH_LOCKOUT"],
		"how long a client address reported failing stays locked out, whole seconds (RLAPI_GATEWAY_AUTH_LOCKOUT)")
	tokenCacheTTL := fs.Duration("token-cache-ttl", tokenCacheDef, "how long a verified token is trusted without asking the database; revocations reach every replica at once anyway (RLAPI_TOKEN_CACHE_TTL; negative: no cache)")
	decisionConns := fs.Int("decision-max-conns", decisionConnsDef, "size of the decisions' own database pool (counters, token checks), apart from the management API's (RLAPI_DECISION_MAX_CONNS)")
	quarantineFailClosed := fs.Bool("quarantine-fail-closed", envBool(getenv, "RLAPI_QUARANTINE_FAIL_CLOSED"),
		"decision endpoints deny when quarantine cannot be checked (RLAPI_QUARANTINE_FAIL_CLOSED)")
	backendTimeout := fs.Duration("backend-timeout", durations["RLAPI_BACKEND_TIMEOUT"], "bound on each counter round trip of a decision (RLAPI_BACKEND_TIMEOUT)")
	cacheTTL := fs.Duration("cache-ttl", durations["RLAPI_CACHE_TTL"],
		"reload definitions and memberships at least this often; changes arrive within a second anyway (RLAPI_CACHE_TTL)")
	enforcementEnv, enforcementDefault := "RLAPI_ENFORCEMENT", getenv("RLAPI_ENFORCEMENT")
	if enforcementDefault == "" && getenv("RATE_LIMITING_ENABLED") != "" {
		enforcementEnv, enforcementDefault = "RATE_LIMITING_ENABLED", getenv("RATE_LIMITING_ENABLED")
	}
	enforcement := fs.String("enforcement", enforcementDefault,
		"the master switch's value while nothing has set it yet: on or off; once set (rlctl enforcement on|off) the stored value wins (RLAPI_ENFORCEMENT, or the reference's RATE_LIMITING_ENABLED)")
	maxConns, err := envInt(getenv, "RLAPI_MAX_CLIENT_CONNS", api.DefaultMaxClientConns)
	if err != nil {
		return err
	}
	fs.IntVar(&maxConns, "max-client-conns", maxConns,
		"client connections served at once; more wait in the accept queue until one closes; -1: no cap (RLAPI_MAX_CLIENT_CONNS)")
	countersURL := &dsnValue{s: getenv("RLAPI_COUNTERS_URL")}
	fs.Var(countersURL, "counters-url",
		"where decisions count: empty for PostgreSQL (the default), redis://host:port[/db] for a Redis server, redis+cluster://host:port,host:port for a Redis Cluster, or redis+sentinel://sentinel:port,sentinel:port/master-name[/db][?sentinel_password=...] for the master Redis Sentinel names (rediss... over TLS); configuration stays in PostgreSQL (RLAPI_COUNTERS_URL)")
	allowEviction := fs.Bool("counters-allow-eviction", envBool(getenv, "RLAPI_COUNTERS_ALLOW_EVICTION"),
		"start even though a Redis node of --counters-url may evict counters (a maxmemory-policy other than noeviction), which rlapi otherwise refuses: evicted counters forget their counts; rlapi then warns and exports rlctl_redis_eviction_safe 0 (RLAPI_COUNTERS_ALLOW_EVICTION)")
	eventsRetentionDef, err := envDuration(getenv, "RLAPI_EVENTS_RETENTION", api.DefaultEventsRetention)
	if err != nil {
		return err
	}
	eventsRetention := fs.Duration("events-retention", eventsRetentionDef,
		"how long the record of violations (GET /api/rate-limit-events) keeps a minute's rows; this replica deletes older ones (RLAPI_EVENTS_RETENTION)")
	rowsPerFlushDef, err := envInt(getenv, "RLAPI_EVENTS_ROWS_PER_FLUSH", violations.DefaultBuffer)
	if err != nil {
		return err
	}
	rowsPerMinuteDef, err := envInt(getenv, "RLAPI_EVENTS_ROWS_PER_MINUTE", violations.DefaultRowsPerMinute)
	if err != nil {
		return err
	}
	rowsPerFlush := fs.Int("events-rows-per-flush", rowsPerFlushDef,
		"subjects' rows one flush (every 5s) writes to the record of violations at most; the calls of further subjects go to one summary row per definition and minute, overflow:subjects (RLAPI_EVENTS_ROWS_PER_FLUSH)")
	rowsPerMinute := fs.Int("events-rows-per-minute", rowsPerMinuteDef,
		"subjects' rows one minute gets in the record of violations from this replica at most, summary rows apart (RLAPI_EVENTS_ROWS_PER_MINUTE)")
	eventsLog := fs.String("events-log", getenv("RLAPI_EVENTS_LOG"),
		"where to write one JSON line per aggregated violation event for a SIEM: a file path (appended), - for stderr, empty for none (RLAPI_EVENTS_LOG)")
	grpcCfg, err := grpcFlags(fs, getenv)
	if err != nil {
		return err
	}
	leaseCfg, err := leaseFlags(fs, getenv)
	if err != nil {
		return err
	}
	failCfg, err := failPolicyFlags(fs, getenv)
	if err != nil {
		return err
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if gogc, ok := gcPercent(getenv); ok {
		debug.SetGCPercent(gogc)
	}
	if limit, ok := memoryLimit(getenv, cgroupMemoryFiles); ok {
		debug.SetMemoryLimit(limit)
	}
	go returnIdleMemoryUntil(ctx)
	failPolicy, replicas, err := failCfg.check(fs, getenv, leaseCfg)
	if err != nil {
		return err
	}
	leases, err := leaseCfg.options()
	if err != nil {
		return err
	}
	grpcTrusted, err := grpcCfg.check()
	if err != nil {
		return err
	}
	if *eventsRetention < time.Minute {
		return fmt.Errorf("%w: --events-retention: must be at least 1m (got %s)", errUsage, *eventsRetention)
	}
	if *rowsPerMinute < 1 || *rowsPerMinute > maxEventsRows {
		return fmt.Errorf("%w: --events-rows-per-minute (RLAPI_EVENTS_ROWS_PER_MINUTE): must be between 1 and %d (got %d)", errUsage, maxEventsRows, *rowsPerMinute)
	}
	if *rowsPerFlush < 1 || *rowsPerFlush > *rowsPerMinute {
		return fmt.Errorf("%w: --events-rows-per-flush (RLAPI_EVENTS_ROWS_PER_FLUSH): must be between 1 and --events-rows-per-minute, %d (got %d)", errUsage, *rowsPerMinute, *rowsPerFlush)
	}
	if countersURL.s != "" {
		if _, _, err := redisstore.ParseURL(countersURL.s); err != nil {
			return fmt.Errorf("%w: --counters-url (RLAPI_COUNTERS_URL): %v", errUsage, err)
		}
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "enforcement" {
			enforcementEnv = "--enforcement"
		}
	})
	var seedOn *bool
	if *enforcement != "" {
		on, ok := parseOnOff(*enforcement)
		if !ok {
			return fmt.Errorf("%w: %s=%q: must be on or off (or true/false)", errUsage, enforcementEnv, *enforcement)
		}
		seedOn = &on
	}
	if *gatewaySecret == "" {
		// Read here rather than as the flag's default, so -h never prints it.
		*gatewaySecret = getenv("RLAPI_GATEWAY_SECRET")
	}
	trusted, err := parsePrefixes("--trusted-proxies (RLAPI_TRUSTED_PROXIES)", *proxies)
	if err != nil {
		return err
	}
	header, err := clientip.ParseHeader(*clientIPHeader)
	if err != nil {
		return fmt.Errorf("%w: --client-ip-header: %v", errUsage, err)
	}
	classifier, err := httpgate.ParseClassifier(*mcpSuffixes, *a2aPrefixes)
	if err != nil {
		return fmt.Errorf("%w: --mcp-suffixes/--a2a-prefixes: %v", errUsage, err)
	}
	if !clientip.ValidIPv6Prefix(*ipv6Prefix) {
		return fmt.Errorf("%w: --ipv6-prefix: must be between 1 and 128 (got %d)", errUsage, *ipv6Prefix)
	}
	if *decisionConns < 4 || *decisionConns > 1000 {
		return fmt.Errorf("%w: --decision-max-conns must be between 4 and 1000 (got %d): the enforcer's workers, its change listener and the token listener each hold one", errUsage, *decisionConns)
	}
	if maxConns == 0 || maxConns < -1 {
		return fmt.Errorf("%w: --max-client-conns: must be >= 1, or -1 for no cap (got %d)", errUsage, maxConns)
	}
	// 0 takes the default, as it always has.
	for _, v := range []*int{authFailures, gatewayFailures} {
		if *v == 0 {
			*v = 5
		}
	}
	for _, v := range []struct {
		d   *time.Duration
		def time.Duration
	}{{authWindow, time.Minute}, {authLockout, 5 * time.Minute}, {gatewayWindow, time.Minute}, {gatewayLockout, 5 * time.Minute}} {
		if *v.d == 0 {
			*v.d = v.def
		}
	}
	if err := auththrottle.CheckSettings(*authFailures, *authWindow, *authLockout); err != nil {
		return fmt.Errorf("%w: --auth-max-failures, --auth-window, --auth-lockout: %v", errUsage, err)
	}
	if err := auththrottle.CheckSettings(*gatewayFailures, *gatewayWindow, *gatewayLockout); err != nil {
		return fmt.Errorf("%w: --gateway-auth-max-failures, --gateway-auth-window, --gateway-auth-lockout: %v", errUsage, err)
	}
	var lockouts *escalation.Policy
	switch {
	case *lockoutAfter < 0:
		return fmt.Errorf("%w: --lockout-after: must be 0 (off) or a number of violations (got %d)", errUsage, *lockoutAfter)
	case *lockoutAfter > 0:
		lockouts = &escalation.Policy{After: *lockoutAfter, Within: *lockoutWithin, Lockout: *lockoutDuration}
		if err := lockouts.Check(); err != nil {
			return fmt.Errorf("%w: --lockout-after, --lockout-within, --lockout-duration: %v", errUsage, err)
		}
	}
	if floors.User < 1 || floors.Agent < 1 {
		return fmt.Errorf("%w: floors must be >= 1 (user %d, agent %d)", errUsage, floors.User, floors.Agent)
	}
	log := newLogger(stderr, *logLevel)

	st, err := openStore(ctx, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	schema, err := migrate.Status(ctx, st.Pool())
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if schema.Behind() {
		return fmt.Errorf("database schema is at version %d but this rlapi needs %d: run 'rlapi migrate' first", schema.Current, schema.Latest)
	}
	if schema.Current > schema.Latest {
		log.Warn("database schema is newer than this rlapi; an older binary may misread it", "schema", schema.Current, "binary", schema.Latest)
	}

	if seedOn != nil {
		if err := seedEnforcement(ctx, st, *seedOn, enforcementEnv, log); err != nil {
			return err
		}
	}
	if sw, err := st.GetEnforcement(ctx); err == nil && !sw.Enabled {
		log.Warn("enforcement is OFF for every replica: every call is allowed and nothing is counted (rlctl enforcement on)",
			"set_by", sw.UpdatedBy, "reason", sw.Reason)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	// Serve closes it; this is for a start that fails before (the
	// counter store refused, say), so the port is free again at once.
	defer ln.Close()
	// Decisions get their own pool: a management request, however slow its
	// client, can never take the connections a decision needs.
	decisions, err := store.Open(ctx, *dsn, store.Opts{MaxConns: int32(*decisionConns), ApplicationName: "rlapi-decisions"})
	if err != nil {
		return err
	}
	defer decisions.Close()
	var violationLog io.Writer
	switch *eventsLog {
	case "":
	case "-":
		violationLog = stderr
	default:
		f, err := os.OpenFile(*eventsLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
		if err != nil {
			return fmt.Errorf("--events-log: %w", err)
		}
		defer f.Close()
		violationLog = f
	}
	registry := prometheus.NewRegistry()
	// The management pool's statistics (rlapi_db_pool_*).
	registry.MustRegister(poolmetrics.New(st.Pool()))
	// The record of violations observes the decisions and keeps the
	// lockouts (escalation's, the gateways' and rlapi's own failed
	// credentials) in rl_events and the SIEM log; closed after the
	// Enforcer, so that it writes what the last decisions added.
	rec, err := violations.New(postgres.NewEventSink(decisions.Pool()), violations.Opts{Log: violationLog, Buffer: *rowsPerFlush,
		RowsPerMinute: *rowsPerMinute, Logger: log, Registerer: registry})
	if err != nil {
		return fmt.Errorf("start the record of violations: %w", err)
	}
	defer rec.Close()
	source := postgres.NewSource(decisions.Pool())
	enfOpts := enforce.Options{
		Registerer: registry, Source: source, Observers: []enforce.Observer{rec},
		QuarantineFailClosed: *quarantineFailClosed,
		BackendTimeout:       *backendTimeout, CacheTTL: *cacheTTL, Logger: log, IPv6Prefix: *ipv6Prefix,
	}
	// counters is where the decisions count, and with them rlapi's own
	// failed-credential lockout and the counters API: the decisions'
	// pool by default, Redis with --counters-url.
	var counters interface {
		enforce.CounterStore
		counteradmin.Admin
	} = postgres.NewCounterStore(decisions.Pool())
	var ready []api.ReadyCheck // /readyz's checks besides the database
	var grpcInfo wire.GRPCInfo
	if *grpcCfg.addr != "" {
		grpcInfo = wire.GRPCInfo{Enabled: true, Address: *grpcCfg.addr, TLS: *grpcCfg.certFile != "", CountMode: *grpcCfg.countMode}
	}
	pgc := decisions.Pool().Config().ConnConfig
	setup := api.ServerSetup{
		Info: wire.ServerInfo{GRPC: grpcInfo, CounterStore: wire.CounterStoreInfo{Backend: "postgres",
			Address: net.JoinHostPort(pgc.Host, strconv.Itoa(int(pgc.Port))) + "/" + pgc.Database}},
		PingCounters: decisions.Pool().Ping,
	}
	if countersURL.s != "" {
		// Only the counters move: definitions, memberships, tokens and
		// the audit log stay in PostgreSQL (and its change notices).
		rs, err := redisstore.Open(ctx, countersURL.s, redisstore.Options{
			AllowEviction: *allowEviction, Logger: log, Registerer: registry})
		var evicts *redisstore.EvictionError
		var mode *redisstore.ModeError
		if errors.As(err, &mode) {
			return fmt.Errorf("%w: --counters-url (RLAPI_COUNTERS_URL): %v", errUsage, err)
		}
		if errors.As(err, &evicts) {
			return fmt.Errorf("%w: --counters-url (RLAPI_COUNTERS_URL): %v; or start with --counters-allow-eviction (RLAPI_COUNTERS_ALLOW_EVICTION) to run with limits that may not hold", errUsage, err)
		}
		if err != nil {
			return fmt.Errorf("open the counter store (--counters-url): %w", err)
		}
		counters, enfOpts.OnClose = rs, rs.Close
		ready = append(ready, api.ReadyCheck{Name: "counter store (redis)", Check: rs.Ping})
		setup.Info.CounterStore = wire.CounterStoreInfo{Backend: "redis", Cluster: rs.Cluster(), Sentinel: rs.Sentinel(), Address: redisstore.Redact(countersURL.s)}
		setup.PingCounters = rs.Ping
		log.Info("counters in Redis", "url", redisstore.Redact(countersURL.s))
	}
	enfOpts.Counters = counters
	// The gateways' failed-credential throttle (POST /api/auth-events)
	// guards the decisions: an address it locks is refused auth-locked
	// before anything else. Its lockouts join the record of violations.
	gatewayThrottle, err := auththrottle.New(counters, auththrottle.Options{MaxFailures: *gatewayFailures, Window: *gatewayWindow,
		Lockout: *gatewayLockout, IPv6Prefix: *ipv6Prefix, BackendTimeout: *backendTimeout, Registerer: registry, Record: rec.RecordEvent})
	if err == nil {
		enfOpts.Guard = gatewayThrottle
	}
	if err == nil && lockouts != nil {
		// Escalation observes the decisions too: it counts a caller's
		// throttles where the decisions count and writes its lockouts
		// through the source, recording each in the record of violations.
		var esc *escalation.Escalator
		esc, err = escalation.New(source, counters, *lockouts, escalation.Opts{Record: rec, BackendTimeout: *backendTimeout, Logger: log})
		if err == nil {
			enfOpts.Observers = append(enfOpts.Observers, esc)
		}
	}
	if err == nil && leases != nil {
		// The decisions count through a lease layer over the counters
		// (the throttle, escalation, rlapi's own lockout and the counters
		// API do not: they read and reset the shared counters
		// themselves). It closes, giving back every block, once the
		// Enforcer has stopped and before the counter store does.
		leases.Timeout, leases.Logger, leases.Registerer = *backendTimeout, log, registry
		var layer *lease.Store
		if layer, err = lease.New(counters, *leases); err == nil {
			closeCounters := enfOpts.OnClose
			enfOpts.Counters, enfOpts.OnClose = layer, func() {
				layer.Close()
				if closeCounters != nil {
					closeCounters()
				}
			}
			log.Info("leases for hot keys on", "lease_time", leases.Time, "replicas", leases.Replicas, "hot_rate", leases.HotRate, "all_keys", leases.All)
			setup.Info.Leases = wire.LeaseInfo{Enabled: true, LeaseTimeSeconds: leases.Time.Seconds(), Replicas: leases.Replicas, Keys: *leaseCfg.keys}
		}
	}
	if err == nil {
		setup.Info.FailPolicy, setup.Degraded, err = wireFallback(&enfOpts, counters, failPolicy, replicas, *backendTimeout, log, registry)
	}
	var enf *enforce.Enforcer
	if err == nil {
		enf, err = postgres.New(ctx, decisions.Pool(), enfOpts)
	}
	if err != nil {
		if enfOpts.OnClose != nil {
			enfOpts.OnClose()
		}
		return fmt.Errorf("start enforcement: %w", err)
	}
	defer enf.Close()
	srv := api.New(st, api.Config{
		Floors: floors, ShutdownTimeout: *shutdown, TrustedProxies: trusted, GatewaySecret: *gatewaySecret,
		ClientIPHeader: header, IPv6Prefix: *ipv6Prefix, Classifier: classifier,
		AuthMaxFailures: *authFailures, AuthWindow: *authWindow, AuthLockout: *authLockout,
		BackendTimeout: *backendTimeout, TokenCacheTTL: *tokenCacheTTL, MaxClientConns: maxConns,
		EventsRetention: *eventsRetention, AccessLogDecisions: *accessLogDecisions,
	}, api.Opts{Logger: log, Enforcer: enf, AuthThrottle: gatewayThrottle, Registry: registry, AuthStore: decisions,
		Counters: counters, CounterAdmin: counters, Violations: rec, Ready: ready, Setup: setup})
	// The cap protects the file descriptors only if they outnumber it: the
	// pool, the listener and the log need some too.
	// With gRPC on, both listeners' caps must fit.
	grpcConns := 0
	if *grpcCfg.addr != "" {
		grpcConns = *grpcCfg.maxConns
	}
	if limit := openFileLimit(); limit > 0 && maxConns > 0 && limit < uint64(maxConns+max(grpcConns, 0))+256 {
		log.Warn("the open file limit is below --max-client-conns (plus --grpc-max-conns when gRPC is on) plus a margin of 256: connections may fail with 'too many open files' before the caps apply; raise ulimit -n (systemd: LimitNOFILE) or lower the caps",
			"open_file_limit", limit, "max_client_conns", maxConns, "grpc_max_conns", grpcConns)
	}
	stopGRPC, err := startGRPC(ctx, grpcCfg, grpcTrusted, enf, srv, registry, log, stdout, *shutdown)
	if err != nil {
		return err
	}
	defer stopGRPC()
	// One line, on stdout, where a script started with --addr :0 reads
	// the address; a log line beside it said the same thing again on
	// stderr, and a terminal or a journal shows both streams.
	fmt.Fprintf(stdout, "rlapi listening on http://%s (version %s, schema %d)\n", ln.Addr(), version.String(), schema.Current)
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	log.Info("rlapi stopped")
	return nil
}

// parseOnOff reads on/off, true/false, 1/0, yes/no.
func parseOnOff(v string) (on, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "on", "true", "1", "yes", "enabled":
		return true, true
	case "off", "false", "0", "no", "disabled":
		return false, true
	}
	return false, false
}

// seedEnforcement gives the master switch its start-up default, only when
// nothing has set it yet: a restart must never undo an operator's switch
// (rlctl enforcement off mid-incident). A default that disagrees with the
// stored switch is logged, not applied.
func seedEnforcement(ctx context.Context, st *store.Store, on bool, source string, log *slog.Logger) error {
	var (
		cur    ratelimit.Enforcement
		seeded bool
	)
	err := st.InTx(ctx, func(q *store.Queries) error {
		var err error
		cur, seeded, err = q.SeedEnforcement(ctx, on, "start-up default from "+source, "rlapi serve")
		if err != nil || !seeded {
			return err
		}
		return q.InsertAudit(ctx, store.Audit{Actor: "rlapi serve", Action: map[bool]string{true: "enable", false: "disable"}[on],
			ResourceType: "enforcement", ResourceID: "enforcement", After: cur})
	})
	switch {
	case err != nil:
		return fmt.Errorf("set the enforcement switch's default: %w", err)
	case seeded:
		log.Info("enforcement switch set from its start-up default", "enabled", on, "source", source)
	case cur.Enabled != on:
		log.Warn("enforcement start-up default ignored: the switch was set already; change it with rlctl enforcement on|off",
			"source", source, "default_enabled", on, "enabled", cur.Enabled, "set_by", cur.UpdatedBy, "reason", cur.Reason)
	}
	return nil
}

// parsePrefixes reads a comma-separated list of CIDRs or bare addresses;
// its errors name the flag (label: "--trusted-proxies
// (RLAPI_TRUSTED_PROXIES)"), the entry and what is wrong with it.
func parsePrefixes(label, list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		addr, bits, isPrefix := strings.Cut(f, "/")
		a, err := netip.ParseAddr(addr)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %q is not an address or a CIDR such as 10.0.0.0/8 or 2001:db8::/32", errUsage, label, f)
		}
		if !isPrefix {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			family := "IPv6"
			if a.Is4() {
				family = "IPv4"
			}
			return nil, fmt.Errorf("%w: %s: %q: the prefix length after '/' must be a number from 0 to %d for an %s address (got %q)",
				errUsage, label, f, a.BitLen(), family, bits)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func migrateCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", stderr)
	dsn := dsnFlag(fs, getenv)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	st, err := openStore(ctx, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	before, err := migrate.Status(ctx, st.Pool())
	if err != nil {
		return err
	}
	after, err := migrate.Up(ctx, st.Pool())
	if err != nil {
		return err
	}
	if after.Current == before.Current {
		fmt.Fprintf(stdout, "schema is current (version %d)\n", after.Current)
	} else {
		fmt.Fprintf(stdout, "migrated schema from version %d to %d\n", before.Current, after.Current)
	}
	return nil
}

func tokenCreate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token create", stderr)
	dsn := dsnFlag(fs, getenv)
	name := fs.String("name", "", "token name (required); shown as the actor in the audit log")
	role := fs.String("role", "admin", "admin, viewer or enforcer")
	expires := fs.Duration("expires-in", 0, "lifetime, e.g. 720h (0: never expires)")
	outFile := fs.String("output-file", "", "write the token to this file (mode 0600) instead of stdout")
	replace := fs.Bool("replace", false, "revoke a live token of the same name first")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	n, err := validate.TokenName(*name)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := validate.Role(*role); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *expires < 0 || *expires > api.MaxTokenLifetimeSeconds*time.Second {
		return fmt.Errorf("%w: --expires-in: must be between 1s and %s (10 years), or 0 for no expiry (got %s)",
			errUsage, api.MaxTokenLifetimeSeconds*time.Second, *expires)
	}
	st, err := openStore(ctx, *dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	secret, sum := token.New()
	var expiresAt *time.Time
	if *expires > 0 {
		t := time.Now().Add(*expires)
		expiresAt = &t
	}
	err = st.InTx(ctx, func(q *store.Queries) error {
		if *replace {
			if _, err := q.RevokeToken(ctx, n, time.Now()); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if _, err := q.CreateToken(ctx, n, *role, sum, expiresAt); err != nil {
			return err
		}
		return q.InsertAudit(ctx, store.Audit{Actor: "rlapi token create", Action: "create", ResourceType: "token",
			ResourceID: n, After: map[string]any{"name": n, "role": *role, "expires_at": expiresAt}})
	})
	if err != nil {
		return err
	}
	if *outFile == "" {
		fmt.Fprintln(stdout, secret)
		return nil
	}
	if err := writeSecretFile(*outFile, secret); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "created %s token %q; written to %s\n", *role, n, *outFile)
	return nil
}

// writeSecretFile writes a token readable by its owner only, replacing the
// file atomically.
func writeSecretFile(path, secret string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.TrimSpace(secret)+"\n"), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}
