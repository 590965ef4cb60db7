package ratelimitcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// SetOptions are the inputs of `rate-limit set`.
type SetOptions struct {
	Factory    *cmdutil.Factory
	Definition ratelimit.Definition
	IfVersion  int64
	DryRun     bool
}

// NewCmdSet builds `rate-limit set` (and, with another Use, the reference's
// rate-limit-set). runF replaces the run function in flag-parsing tests.
func NewCmdSet(f *cmdutil.Factory, runF func(*SetOptions) error) *cobra.Command {
	opts := &SetOptions{Factory: f}
	var (
		maxReq, userMax, agentMax    int
		burst, userBurst, agentBurst int
		members                      string
		disabled                     bool
		// routes and tools
		paths, methods, kinds []string
		ipMax, ipBurst        int
		teamMax, teamBurst    int
		lockout               string
	)
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Create or replace a rate-limit definition",
		Long: `Create or replace a rate-limit definition. The definition is replaced whole
(as in the reference CLI): flags not given are absent from the new definition.

The id is <axis>:<entity_type>:<name>:<window_seconds>; a burst cap and a daily cap on
the same group are two definitions with different --window-seconds.

--algorithm is how the limits count: fixed_window (the default), sliding_window, or
token_bucket, which reads each limit as a sustained rate (limit per window) and takes a
capacity beside it: --burst beside --max-requests, --user-burst and --agent-burst beside
--user-max-requests and --agent-max-requests, each defaulting to its limit. The algorithm
is not part of the id: setting another one replaces the same definition.

On the caller axes, --everyone selects every caller without membership (its user limit
gates every user and every anonymous caller, keyed by client IP; its agent limit every
agent), and --per says what one bucket counts: caller (the default: each caller its own),
ip (each client IP, whoever calls from it), team (each team) or shared (one bucket for
every caller the definition selects).

--lease is the definition's say in leases, where an enforcer decides a key from a block
of capacity taken from the shared counter: auto (the default: the enforcer decides, hot
keys or every key with rlapi --lease-keys all), never (every call counted on the shared
counter, even for a hot key and with --lease-keys all: for low limits or billing-grade
counts) or always (leased from the first call, hot or not). Leases are off unless the
enforcer turns them on (rlapi --lease-time > 0): without that, never and always change
nothing. A limit (a token bucket's burst) below 2 x rlapi --lease-replicas is never
leased, whatever it says. Where several caller definitions share one bucket, never on any
of them wins over always, which wins over auto.

--fail-policy is what an enforcer decides for the definition's calls while the counter
store cannot be reached: open (the call passes, uncounted), closed (it is refused) or
degrade (each replica enforces its share of the limit in its own memory; see "Degraded
mode" in docs/operations.md). Without it the enforcer's default applies (rlapi
--fail-policy). --fail-closed is the older spelling of --fail-policy closed; it still
works, and is refused beside another policy.

Where several caller definitions share a caller's bucket (one axis, window and
algorithm), the most restrictive applies, unless some are overrides: --override marks
one, and then the most specific override applies, raising or lowering the limit, the
most restrictive of its level. Levels, most specific first: a definition naming the
caller (--entity-type user or client, an override by nature), a group of the caller's
own membership, a group of its team or a definition naming the team (--entity-type
team), a group of its network, a definition for everyone. An override counts on the
caller's own bucket: it is refused with --everyone, with --per other than caller, and
on a shadow group definition.`,
		Example: `  # humans 60/min, agents 30/min for members of "power-users"
  rlctl rate-limit set --axis caller --entity-type group --name power-users \
    --user-max-requests 60 --agent-max-requests 30 --window-seconds 60

  # 500 requests/min to the mcpgw server, across all callers
  rlctl rate-limit set --axis target --entity-type mcp_server --name mcpgw \
    --max-requests 500 --window-seconds 60

  # 100/min to each server of a group, individually
  rlctl rate-limit set --axis target --entity-type server_group --name fragile-backends \
    --max-requests 100 --window-seconds 60 --members airegistry-tools,aws-kb

  # 60/min per client IP, for every call (no membership needed)
  rlctl rate-limit set --axis caller --entity-type group --name per-ip --everyone --per ip \
    --user-max-requests 60 --agent-max-requests 60 --window-seconds 60

  # 1000/hour for each team whose membership names the group "tenants"
  rlctl rate-limit set --axis caller --entity-type group --name tenants --per team \
    --user-max-requests 1000 --agent-max-requests 1000 --window-seconds 3600

  # 600/min sustained to aws-kb, in bursts of at most 50
  rlctl rate-limit set --axis target --entity-type mcp_server --name aws-kb \
    --max-requests 600 --window-seconds 60 --algorithm token_bucket --burst 50

  # a route tier: POSTs to /auth/email/* and /auth/sso/*, 10/min per client address and per user
  rlctl rate-limit set --axis target --entity-type route --name critical --window-seconds 60 \
    --path '/auth/email/*' --path '/auth/sso/*' --method POST \
    --algorithm sliding_window --ip-max-requests 10 --user-max-requests 10

  # paths never limited
  rlctl rate-limit set --axis target --entity-type route --name public --window-seconds 60 \
    --path /docs --path /openapi.json --exempt

  # a billing-grade limit: every call counted on the shared counter, never leased
  rlctl rate-limit set --axis target --entity-type mcp_server --name billing-api \
    --max-requests 1000 --window-seconds 3600 --lease never

  # a payment API refused rather than let through unchecked when the counters are down
  rlctl rate-limit set --axis target --entity-type mcp_server --name payments \
    --max-requests 100 --window-seconds 60 --fail-policy closed

  # premium members get 100/min, whatever the everyone default says
  rlctl rate-limit set --axis caller --entity-type group --name premium --override \
    --user-max-requests 100 --agent-max-requests 100 --window-seconds 60

  # alice gets 30/min, whatever her groups say
  rlctl rate-limit set --axis caller --entity-type user --name alice \
    --user-max-requests 30 --window-seconds 60

  # every delete tool on any server: 5/min per caller per tool, tool calls only
  rlctl rate-limit set --axis target --entity-type mcp_tool --name '*:delete_*' --window-seconds 60 \
    --max-requests 5 --tool-scope principal_tool --kind tool`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			d := &opts.Definition
			fl := cmd.Flags()
			if err := cmdutil.RequireFlags(cmd, "axis", "entity-type", "name", "window-seconds"); err != nil {
				return err
			}
			if fl.Changed("max-requests") {
				d.MaxRequests = &maxReq
			}
			if fl.Changed("user-max-requests") {
				d.UserMaxRequests = &userMax
			}
			if fl.Changed("agent-max-requests") {
				d.AgentMaxRequests = &agentMax
			}
			for _, b := range []struct {
				flag string
				v    *int
				dst  **int
			}{{"burst", &burst, &d.Burst}, {"user-burst", &userBurst, &d.UserBurst}, {"agent-burst", &agentBurst, &d.AgentBurst}} {
				if fl.Changed(b.flag) {
					*b.dst = b.v
				}
			}
			if fl.Changed("members") {
				for _, m := range strings.Split(members, ",") {
					if m = strings.TrimSpace(m); m != "" {
						d.Members = append(d.Members, m)
					}
				}
			}
			d.Paths, d.Methods, d.Kinds = splitList(paths), splitList(methods), splitList(kinds)
			if fl.Changed("ip-max-requests") {
				d.IPMaxRequests = &ipMax
			}
			if fl.Changed("ip-burst") {
				d.IPBurst = &ipBurst
			}
			if fl.Changed("team-max-requests") {
				d.TeamMaxRequests = &teamMax
			}
			if fl.Changed("team-burst") {
				d.TeamBurst = &teamBurst
			}
			if lockout == "true" || lockout == "false" { // or default, the same as not given
				v := lockout == "true"
				d.CountsTowardLockout = &v
			}
			d.Enabled = !disabled
			if d.FailClosed && d.FailPolicy != "" && d.FailPolicy != ratelimit.FailPolicyClosed {
				return cmdutil.NothingSent(fmt.Errorf("--fail-closed is the older spelling of --fail-policy closed and contradicts --fail-policy %s: give --fail-policy alone", d.FailPolicy))
			}
			// The server's rules, without its floors (its configuration):
			// what they refuse is refused here, before any request.
			if _, err := validate.Definition(*d, validate.Floors{}); err != nil {
				return cmdutil.FieldFlags(cmd, err, definitionFlags)
			}
			if runF != nil {
				return runF(opts)
			}
			return setRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Definition.Axis, "axis", "", "caller, target, caller_target or quarantine")
	fl.StringVar(&opts.Definition.EntityType, "entity-type", "", "group, or user, client or team for one caller; for targets mcp_server, a2a_agent, mcp_tool, a2a_skill, server_group, route")
	fl.StringVar(&opts.Definition.Name, "name", "", "group name, user name, client id, team name, server name, agent path, or <parent>:<leaf> for tools and skills")
	fl.IntVar(&opts.Definition.WindowSeconds, "window-seconds", 0, "window length, 1 to 86400")
	fl.IntVar(&maxReq, "max-requests", 0, "limit per window (target axis; on a route, one bucket all callers share)")
	fl.IntVar(&userMax, "user-max-requests", 0, "limit per window for human callers (caller and caller_target axes; on a route, per user)")
	fl.IntVar(&agentMax, "agent-max-requests", 0, "limit per window for agent callers (caller and caller_target axes; on a route, per agent)")
	fl.StringVar(&opts.Definition.Algorithm, "algorithm", "", "fixed_window (the default), sliding_window or token_bucket")
	fl.IntVar(&burst, "burst", 0, "token bucket capacity beside --max-requests (default: the limit)")
	fl.IntVar(&userBurst, "user-burst", 0, "token bucket capacity beside --user-max-requests (default: the limit)")
	fl.IntVar(&agentBurst, "agent-burst", 0, "token bucket capacity beside --agent-max-requests (default: the limit)")
	fl.StringVar(&members, "members", "", "comma-separated server names (server_group only)")
	fl.BoolVar(&opts.Definition.Everyone, "everyone", false, "select every caller without membership (caller and caller_target axes)")
	fl.BoolVar(&opts.Definition.Override, "override", false, "take precedence over less specific definitions sharing the caller's bucket, raising or lowering their limit (caller and caller_target axes)")
	fl.StringVar(&opts.Definition.Per, "per", "", "what one bucket counts: caller (the default), ip, team or shared (caller and caller_target axes)")
	fl.StringSliceVar(&paths, "path", nil, "route path pattern, repeatable or comma-separated; '*' matches any run of characters (route only)")
	fl.StringSliceVar(&methods, "method", nil, "HTTP method the route covers, repeatable (route only; default: every method)")
	fl.BoolVar(&opts.Definition.Exempt, "exempt", false, "the route's paths are never limited (route only; no limits beside it)")
	fl.IntVar(&ipMax, "ip-max-requests", 0, "limit per window per client address (route only)")
	fl.IntVar(&ipBurst, "ip-burst", 0, "token bucket capacity beside --ip-max-requests (default: the limit)")
	fl.IntVar(&teamMax, "team-max-requests", 0, "limit per window per team, shared by its callers (route only)")
	fl.IntVar(&teamBurst, "team-burst", 0, "token bucket capacity beside --team-max-requests (default: the limit)")
	fl.StringSliceVar(&kinds, "kind", nil, "kind of call the tool definition covers: tool, prompt, resource, completion; repeatable (default: every kind)")
	fl.StringVar(&opts.Definition.ToolScope, "tool-scope", "", "what a tool definition's bucket is kept per: global (default), tool, principal, principal_tool")
	fl.StringVar(&opts.Definition.Lease, "lease", "", "leases of the definition's gates when the enforcer has leases on (rlapi --lease-time): auto (the default), never or always")
	fl.StringVar(&lockout, "counts-toward-lockout", "", "whether the definition's throttles count toward the caller's escalation lockout (rlapi --lockout-after): true, false, or default (limits kept for the caller alone count, shared ones do not)")
	fl.StringVar(&opts.Definition.FailPolicy, "fail-policy", "", "what the enforcer decides while the counter store cannot be reached: open, closed or degrade (default: the enforcer's, rlapi --fail-policy)")
	fl.BoolVar(&opts.Definition.FailClosed, "fail-closed", false, "the older spelling of --fail-policy closed")
	fl.BoolVar(&disabled, "disabled", false, "store the definition disabled")
	fl.StringVar(&opts.Definition.Mode, "mode", "enforce", "enforce, or shadow to count and report without denying")
	fl.StringVar(&opts.Definition.Description, "description", "", "free text shown in lists and the dashboard")
	fl.Int64Var(&opts.IfVersion, "if-version", 0, "replace only if the stored version is this one (exit 5 otherwise)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "validate and show what would change, storing nothing")
	_ = cmd.RegisterFlagCompletionFunc("entity-type", CompleteEntityTypes) // by --axis, before EnumFlag's
	cmdutil.EnumFlag(cmd, "axis", validate.Axes()...)
	cmdutil.EnumFlag(cmd, "entity-type", validate.EntityTypes()...)
	cmdutil.EnumFlag(cmd, "algorithm", ratelimit.Algorithms()...)
	cmdutil.EnumFlag(cmd, "per", ratelimit.Pers()...)
	cmdutil.EnumFlag(cmd, "counts-toward-lockout", "true", "false", "default")
	cmdutil.EnumFlag(cmd, "lease", ratelimit.Leases()...)
	cmdutil.EnumFlag(cmd, "fail-policy", ratelimit.FailPolicies()...)
	cmdutil.EnumFlag(cmd, "mode", ratelimit.ModeEnforce, ratelimit.ModeShadow)
	_ = cmd.RegisterFlagCompletionFunc("method", cobra.FixedCompletions(ratelimit.Methods(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions(ratelimit.Kinds(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("tool-scope", cobra.FixedCompletions(ratelimit.ToolScopes(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("path", cobra.NoFileCompletions)
	return cmd
}

// definitionFlags names the flags of the definition fields whose flag is
// not the field's name with '-' for '_'.
var definitionFlags = map[string]string{"kinds": "kind", "methods": "method", "paths": "path"}

func setRun(ctx context.Context, opts *SetOptions) error {
	f := opts.Factory
	c, err := f.Client()
	if err != nil {
		return err
	}
	id := opts.Definition.Key()
	var before *ratelimit.Definition
	if old, err := c.GetDefinition(ctx, id); err == nil {
		before = &old
	} else if !errors.Is(err, client.ErrNotFound) {
		return err
	}
	res, err := c.PutDefinition(ctx, opts.Definition, client.WriteOptions{IfVersion: opts.IfVersion, DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	format := f.Global.Output
	if format == printer.JSON || format == printer.YAML {
		if res.DryRun != nil {
			return printer.Document(f.IOStreams, format, res.DryRun, nil)
		}
		return printer.Object(f.IOStreams, format, res.Value, Columns, "definition", idOf)
	}
	return PrintOutcome(f, "definition", res.Value.ID, before, &res.Value, res.Created, res.DryRun != nil)
}

// PrintOutcome writes the human line for a write: created, updated (with
// the fields that changed) or unchanged; "would ..." for dry runs.
func PrintOutcome(f *cmdutil.Factory, kind, id string, before, after any, created, dry bool) error {
	out := f.IOStreams.Out
	prefix := ""
	if dry {
		prefix = "would be "
	}
	if f.Global.Output == printer.Name {
		_, err := fmt.Fprintf(out, "%s/%s\n", kind, id)
		return err
	}
	if created {
		_, err := fmt.Fprintf(out, "%s/%s %screated\n", kind, id, prefix)
		return err
	}
	changes := cmdutil.Changes(before, after)
	if len(changes) == 0 {
		_, err := fmt.Fprintf(out, "%s/%s unchanged\n", kind, id)
		return err
	}
	_, err := fmt.Fprintf(out, "%s/%s %supdated: %s\n", kind, id, prefix, cmdutil.FormatChanges(changes))
	return err
}

// splitList flattens repeated and comma-separated values, dropping empty
// ones; nil when none is left.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
