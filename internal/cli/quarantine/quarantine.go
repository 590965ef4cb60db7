// Package quarantine holds the kill-switch commands: quarantine a caller
// or a target at once, list, and release.
package quarantine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// row is one line of the quarantine table.
type row struct {
	Scope string
	client.QuarantineEntry
}

// Columns of the quarantine table.
var Columns = []printer.Column[row]{
	{Header: "SCOPE", Value: func(r row) string { return r.Scope }},
	{Header: "ID", Value: func(r row) string { return r.ID }},
	{Header: "REASON", Value: func(r row) string { return r.Reason }},
	{Header: "SINCE", Value: func(r row) string { return printer.Time(r.QuarantinedAt) }},
	{Header: "EXPIRES", Value: func(r row) string { return printer.Time(r.ExpiresAt) }},
	{Header: "STATE", Value: func(r row) string {
		if r.Expired {
			return "expired"
		}
		return "active"
	}},
}

// NewCmdQuarantine builds `rlctl quarantine`.
func NewCmdQuarantine(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "quarantine <command>",
		Aliases: []string{"q"},
		Short:   "Block a caller or a target at once (the kill switch)",
		GroupID: "core",
	}
	cmd.AddCommand(NewCmdAdd(f, false, nil), NewCmdRemove(f, false, nil), NewCmdList(f, nil))
	return cmd
}

// NewFlatCommands builds the reference's rate-limit-quarantine-* spellings.
func NewFlatCommands(f *cmdutil.Factory) []*cobra.Command {
	return []*cobra.Command{
		cmdutil.Flat(NewCmdAdd(f, true, nil), "rate-limit-quarantine-add"),
		cmdutil.Flat(NewCmdRemove(f, true, nil), "rate-limit-quarantine-remove"),
		cmdutil.Flat(NewCmdList(f, nil), "rate-limit-quarantine-list"),
	}
}

// SubjectOptions are the inputs of add and remove.
type SubjectOptions struct {
	Factory     *cmdutil.Factory
	SubjectType string
	Subject     string
	Reason      string
	For         time.Duration
	Yes         bool
	DryRun      bool
	Flat        bool
	// Network is --network CIDR (--subject-type network --subject CIDR).
	Network string
}

// subjectFlags adds --subject-type, --subject and --dry-run. --subject
// completes bare subjects (alice, not user:alice) of the --subject-type
// given: the quarantined ones for remove (quarantined), the others with a
// membership for add.
func subjectFlags(cmd *cobra.Command, opts *SubjectOptions, quarantined bool) {
	fl := cmd.Flags()
	fl.StringVar(&opts.SubjectType, "subject-type", "", "user, client, network, team (callers), server or agent (targets)")
	fl.StringVar(&opts.Subject, "subject", "", "username, client id, network CIDR, team name, server name or agent path")
	fl.StringVar(&opts.Network, "network", "", "a network of client addresses in CIDR form (10.1.0.0/16, 2001:db8::/48): --subject-type network --subject CIDR")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what would change, changing nothing")
	cmdutil.EnumFlag(cmd, "subject-type", validate.SubjectTypes()...)
	_ = cmd.RegisterFlagCompletionFunc("subject", completeSubjects(opts.Factory, quarantined, ""))
	_ = cmd.RegisterFlagCompletionFunc("network", completeSubjects(opts.Factory, quarantined, rl.SubjectNetwork))
}

func completeSubjects(f *cmdutil.Factory, quarantined bool, only string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		typ, _ := cmd.Flags().GetString("subject-type")
		if only != "" {
			typ = only
		}
		return cmdutil.CompleteFromServer(f, toComplete, cobra.ShellCompDirectiveNoFileComp,
			func(ctx context.Context, c *client.Client, toComplete string) ([]string, error) {
				var out []string
				add := func(subjectType, subject, about string) {
					if (typ == "" || typ == subjectType) && strings.HasPrefix(subject, toComplete) {
						out = append(out, subject+"\t"+subjectType+about)
					}
				}
				if quarantined {
					q, err := c.ListQuarantine(ctx)
					if err != nil {
						return nil, err
					}
					for _, e := range append(q.Callers, q.Targets...) {
						about := ", quarantined"
						if e.Reason != "" {
							about += ": " + e.Reason
						}
						add(e.SubjectType, e.Subject, about)
					}
					return out, nil
				}
				ms, err := c.ListAllMemberships(ctx, client.MembershipFilter{SubjectType: typ})
				if err != nil {
					return nil, err
				}
				for _, m := range ms {
					if !m.HasGroup(rl.GroupQuarantineCallers) && !m.HasGroup(rl.GroupQuarantineTargets) {
						add(m.SubjectType, m.Subject, " in "+strings.Join(m.Groups, ","))
					}
				}
				return out, nil
			})
	}
}

// requireSubject checks the subject flags, and the subject with the
// server's rules, before any request.
func requireSubject(cmd *cobra.Command, opts *SubjectOptions) error {
	if err := cmdutil.NetworkSubject(cmd, opts.Network, &opts.SubjectType, &opts.Subject); err != nil {
		return err
	}
	if _, err := validate.Subject(opts.SubjectType, opts.Subject); err != nil {
		return cmdutil.FieldFlags(cmd, err, cmdutil.SubjectFlags(cmd))
	}
	return nil
}

// NewCmdAdd builds `quarantine add`. The grouped verb asks for
// confirmation (or --yes); the flat rate-limit-quarantine-add does not.
func NewCmdAdd(f *cmdutil.Factory, flat bool, runF func(*SubjectOptions) error) *cobra.Command {
	opts := &SubjectOptions{Factory: f, Flat: flat}
	cmd := &cobra.Command{
		Use:   "add",
		Short: "Quarantine a caller or a target: all its data-plane traffic is denied",
		Long: `Quarantine a subject: every data-plane call from a quarantined caller (user, client)
or to a quarantined target (server, agent) is denied with 403 until it is removed or
its --for duration ends. Administrators can never be quarantined; the server refuses
(exit code 5).

A quarantined network (--network CIDR) is an IP deny list: every call whose client
address is inside it is denied, users' and agents' included, unless a more specific
network holding the address is not quarantined. Networks are never administrators,
so quarantining one is never refused; an administrator calling from inside it is
still let through (administrators are never quarantined).`,
		Example: `  rlctl quarantine add --subject-type client --subject leaked-agent --reason "key leak" --for 2h
  rlctl quarantine add --subject-type server --subject mcpgw --yes
  rlctl quarantine add --network 2001:db8:bad::/48 --reason "credential stuffing" --for 24h --yes`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireSubject(cmd, opts); err != nil {
				return err
			}
			if opts.For < 0 || (opts.For > 0 && opts.For < time.Second) {
				return cmdutil.FlagErrorf("--for: must be at least 1s (got %s)", opts.For)
			}
			if runF != nil {
				return runF(opts)
			}
			return addRun(cmd.Context(), opts)
		},
	}
	subjectFlags(cmd, opts, false)
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why: shown in lists and the audit log")
	cmdutil.DurationVar(cmd.Flags(), &opts.For, "for", 0, "lift the quarantine after this long, e.g. 2h or 7d (default: until removed)")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func addRun(ctx context.Context, opts *SubjectOptions) error {
	f := opts.Factory
	if !opts.Flat && !opts.DryRun {
		if err := f.Confirm(opts.Yes, fmt.Sprintf("quarantine %s %s", opts.SubjectType, opts.Subject)); err != nil {
			return err
		}
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	res, err := c.Quarantine(ctx, opts.SubjectType, opts.Subject,
		client.QuarantineRequest{Reason: opts.Reason, ExpiresInSeconds: int(opts.For / time.Second)},
		client.WriteOptions{DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	switch f.Global.Output {
	case printer.JSON, printer.YAML:
		if res.DryRun != nil {
			return printer.Document(f.IOStreams, f.Global.Output, res.DryRun, nil)
		}
		return printer.Document(f.IOStreams, f.Global.Output, res.Entry, nil)
	}
	id := fmt.Sprintf("%s:%s", opts.SubjectType, opts.Subject)
	if res.Entry.ID != "" {
		id = res.Entry.ID
	}
	verb := "quarantined"
	switch {
	case opts.DryRun:
		verb = "would be quarantined"
	case !res.Created:
		verb = "quarantine updated"
	}
	until := ""
	if res.Entry.ExpiresAt != nil {
		until = " until " + res.Entry.ExpiresAt.UTC().Format(time.RFC3339)
	}
	_, err = fmt.Fprintf(f.IOStreams.Out, "%s %s%s\n", id, verb, until)
	return err
}

// NewCmdRemove builds `quarantine remove`. Releasing a subject undoes an
// incident action, so the grouped verb asks for confirmation (or --yes), as
// add does; the flat rate-limit-quarantine-remove does not.
func NewCmdRemove(f *cmdutil.Factory, flat bool, runF func(*SubjectOptions) error) *cobra.Command {
	opts := &SubjectOptions{Factory: f, Flat: flat}
	cmd := &cobra.Command{
		Use:     "remove",
		Aliases: []string{"rm"},
		Short:   "Release a subject from quarantine",
		Example: `  rlctl quarantine remove --subject-type client --subject leaked-agent
  rlctl quarantine remove --subject-type user --subject mallory --yes
  rlctl quarantine remove --network 2001:db8:bad::/48 --yes`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireSubject(cmd, opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			if !opts.Flat && !opts.DryRun {
				if err := f.Confirm(opts.Yes, fmt.Sprintf("release %s %s from quarantine", opts.SubjectType, opts.Subject)); err != nil {
					return err
				}
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			removed, _, err := c.Unquarantine(cmd.Context(), opts.SubjectType, opts.Subject, client.WriteOptions{DryRun: opts.DryRun})
			if err != nil {
				return err
			}
			switch f.Global.Output {
			case printer.JSON, printer.YAML:
				return printer.Document(f.IOStreams, f.Global.Output, map[string]any{"removed": removed, "id": opts.SubjectType + ":" + opts.Subject}, nil)
			}
			msg := "released from quarantine"
			switch {
			case !removed:
				msg = "was not quarantined"
			case opts.DryRun:
				msg = "would be released from quarantine"
			}
			_, err = fmt.Fprintf(f.IOStreams.Out, "%s:%s %s\n", opts.SubjectType, opts.Subject, msg)
			return err
		},
	}
	subjectFlags(cmd, opts, true)
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// NewCmdList builds `quarantine list`.
func NewCmdList(f *cmdutil.Factory, runF func(*cmdutil.Factory) error) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List quarantined callers and targets, and whether quarantine is on",
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(f)
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			q, err := c.ListQuarantine(cmd.Context())
			if err != nil {
				return err
			}
			var rows []row
			for _, e := range q.Callers {
				rows = append(rows, row{"caller", e})
			}
			for _, e := range q.Targets {
				rows = append(rows, row{"target", e})
			}
			if f.IOStreams.IsStdoutTTY() && (f.Global.Output == printer.Table || f.Global.Output == printer.Wide) {
				fmt.Fprintf(f.IOStreams.ErrOut, "caller quarantine %s, target quarantine %s\n", onOff(q.CallersEnabled), onOff(q.TargetsEnabled))
			}
			return printer.List(f.IOStreams, f.Global.Output, rows, Columns, q, "quarantine", func(r row) string { return r.ID })
		},
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "OFF (sentinel disabled)"
}
