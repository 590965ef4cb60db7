package ratelimit

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/pkg/client"
)

// completionTimeout keeps a slow or absent server from freezing the shell.
const completionTimeout = 2 * time.Second

// CompleteDefinitionIDs completes definition ids from the server.
func CompleteDefinitionIDs(f *cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := f.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		defs, err := c.ListAllDefinitions(ctx, client.DefinitionFilter{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var out []string
		for _, d := range defs {
			if strings.HasPrefix(d.ID, toComplete) {
				out = append(out, d.ID+"\t"+LimitText(d))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
