// Package member holds the membership commands: which groups a subject
// (user, client, server, agent, network) belongs to.
package member

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
	"github.com/rlctl/rlctl/internal/cli/ratelimitcmd"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// Columns of a membership table.
var Columns = []printer.Column[rl.Membership]{
	{Header: "ID", Value: func(m rl.Membership) string { return m.ID }},
	{Header: "SUBJECT-TYPE", Value: func(m rl.Membership) string { return m.SubjectType }},
	{Header: "SUBJECT", Value: func(m rl.Membership) string { return m.Subject }},
	{Header: "GROUPS", Value: func(m rl.Membership) string { return strings.Join(m.Groups, ",") }},
	{Header: "VERSION", Wide: true, Value: func(m rl.Membership) string { return strconv.FormatInt(m.Version, 10) }},
	{Header: "QUARANTINE-REASON", Wide: true, Value: func(m rl.Membership) string { return m.QuarantineReason }},
	{Header: "UPDATED", Wide: true, Value: func(m rl.Membership) string {
		if m.UpdatedAt == nil {
			return ""
		}
		return m.UpdatedAt.UTC().Format(time.RFC3339)
	}},
}

func idOf(m rl.Membership) string { return m.ID }

// NewCmdMember builds `rlctl member`.
func NewCmdMember(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "member <command>",
		Aliases: []string{"members", "membership"},
		Short:   "Manage group memberships of users, clients, servers, agents and networks",
		GroupID: "core",
	}
	cmd.AddCommand(NewCmdSet(f, nil), NewCmdList(f, nil), NewCmdGet(f, nil), NewCmdDelete(f, false, nil))
	return cmd
}

// NewFlatCommands builds the reference's rate-limit-member-* spellings.
func NewFlatCommands(f *cmdutil.Factory) []*cobra.Command {
	return []*cobra.Command{
		cmdutil.Flat(NewCmdSet(f, nil), "rate-limit-member-set"),
		cmdutil.Flat(NewCmdList(f, nil), "rate-limit-member-list"),
		cmdutil.Flat(NewCmdDelete(f, true, nil), "rate-limit-member-delete"),
	}
}

// SetOptions are the inputs of `member set`.
type SetOptions struct {
	Factory    *cmdutil.Factory
	Membership rl.Membership
	IfVersion  int64
	DryRun     bool
}

// NewCmdSet builds `member set`: replace a subject's groups.
func NewCmdSet(f *cmdutil.Factory, runF func(*SetOptions) error) *cobra.Command {
	opts := &SetOptions{Factory: f}
	var groups, network string
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Set the groups of a user, client, server, agent, network or team (replaces its groups)",
		Long: `Set the groups of a subject, replacing the ones it had. A group that no definition
uses is accepted (define it later) with a warning, since it is often a typo.

--groups "" sets no groups, as in the reference CLI: a subject in no group is the
same as one without a membership, so the membership is deleted (and nothing
happens when there is none). A quarantined subject is refused: release it with
rlctl quarantine remove first.

A network (--network CIDR, or --subject-type network --subject CIDR) holds client
addresses: an anonymous call (no user, no client) from an address inside it is the
caller ip:<address> (IPv6: its /64) and gets the user limits of the network's
groups; the most specific network holding an address is the one that counts.
Users and clients keep their own groups wherever they call from.

A team (--subject-type team) is the team a call names (the gateway passes it: the
team field of /api/check, X-Auth-Team for /api/validate): a call of the team gets the
limits of the team's groups besides its caller's own. Which calls share a bucket is the
definition's --per: per caller (the default) each caller of the team has its own, per
team the whole team has one.`,
		Example: `  rlctl member set --subject-type user --subject alice --groups power-users
  rlctl member set --subject-type client --subject my-agent-client-id --groups power-users,batch
  rlctl member set --subject-type user --subject alice --groups ""
  rlctl member set --network 2001:db8:42::/48 --groups anonymous-partners
  rlctl member set --subject-type team --subject acme-corp --groups tenants`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.NetworkSubject(cmd, network, &opts.Membership.SubjectType, &opts.Membership.Subject); err != nil {
				return err
			}
			if err := cmdutil.RequireFlags(cmd, "groups"); err != nil {
				return err
			}
			opts.Membership.Groups = splitList(groups)
			// The server's rules, checked before any request; no groups
			// is no membership (the subject alone is checked).
			check := validate.Membership
			if len(opts.Membership.Groups) == 0 {
				check = validate.NoGroups
			}
			if _, err := check(opts.Membership); err != nil {
				return cmdutil.FieldFlags(cmd, err, cmdutil.SubjectFlags(cmd))
			}
			if runF != nil {
				return runF(opts)
			}
			return setRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Membership.SubjectType, "subject-type", "", "user, client, server, agent, network or team")
	fl.StringVar(&opts.Membership.Subject, "subject", "", "username, client id, server name, agent path, network CIDR or team name")
	fl.StringVar(&network, "network", "", "a network of client addresses in CIDR form (10.1.0.0/16, 2001:db8::/48): --subject-type network --subject CIDR")
	fl.StringVar(&groups, "groups", "", "comma-separated group names")
	fl.Int64Var(&opts.IfVersion, "if-version", 0, "replace only if the stored version is this one")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "validate and show what would change, storing nothing")
	cmdutil.EnumFlag(cmd, "subject-type", validate.SubjectTypes()...)
	_ = cmd.RegisterFlagCompletionFunc("groups", CompleteGroups(f))
	_ = cmd.RegisterFlagCompletionFunc("network", CompleteNetworks(f))
	return cmd
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func setRun(ctx context.Context, opts *SetOptions) error {
	f := opts.Factory
	c, err := f.Client()
	if err != nil {
		return err
	}
	var before *rl.Membership
	if old, err := c.GetMembership(ctx, opts.Membership.Key()); err == nil {
		before = &old
	} else if !errors.Is(err, client.ErrNotFound) {
		return err
	}
	if len(opts.Membership.Groups) == 0 {
		return setNoGroups(ctx, opts, c, before)
	}
	res, err := c.PutMembership(ctx, opts.Membership, client.WriteOptions{IfVersion: opts.IfVersion, DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	switch f.Global.Output {
	case printer.JSON, printer.YAML:
		if res.DryRun != nil {
			return printer.Document(f.IOStreams, f.Global.Output, res.DryRun, nil)
		}
		return printer.Object(f.IOStreams, f.Global.Output, res.Value, Columns, "membership", idOf)
	}
	if err := ratelimitcmd.PrintOutcome(f, "membership", res.Value.Key(), before, &res.Value, res.Created, res.DryRun != nil); err != nil {
		return err
	}
	warnUnusedGroups(ctx, f, c, res.Value.Groups)
	return nil
}

// warnUnusedGroups says on stderr which of groups no definition uses: the
// membership is stored (the definition may come later), but a group
// nothing limits is most often a typo.
func warnUnusedGroups(ctx context.Context, f *cmdutil.Factory, c *client.Client, groups []string) {
	defs, err := c.ListAllDefinitions(ctx, client.DefinitionFilter{EntityType: rl.EntityGroup})
	if err != nil {
		return // a warning is not worth failing a change that succeeded
	}
	used := map[string]bool{}
	for _, d := range defs {
		used[d.Name] = true
	}
	for _, g := range groups {
		if !used[g] && g != rl.GroupQuarantineCallers && g != rl.GroupQuarantineTargets {
			fmt.Fprintf(f.IOStreams.ErrOut, "Warning: no definition uses group %q yet, so it limits nothing (rlctl rate-limit list --entity-type group lists the groups)\n", g)
		}
	}
}

// setNoGroups is `member set --groups ""`: no groups is no membership, so
// an existing one is deleted. A quarantined subject is refused: that would
// release it, which is quarantine remove's job.
func setNoGroups(ctx context.Context, opts *SetOptions, c *client.Client, before *rl.Membership) error {
	f := opts.Factory
	id := opts.Membership.Key()
	if before != nil {
		id = before.Key()
		if before.HasGroup(rl.GroupQuarantineCallers) || before.HasGroup(rl.GroupQuarantineTargets) {
			return cmdutil.FlagErrorf("%s is quarantined: --groups \"\" would release it; run rlctl quarantine remove first", id)
		}
	}
	verb := "unchanged (no groups, no membership)"
	if before != nil {
		if _, err := c.DeleteMembership(ctx, id, client.WriteOptions{IfVersion: opts.IfVersion, DryRun: opts.DryRun}); err != nil {
			return err
		}
		verb = "deleted (no groups)"
		if opts.DryRun {
			verb = "would be deleted (no groups)"
		}
	}
	switch f.Global.Output {
	case printer.JSON, printer.YAML:
		return printer.Document(f.IOStreams, f.Global.Output, map[string]any{"id": id, "groups": []string{}, "deleted": before != nil, "dry_run": opts.DryRun}, nil)
	case printer.Name:
		_, err := fmt.Fprintf(f.IOStreams.Out, "membership/%s\n", id)
		return err
	}
	_, err := fmt.Fprintf(f.IOStreams.Out, "membership/%s %s\n", id, verb)
	return err
}

// ListOptions are the inputs of `member list`.
type ListOptions struct {
	Factory *cmdutil.Factory
	Filter  client.MembershipFilter
}

// NewCmdList builds `member list`.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List memberships",
		Example: `  rlctl member list --group power-users`,
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return cmdutil.RunList(cmd.Context(), f, func(ctx context.Context, c *client.Client) ([]rl.Membership, error) {
				return c.ListAllMemberships(ctx, opts.Filter)
			}, Columns, func(ms []rl.Membership) any {
				return struct {
					Memberships []rl.Membership `json:"memberships"`
				}{ms}
			}, "membership", idOf)
		},
	}
	cmd.Flags().StringVar(&opts.Filter.Group, "group", "", "only members of this group")
	cmd.Flags().StringVar(&opts.Filter.SubjectType, "subject-type", "", "only this subject type")
	_ = cmd.RegisterFlagCompletionFunc("group", CompleteGroups(f))
	cmdutil.EnumFlag(cmd, "subject-type", validate.SubjectTypes()...)
	return cmd
}

// IDOptions are the inputs of the commands on one membership.
type IDOptions = cmdutil.IDOptions

// idCommand builds a command taking one membership id, positionally or as --id.
func idCommand(f *cmdutil.Factory, use, short, example string, run func(context.Context, *IDOptions) error, runF func(*IDOptions) error) (*cobra.Command, *IDOptions) {
	return cmdutil.NewCmdID(f, use, short, example, "membership id, <subject_type>:<subject>", CompleteSubjects(f), run, runF)
}

// NewCmdGet builds `member get`.
func NewCmdGet(f *cmdutil.Factory, runF func(*IDOptions) error) *cobra.Command {
	cmd, _ := idCommand(f, "get", "Show one membership", "  rlctl member get user:alice", func(ctx context.Context, o *IDOptions) error {
		c, err := f.Client()
		if err != nil {
			return err
		}
		m, err := c.GetMembership(ctx, o.ID)
		if err != nil {
			return err
		}
		return printer.Object(f.IOStreams, f.Global.Output, m, Columns, "membership", idOf)
	}, runF)
	return cmd
}

// NewCmdDelete builds `member delete` (flat: rate-limit-member-delete,
// which does not prompt).
func NewCmdDelete(f *cmdutil.Factory, flat bool, runF func(*IDOptions) error) *cobra.Command {
	cmd, opts := idCommand(f, "delete", "Delete a membership", "  rlctl member delete user:alice --yes", func(ctx context.Context, o *IDOptions) error {
		return cmdutil.DeleteRun(ctx, o, "membership", (*client.Client).DeleteMembership)
	}, runF)
	cmdutil.DeleteFlags(cmd, opts, flat)
	return cmd
}

// CompleteGroups completes group names known to the server (group
// definitions and groups in memberships).
func CompleteGroups(f *cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return cmdutil.CompleteFromServer(f, toComplete, cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace,
			func(ctx context.Context, c *client.Client, toComplete string) ([]string, error) {
				// Complete the last element of a comma-separated list.
				prefix, last := "", toComplete
				if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
					prefix, last = toComplete[:i+1], toComplete[i+1:]
				}
				seen := map[string]bool{}
				defs, err := c.ListAllDefinitions(ctx, client.DefinitionFilter{EntityType: rl.EntityGroup})
				if err != nil {
					return nil, err
				}
				var out []string
				for _, d := range defs {
					if !seen[d.Name] && strings.HasPrefix(d.Name, last) {
						seen[d.Name] = true
						out = append(out, prefix+d.Name)
					}
				}
				return out, nil
			})
	}
}

// CompleteSubjects completes membership ids from the server.
func CompleteSubjects(f *cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return cmdutil.CompleteArg(f, func(ctx context.Context, c *client.Client, toComplete string) ([]string, error) {
		ms, err := c.ListAllMemberships(ctx, client.MembershipFilter{})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, m := range ms {
			if strings.HasPrefix(m.ID, toComplete) {
				out = append(out, m.ID+"\t"+strings.Join(m.Groups, ","))
			}
		}
		return out, nil
	})
}

// CompleteNetworks completes the network subjects (CIDRs) the server has
// memberships for.
func CompleteNetworks(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return cmdutil.CompleteFromServer(f, toComplete, cobra.ShellCompDirectiveNoFileComp,
			func(ctx context.Context, c *client.Client, toComplete string) ([]string, error) {
				ms, err := c.ListAllMemberships(ctx, client.MembershipFilter{SubjectType: rl.SubjectNetwork})
				if err != nil {
					return nil, err
				}
				var out []string
				for _, m := range ms {
					if strings.HasPrefix(m.Subject, toComplete) {
						out = append(out, m.Subject+"\tin "+strings.Join(m.Groups, ","))
					}
				}
				return out, nil
			})
	}
}
