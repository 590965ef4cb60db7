package ratelimitcmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
)

// IDOptions are the inputs of the commands that act on one definition.
type IDOptions = cmdutil.IDOptions

// idCommand builds a command taking one definition id, positionally or as --id.
func idCommand(f *cmdutil.Factory, use, short, example string, run func(context.Context, *IDOptions) error, runF func(*IDOptions) error) (*cobra.Command, *IDOptions) {
	cmd, opts := cmdutil.NewCmdID(f, use, short, example, "definition id, <axis>:<entity_type>:<name>:<window_seconds>", CompleteDefinitionIDs(f), run, runF)
	_ = cmd.RegisterFlagCompletionFunc("id", CompleteDefinitionIDs(f))
	return cmd, opts
}

// NewCmdGet builds `rate-limit get`.
func NewCmdGet(f *cmdutil.Factory, runF func(*IDOptions) error) *cobra.Command {
	cmd, _ := idCommand(f, "get", "Show one rate-limit definition",
		"  rlctl rate-limit get caller:group:developers:60 -o yaml", getRun, runF)
	return cmd
}

func getRun(ctx context.Context, opts *IDOptions) error {
	c, err := opts.Factory.Client()
	if err != nil {
		return err
	}
	d, err := c.GetDefinition(ctx, opts.ID)
	if err != nil {
		return err
	}
	return printer.Object(opts.Factory.IOStreams, opts.Factory.Global.Output, d, Columns, "definition", idOf)
}
