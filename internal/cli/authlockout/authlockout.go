// Package authlockout holds the commands over failed-credential lockouts:
// list the addresses locked out (or counting failures), and lift one on
// every replica at once.
package authlockout

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/pkg/client"
)

// scopes are the throttles' scopes a lift can name.
var scopes = []string{client.AuthScopeRlapi, client.AuthScopeGateway}

// NewCmdAuthLockout builds `rlctl auth-lockout`.
func NewCmdAuthLockout(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "auth-lockout <command>",
		Aliases: []string{"auth-lockouts"},
		Short:   "List and lift lockouts for failed authentications",
		Long: `Addresses that sent too many invalid credentials are locked out for a while: rlapi's
own tokens (scope rlapi: --auth-max-failures, --auth-window, --auth-lockout) and the
credentials gateways report (scope gateway). 'list' shows them; 'lift' (admin role)
ends a lockout on every rlapi replica and gateway at once.

A locked address is refused before its token is read, an administrator's too: lift a
lockout of your own address from another address, or with another administrator.`,
		GroupID: "admin",
	}
	cmd.AddCommand(NewCmdList(f, nil), NewCmdLift(f, nil))
	return cmd
}

// Columns of the lockout table.
var Columns = []printer.Column[client.AuthLockout]{
	{Header: "ADDRESS", Value: func(l client.AuthLockout) string { return l.Address }},
	{Header: "SCOPE", Value: func(l client.AuthLockout) string { return l.Scope }},
	{Header: "LOCKED", Value: func(l client.AuthLockout) string { return strconv.FormatBool(l.Locked) }},
	{Header: "REMAINING", Value: func(l client.AuthLockout) string {
		if !l.Locked {
			return "-"
		}
		return strconv.FormatInt(l.RemainingSeconds, 10) + "s"
	}},
	{Header: "FAILURES", Value: func(l client.AuthLockout) string { return strconv.FormatInt(l.Failures, 10) }},
}

func nameOf(l client.AuthLockout) string { return l.Scope + "/" + l.Address }

// NewCmdList builds `auth-lockout list`.
func NewCmdList(f *cmdutil.Factory, runF func(*cmdutil.Factory) error) *cobra.Command {
	return cmdutil.NewCmdList(f, "List the addresses locked out or counting failed authentications", `  rlctl auth-lockout list
  rlctl auth-lockout list -o json`, listRun, runF)
}

func listRun(ctx context.Context, f *cmdutil.Factory) error {
	return cmdutil.RunList(ctx, f, func(ctx context.Context, c *client.Client) ([]client.AuthLockout, error) {
		l, err := c.ListAuthLockouts(ctx)
		for _, u := range l.Unlisted {
			fmt.Fprintf(f.IOStreams.ErrOut, "scope %s not listed: %s\n", u.Scope, u.Reason)
		}
		return l.Lockouts, err
	}, Columns, func(l []client.AuthLockout) any { return client.AuthLockoutList{Lockouts: l} }, "auth-lockout", nameOf)
}

// LiftOptions are the inputs of `auth-lockout lift`.
type LiftOptions struct {
	Factory *cmdutil.Factory
	Address string
	Scope   string
	Yes     bool
	DryRun  bool
}

// NewCmdLift builds `auth-lockout lift`.
func NewCmdLift(f *cmdutil.Factory, runF func(*LiftOptions) error) *cobra.Command {
	opts := &LiftOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "lift ADDRESS",
		Short: "Lift an address's lockout on every replica at once (admin role)",
		Long: `Lift the lockout of ADDRESS (an IPv4 address, an IPv6 address or an IPv6 network such
as 2001:db8:1:2::/64; an IPv6 address lifts its network's lockout) and forget its
failures, in every scope or in --scope only. Every rlapi replica and gateway serves the
address again at once; the lift is in the audit log (action lift, resource auth-lockout).
Nothing counted for the address exits 4.`,
		Example: `  rlctl auth-lockout lift 203.0.113.7 --yes
  rlctl auth-lockout lift 2001:db8:1:2::/64 --scope gateway --dry-run`,
		Args: cmdutil.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Address = args[0]
			if opts.Scope != "" && !slices.Contains(scopes, opts.Scope) {
				return cmdutil.FlagErrorf("--scope: must be rlapi or gateway (got %q)", opts.Scope)
			}
			if runF != nil {
				return runF(opts)
			}
			return liftRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Scope, "scope", "", "lift this scope's lockout only: rlapi or gateway (default: both)")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what would be lifted, lifting nothing")
	_ = cmd.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions(scopes, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func liftRun(ctx context.Context, opts *LiftOptions) error {
	f := opts.Factory
	if !opts.DryRun {
		if err := f.Confirm(opts.Yes, "lift the auth lockout of "+opts.Address); err != nil {
			return err
		}
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	lifted, report, err := c.LiftAuthLockout(ctx, opts.Address, client.LiftOptions{Scope: opts.Scope, DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	switch f.Global.Output {
	case printer.JSON, printer.YAML:
		if report != nil {
			return printer.Document(f.IOStreams, f.Global.Output, report, nil)
		}
		return printer.Document(f.IOStreams, f.Global.Output, map[string]any{"lifted": lifted}, nil)
	}
	verb := "lifted"
	if opts.DryRun {
		verb = "would be lifted"
	}
	for _, l := range lifted {
		what := fmt.Sprintf("%d failures", l.Failures)
		if l.Locked {
			what = fmt.Sprintf("locked, %ds left", l.RemainingSeconds)
		}
		if f.Global.Output == printer.Name {
			fmt.Fprintf(f.IOStreams.Out, "auth-lockout/%s\n", nameOf(l))
			continue
		}
		fmt.Fprintf(f.IOStreams.Out, "auth-lockout/%s %s (%s)\n", nameOf(l), verb, what)
	}
	return nil
}
