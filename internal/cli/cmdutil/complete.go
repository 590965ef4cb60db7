package cmdutil

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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

// NoFileCompletion makes every command under root and every flag of theirs
// that has no completion of its own complete nothing instead of file
// names, cobra's default: only the flags marked as files (MarkFlagFilename)
// complete paths. Help topics and commands without arguments then never
// offer the working directory.
func NoFileCompletion(root *cobra.Command) {
	if root.ValidArgsFunction == nil && len(root.ValidArgs) == 0 {
		root.ValidArgsFunction = cobra.NoFileCompletions
	}
	register := func(fl *pflag.Flag) {
		if fl.Value.Type() == "bool" || fl.Annotations[cobra.BashCompFilenameExt] != nil {
			return
		}
		if _, ok := root.GetFlagCompletionFunc(fl.Name); !ok {
			_ = root.RegisterFlagCompletionFunc(fl.Name, cobra.NoFileCompletions)
		}
	}
	root.LocalNonPersistentFlags().VisitAll(register)
	root.PersistentFlags().VisitAll(register)
	for _, c := range root.Commands() {
		NoFileCompletion(c)
	}
}
