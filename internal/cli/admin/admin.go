// Package admin holds the administrator commands: grant, revoke and list
// the gateway identities that bypass caller limits and can never be
// quarantined.
package admin

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/internal/cli/ratelimitcmd"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// subjectTypes are the subject types an administrator can have: callers.
var subjectTypes = []string{rl.SubjectUser, rl.SubjectClient}

// Columns of an administrator table.
var Columns = []printer.Column[rl.Admin]{
	{Header: "SUBJECT-TYPE", Value: func(a rl.Admin) string { return a.SubjectType }},
	{Header: "SUBJECT", Value: func(a rl.Admin) string { return a.Subject }},
	{Header: "NOTE", Value: func(a rl.Admin) string { return a.Note }},
	{Header: "CREATED", Value: func(a rl.Admin) string { return printer.Time(a.CreatedAt) }},
	{Header: "CREATED-BY", Value: func(a rl.Admin) string { return a.CreatedBy }},
}

func idOf(a rl.Admin) string { return a.Key() }

// NewCmdAdmin builds `rlctl admin`.
func NewCmdAdmin(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "admin <command>",
		Aliases: []string{"admins"},
		Short:   "Manage administrators: callers that bypass limits and cannot be quarantined",
		GroupID: "admin",
	}
	cmd.AddCommand(NewCmdAdd(f, nil), NewCmdRemove(f, nil), NewCmdList(f, nil))
	return cmd
}

// AddOptions are the inputs of `admin add`.
type AddOptions struct {
	Factory *cmdutil.Factory
	Admin   rl.Admin
	DryRun  bool
}

// NewCmdAdd builds `admin add`.
func NewCmdAdd(f *cmdutil.Factory, runF func(*AddOptions) error) *cobra.Command {
	opts := &AddOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "add",
		Short: "Grant administrator privileges to a user or a client",
		Long: `Grant administrator privileges to a user or a client. Administrators bypass caller
limits and can never be quarantined. A subject that is quarantined now cannot be made
an administrator: the server refuses (exit code 5); release it first.

Adding an existing administrator again replaces its note.`,
		Example: `  rlctl admin add --subject-type user --subject alice --note "on-call lead"
  rlctl admin add --subject-type client --subject ops-automation`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireSubject(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return addRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Admin.SubjectType, "subject-type", "", "user or client")
	fl.StringVar(&opts.Admin.Subject, "subject", "", "username or client id")
	fl.StringVar(&opts.Admin.Note, "note", "", "why this subject is an administrator")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "validate and show what would change, storing nothing")
	cmdutil.EnumFlag(cmd, "subject-type", subjectTypes...)
	return cmd
}

// requireSubject checks --subject-type and --subject are given (the root
// checks the type is one an administrator can have: EnumFlag).
func requireSubject(cmd *cobra.Command) error {
	return cmdutil.RequireFlags(cmd, "subject-type", "subject")
}

func addRun(ctx context.Context, opts *AddOptions) error {
	f := opts.Factory
	c, err := f.Client()
	if err != nil {
		return err
	}
	before, err := find(ctx, c, opts.Admin.Key())
	if err != nil {
		return err
	}
	res, err := c.PutAdmin(ctx, opts.Admin, client.WriteOptions{DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	switch f.Global.Output {
	case printer.JSON, printer.YAML:
		if res.DryRun != nil {
			return printer.Document(f.IOStreams, f.Global.Output, res.DryRun, nil)
		}
		return printer.Object(f.IOStreams, f.Global.Output, res.Value, Columns, "admin", idOf)
	}
	after := res.Value
	if res.DryRun != nil && after.SubjectType == "" {
		after = opts.Admin
	}
	// before, not res.Created: a dry run's report says "grant", not
	// "create", so the SDK does not mark it created.
	return ratelimitcmd.PrintOutcome(f, "admin", opts.Admin.Key(), before, &after, before == nil, res.DryRun != nil)
}

// find returns the administrator with the given id, or nil.
func find(ctx context.Context, c *client.Client, id string) (*rl.Admin, error) {
	admins, err := c.ListAdmins(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range admins {
		if a.Key() == id {
			return &a, nil
		}
	}
	return nil, nil
}

// RemoveOptions are the inputs of `admin remove`.
type RemoveOptions struct {
	Factory     *cmdutil.Factory
	SubjectType string
	Subject     string
	Yes         bool
	DryRun      bool
}

// NewCmdRemove builds `admin remove`.
func NewCmdRemove(f *cmdutil.Factory, runF func(*RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{Factory: f}
	cmd := &cobra.Command{
		Use:     "remove [SUBJECT-TYPE:SUBJECT]",
		Aliases: []string{"rm"},
		Short:   "Revoke a subject's administrator privileges",
		Example: `  rlctl admin remove user:alice
  rlctl admin remove --subject-type client --subject ops-automation --yes`,
		Args:              cmdutil.MaximumNArgs(1),
		ValidArgsFunction: CompleteAdmins(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			byFlags := fl.Changed("subject-type") || fl.Changed("subject")
			switch {
			case len(args) == 1 && byFlags:
				return cmdutil.FlagErrorf("give the administrator as an argument or with --subject-type and --subject, not both")
			case len(args) == 1:
				t, s, err := rl.ParseMembershipID(args[0])
				if err != nil || s == "" {
					return cmdutil.FlagErrorf("administrator %q: want <subject_type>:<subject>, e.g. user:alice", args[0])
				}
				opts.SubjectType, opts.Subject = t, s
			case byFlags:
				if err := requireSubject(cmd); err != nil {
					return err
				}
			default:
				return cmdutil.FlagErrorf("say which administrator: user:alice, or --subject-type and --subject")
			}
			if runF != nil {
				return runF(opts)
			}
			return removeRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.SubjectType, "subject-type", "", "user or client")
	fl.StringVar(&opts.Subject, "subject", "", "username or client id")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what would be removed, removing nothing")
	cmdutil.EnumFlag(cmd, "subject-type", subjectTypes...)
	return cmd
}

func removeRun(ctx context.Context, opts *RemoveOptions) error {
	f := opts.Factory
	id := rl.MembershipID(opts.SubjectType, opts.Subject)
	if !opts.DryRun {
		if err := f.Confirm(opts.Yes, fmt.Sprintf("revoke the administrator privileges of %s", id)); err != nil {
			return err
		}
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	rep, err := c.DeleteAdmin(ctx, opts.SubjectType, opts.Subject, client.WriteOptions{DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	switch f.Global.Output {
	case printer.JSON, printer.YAML:
		if rep != nil {
			return printer.Document(f.IOStreams, f.Global.Output, rep, nil)
		}
		return printer.Document(f.IOStreams, f.Global.Output, map[string]any{"deleted": true, "id": id}, nil)
	case printer.Name:
		_, err = fmt.Fprintf(f.IOStreams.Out, "admin/%s\n", id)
		return err
	}
	verb := "removed"
	if opts.DryRun {
		verb = "would be removed"
	}
	_, err = fmt.Fprintf(f.IOStreams.Out, "admin/%s %s\n", id, verb)
	return err
}

// NewCmdList builds `admin list`.
func NewCmdList(f *cmdutil.Factory, runF func(*cmdutil.Factory) error) *cobra.Command {
	return cmdutil.NewCmdList(f, "List administrators", `  rlctl admin list
  rlctl admin list -o json`, listRun, runF)
}

type adminList struct {
	Admins []rl.Admin `json:"admins"`
}

func listRun(ctx context.Context, f *cmdutil.Factory) error {
	return cmdutil.RunList(ctx, f, func(ctx context.Context, c *client.Client) ([]rl.Admin, error) { return c.ListAdmins(ctx) },
		Columns, func(admins []rl.Admin) any { return adminList{admins} }, "admin", idOf)
}

// CompleteAdmins completes administrator ids (<subject_type>:<subject>)
// from the server.
func CompleteAdmins(f *cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return cmdutil.CompleteArg(f, func(ctx context.Context, c *client.Client, toComplete string) ([]string, error) {
		admins, err := c.ListAdmins(ctx)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, a := range admins {
			if id := a.Key(); strings.HasPrefix(id, toComplete) {
				if a.Note != "" {
					id += "\t" + a.Note
				}
				out = append(out, id)
			}
		}
		return out, nil
	})
}
