package ratelimitcmd

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/client"
)

// CompleteEntityTypes completes --entity-type with the types the --axis
// already given takes (group for caller axes; the target types for
// target), or every type without one.
func CompleteEntityTypes(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	axis, _ := cmd.Flags().GetString("axis")
	types := validate.EntityTypesOn(axis)
	if types == nil {
		types = []string{"group", "mcp_server", "a2a_agent", "mcp_tool", "a2a_skill", "server_group", "route"}
	}
	return types, cobra.ShellCompDirectiveNoFileComp
}

// CompleteDefinitionIDs completes definition ids from the server.
func CompleteDefinitionIDs(f *cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return cmdutil.CompleteArg(f, func(ctx context.Context, c *client.Client, toComplete string) ([]string, error) {
		defs, err := c.ListAllDefinitions(ctx, client.DefinitionFilter{})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, d := range defs {
			if strings.HasPrefix(d.ID, toComplete) {
				out = append(out, d.ID+"\t"+cmdutil.LimitText(d))
			}
		}
		return out, nil
	})
}
