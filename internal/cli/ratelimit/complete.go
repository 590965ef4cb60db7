package ratelimit

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/pkg/client"
)

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
				out = append(out, d.ID+"\t"+LimitText(d))
			}
		}
		return out, nil
	})
}
