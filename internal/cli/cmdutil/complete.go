package cmdutil

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/pkg/client"
)

// completionTimeout keeps a slow or absent server from freezing the shell.
const completionTimeout = 2 * time.Second

// Candidates asks the server for the completions of toComplete.
type Candidates func(ctx context.Context, c *client.Client, toComplete string) ([]string, error)

// CompleteArg completes a command's one argument from the server: the
// first argument only, never a file.
func CompleteArg(f *Factory, candidates Candidates) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return CompleteFromServer(f, toComplete, cobra.ShellCompDirectiveNoFileComp, candidates)
	}
}

// CompleteFromServer answers a completion with what candidates finds on
// the server within completionTimeout, and directive; when the server
// cannot be asked, with nothing and an error directive.
func CompleteFromServer(f *Factory, toComplete string, directive cobra.ShellCompDirective, candidates Candidates) ([]string, cobra.ShellCompDirective) {
	c, err := f.Client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	out, err := candidates(ctx, c, toComplete)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	return out, directive
}
