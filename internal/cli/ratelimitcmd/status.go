package ratelimitcmd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// StatusOptions are the inputs of `rate-limit status`.
type StatusOptions struct {
	Factory *cmdutil.Factory
	Query   client.StatusQuery
}

// NewCmdStatus builds `rate-limit status`: which definitions apply to a
// group, a caller, and/or a target.
func NewCmdStatus(f *cmdutil.Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the definitions that apply to a group, a caller or a target",
		Long: `Show the definitions that apply to a group, a caller or a target. For a caller
(--username, --client-id, --team) the definitions for everyone are listed too, and the
MATCHED-BY column says why each caller definition applies: the membership that put the
caller in its group (user:alice, client:bot, team:acme) or everyone.`,
		Example: `  rlctl rate-limit status --identity developers
  rlctl rate-limit status --username alice --entity-type mcp_server --name mcpgw
  rlctl rate-limit status --username alice --team acme-corp`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := opts.Query
			if q.Identity == "" && q.Username == "" && q.ClientID == "" && q.Team == "" && q.Name == "" {
				return cmdutil.FlagErrorf("say whose status: --identity, --username, --client-id, --team, or --entity-type with --name")
			}
			if (q.EntityType == "") != (q.Name == "") {
				return cmdutil.FlagErrorf("--entity-type and --name go together")
			}
			if runF != nil {
				return runF(opts)
			}
			return statusRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Query.Identity, "identity", "", "a group name")
	fl.StringVar(&opts.Query.Username, "username", "", "a human caller; its groups are resolved")
	fl.StringVar(&opts.Query.ClientID, "client-id", "", "an agent caller; its groups are resolved")
	fl.StringVar(&opts.Query.Team, "team", "", "the caller's team; its groups are resolved with the caller's")
	fl.StringVar(&opts.Query.EntityType, "entity-type", "", "target type: mcp_server, a2a_agent, mcp_tool, a2a_skill")
	fl.StringVar(&opts.Query.Name, "name", "", "target name")
	return cmd
}

func statusRun(ctx context.Context, opts *StatusOptions) error {
	f := opts.Factory
	c, err := f.Client()
	if err != nil {
		return err
	}
	res, err := c.Status(ctx, opts.Query)
	if err != nil {
		return err
	}
	return printer.Document(f.IOStreams, f.Global.Output, res, func() error {
		if f.IOStreams.IsStdoutTTY() {
			fmt.Fprintf(f.IOStreams.ErrOut, "groups: %s\n", strings.Join(res.Groups, ", "))
		}
		cols := Columns
		if len(res.MatchedBy) > 0 {
			cols = append(slices.Clone(Columns), printer.Column[ratelimit.Definition]{Header: "MATCHED-BY",
				Value: func(d ratelimit.Definition) string { return cmp.Or(res.MatchedBy[d.ID], "-") }})
		}
		return printer.List(f.IOStreams, f.Global.Output, res.Definitions, cols, res, "definition", idOf)
	})
}
