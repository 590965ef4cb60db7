// Package status holds `rlctl status`: where rlctl points, what runs there,
// whether it is ready, and how much it holds.
package status

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/internal/version"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// probeTimeout bounds the anonymous version and readiness probes, so an
// unreachable server is reported quickly.
const probeTimeout = 5 * time.Second

// Status is what `rlctl status -o json|yaml` prints. Every field is always
// present; a count rlctl may not read (the token's role) is null.
type Status struct {
	Server        string `json:"server"`
	Context       string `json:"context"`
	ClientVersion string `json:"client_version"`
	ServerVersion string `json:"server_version"`
	Schema        Schema `json:"schema"`
	Ready         bool   `json:"ready"`
	// NotReadyReason is the server's (or the network's) reason when Ready
	// is false.
	NotReadyReason string `json:"not_ready_reason"`
	// Enforcement is the master switch; null when the token may not read it
	// or the server is not ready.
	Enforcement *rl.Enforcement `json:"enforcement"`
	// Setup is how the replica that answered is set up: its counter store
	// (and whether it answers), gRPC listener and leases; null when the
	// token may not read it or the server is not ready.
	Setup  *client.ServerInfo `json:"setup"`
	Counts Counts             `json:"counts"`
}

// Schema is the database schema's version and the newest the server knows.
type Schema struct {
	Current int32 `json:"current"`
	Latest  int32 `json:"latest"`
}

// Counts are how many objects the server holds; nil when the token may not
// list them.
type Counts struct {
	Definitions        *int `json:"definitions"`
	Memberships        *int `json:"memberships"`
	QuarantinedCallers *int `json:"quarantined_callers"`
	QuarantinedTargets *int `json:"quarantined_targets"`
	Admins             *int `json:"admins"`
	LiveTokens         *int `json:"live_tokens"`
}

// Options are the inputs of `rlctl status`.
type Options struct {
	Factory *cmdutil.Factory
}

// NewCmdStatus builds `rlctl status`.
func NewCmdStatus(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{Factory: f}
	return &cobra.Command{
		Use:     "status",
		Short:   "Show the server rlctl talks to, its version, readiness and contents",
		GroupID: "admin",
		Long: `Show the server rlctl talks to and through which context, both versions, the
database schema, whether the server is ready, whether enforcement is on (the master
switch: rlctl enforcement), how the replica that answered is set up (where its
decisions count and whether that store answers now, its gRPC listener, its leases), and
how many definitions, memberships, quarantined callers and targets, administrators and
live tokens it holds.

Tokens can be counted only with the admin role; without it the count is "-" (null in
JSON). An unreachable or unready server is reported, with exit code 1.`,
		Example: `  rlctl status
  rlctl status --context prod -o json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return statusRun(cmd.Context(), opts)
		},
	}
}

func statusRun(ctx context.Context, opts *Options) error {
	f := opts.Factory
	server, _, err := f.Endpoint()
	if err != nil {
		return err
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	st := Status{Server: server, Context: contextName(f), ClientVersion: version.String()}

	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	v, verr := c.Version(pctx)
	cancel()
	var apiErr *client.APIError
	if verr != nil && !errors.As(verr, &apiErr) {
		// Nothing answers: say so, with what is known locally.
		st.NotReadyReason = verr.Error()
		if err := write(f, st); err != nil {
			return err
		}
		return &cmdutil.ExitCodeError{Code: cmdutil.ExitError}
	}
	st.ServerVersion, st.Schema = v.Version, Schema{Current: v.SchemaVersion, Latest: v.SchemaLatest}

	pctx, cancel = context.WithTimeout(ctx, probeTimeout)
	rerr := c.Readyz(pctx)
	cancel()
	st.Ready = rerr == nil
	if rerr != nil {
		st.NotReadyReason = rerr.Error()
	}

	if !st.Ready {
		// The lists would fail the same way, after retries: skip them.
		if err := write(f, st); err != nil {
			return err
		}
		return &cmdutil.ExitCodeError{Code: cmdutil.ExitError}
	}
	sw, err := c.GetEnforcement(ctx)
	switch {
	case err == nil:
		st.Enforcement = &sw
	case !errors.Is(err, client.ErrForbidden):
		return err
	}
	setup, err := c.ServerInfo(ctx)
	switch {
	case err == nil:
		st.Setup = &setup
	case !errors.Is(err, client.ErrForbidden) && !errors.Is(err, client.ErrNotFound): // NotFound: an older rlapi
		return err
	}
	if err := count(ctx, c, f.Now(), &st.Counts); err != nil {
		return err
	}
	return write(f, st)
}

// contextName is the context that supplied the server or the token, or ""
// when flags and the environment supplied both.
func contextName(f *cmdutil.Factory) string {
	g, env := f.Global, f.Getenv
	serverSet := g.Server != "" || env("RLCTL_SERVER") != ""
	tokenSet := g.Token != "" || g.TokenFile != "" || env("RLCTL_TOKEN") != "" || env("RLCTL_TOKEN_FILE") != ""
	if serverSet && tokenSet {
		return ""
	}
	name := g.Context
	if name == "" {
		name = env("RLCTL_CONTEXT")
	}
	if name != "" {
		return name
	}
	cfg, err := f.Config()
	if err != nil || cfg.Current() == nil {
		return ""
	}
	return cfg.CurrentContext
}

// count fills the counts. A list the token's role may not read leaves its
// count nil; any other failure is the command's.
func count(ctx context.Context, c *client.Client, now time.Time, n *Counts) error {
	defs, err := c.ListAllDefinitions(ctx, client.DefinitionFilter{})
	if n.Definitions, err = counted(len(defs), err); err != nil {
		return err
	}
	ms, err := c.ListAllMemberships(ctx, client.MembershipFilter{})
	if n.Memberships, err = counted(len(ms), err); err != nil {
		return err
	}
	q, qerr := c.ListQuarantine(ctx)
	if n.QuarantinedCallers, err = counted(active(q.Callers), qerr); err != nil {
		return err
	}
	n.QuarantinedTargets, _ = counted(active(q.Targets), qerr)
	admins, err := c.ListAdmins(ctx)
	if n.Admins, err = counted(len(admins), err); err != nil {
		return err
	}
	tokens, err := c.ListTokens(ctx)
	live := 0
	for _, t := range tokens {
		if t.RevokedAt == nil && (t.ExpiresAt == nil || now.Before(*t.ExpiresAt)) {
			live++
		}
	}
	n.LiveTokens, err = counted(live, err)
	return err
}

func counted(n int, err error) (*int, error) {
	switch {
	case err == nil:
		return &n, nil
	case errors.Is(err, client.ErrForbidden):
		return nil, nil
	default:
		return nil, err
	}
}

func active(entries []client.QuarantineEntry) int {
	n := 0
	for _, e := range entries {
		if !e.Expired {
			n++
		}
	}
	return n
}

func write(f *cmdutil.Factory, st Status) error {
	return printer.Document(f.IOStreams, f.Global.Output, st, func() error {
		if f.Global.Output == printer.Name {
			_, err := fmt.Fprintln(f.IOStreams.Out, st.Server)
			return err
		}
		ready := "yes"
		if !st.Ready {
			ready = "no: " + st.NotReadyReason
		}
		schema := "-"
		if st.Schema.Latest > 0 {
			schema = fmt.Sprintf("%d of %d", st.Schema.Current, st.Schema.Latest)
			if st.Schema.Current == st.Schema.Latest {
				schema += " (current)"
			} else {
				schema += " (migrations pending: rlapi migrate)"
			}
		}
		lines := [][2]string{
			{"Server", st.Server},
			{"Context", dash(st.Context)},
			{"Client version", st.ClientVersion},
			{"Server version", dash(st.ServerVersion)},
			{"Schema", schema},
			{"Ready", ready},
			{"Enforcement", enforcementLine(st.Enforcement)},
		}
		lines = append(lines, setupLines(st.Setup)...)
		lines = append(lines, [][2]string{
			{"Definitions", num(st.Counts.Definitions)},
			{"Memberships", num(st.Counts.Memberships)},
			{"Quarantined callers", num(st.Counts.QuarantinedCallers)},
			{"Quarantined targets", num(st.Counts.QuarantinedTargets)},
			{"Admins", num(st.Counts.Admins)},
			{"Live tokens", num(st.Counts.LiveTokens)},
		}...)
		var b strings.Builder
		for _, l := range lines {
			fmt.Fprintf(&b, "%-21s%s\n", l[0]+":", l[1])
		}
		_, err := f.IOStreams.Out.Write([]byte(b.String()))
		return err
	})
}

// setupLines describe the answering replica's setup, or say it is unknown.
func setupLines(s *client.ServerInfo) [][2]string {
	if s == nil {
		return [][2]string{{"Counter store", "-"}, {"gRPC", "-"}, {"Leases", "-"}, {"Fail policy", "-"}}
	}
	cs := s.CounterStore
	store := cs.Backend
	if cs.Cluster {
		store += " cluster"
	}
	if cs.Sentinel != "" {
		store += " sentinel (master set " + cs.Sentinel + ")"
	}
	store += " " + cs.Address
	if cs.Reachable {
		store += fmt.Sprintf(" (reachable, %.1f ms)", cs.LatencyMS)
	} else {
		store += " (UNREACHABLE: " + cs.Error + ")"
	}
	grpc := "off"
	if s.GRPC.Enabled {
		grpc = s.GRPC.Address + " (" + s.GRPC.CountMode
		if s.GRPC.TLS {
			grpc += ", TLS"
		}
		grpc += ")"
	}
	leases := "off"
	if s.Leases.Enabled {
		leases = fmt.Sprintf("on: %gs blocks, %d replicas, %s keys", s.Leases.LeaseTimeSeconds, s.Leases.Replicas, s.Leases.Keys)
	}
	return [][2]string{{"Replica", dash(s.Replica)}, {"Counter store", store}, {"gRPC", grpc}, {"Leases", leases},
		{"Fail policy", failPolicyLine(s.FailPolicy)}}
}

// failPolicyLine is the replica's default fail policy, how many replicas
// it shares the counters with when it knows, and whether it decides on
// its own counters now (the degraded mode).
func failPolicyLine(f client.FailPolicyInfo) string {
	line := dash(f.Default)
	if f.Replicas > 0 {
		line += fmt.Sprintf(", %d replicas", f.Replicas)
	}
	if f.Degraded {
		line += " (DEGRADED: deciding on this replica's own counters)"
	}
	return line
}

// enforcementLine says whether the master switch is on, and when it is off,
// since when, by whom and why.
func enforcementLine(e *rl.Enforcement) string {
	switch {
	case e == nil:
		return "-"
	case e.Enabled:
		return "on"
	}
	s := "OFF: every call allowed, nothing counted (since " + printer.Time(e.UpdatedAt) + " by " + dash(e.UpdatedBy)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s + "; rlctl enforcement on)"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func num(n *int) string {
	if n == nil {
		return "-"
	}
	return strconv.Itoa(*n)
}
