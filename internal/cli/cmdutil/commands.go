package cmdutil

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/pkg/client"
)

// NewCmdList builds a `list` command (alias ls) that takes neither flags
// nor arguments and calls run, or runF instead when it is given (tests).
func NewCmdList(f *Factory, short, example string, run func(context.Context, *Factory) error, runF func(*Factory) error) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   short,
		Example: example,
		Args:    NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(f)
			}
			return run(cmd.Context(), f)
		},
	}
}

// RunList fetches a whole list from the server and prints it with
// printer.List: a table of cols, kind/name lines, or in JSON and YAML the
// document doc makes of the items (an empty list there is [], not null).
func RunList[T any](ctx context.Context, f *Factory, fetch func(context.Context, *client.Client) ([]T, error),
	cols []printer.Column[T], doc func([]T) any, kind string, name func(T) string) error {
	c, err := f.Client()
	if err != nil {
		return err
	}
	items, err := fetch(ctx, c)
	if err != nil {
		return err
	}
	if items == nil {
		items = []T{}
	}
	return printer.List(f.IOStreams, f.Global.Output, items, cols, doc(items), kind, name)
}

// IDOptions are the inputs of a command acting on one object named by its
// id.
type IDOptions struct {
	Factory *Factory
	ID      string
	Yes     bool
	DryRun  bool
	// Flat is set for the reference's flat commands, which never prompt.
	Flat bool
}

// NewCmdID builds a command acting on one object: its id is given
// positionally (completed by complete) or as --id (described by idUsage),
// not both. RunE calls run, or runF instead when it is given (tests).
// The options it fills are returned for the caller's own flags.
func NewCmdID(f *Factory, use, short, example, idUsage string, complete cobra.CompletionFunc,
	run func(context.Context, *IDOptions) error, runF func(*IDOptions) error) (*cobra.Command, *IDOptions) {
	opts := &IDOptions{Factory: f}
	var flagID string
	cmd := &cobra.Command{
		Use:               use + " [ID]",
		Short:             short,
		Example:           example,
		Args:              MaximumNArgs(1),
		ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := IDArg(args, flagID)
			if err != nil {
				return err
			}
			opts.ID = id
			if runF != nil {
				return runF(opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&flagID, "id", "", idUsage)
	return cmd, opts
}

// DeleteFlags makes cmd, built by NewCmdID, a delete command: alias rm,
// --yes and --dry-run. flat marks the reference's flat spelling, which
// never asks.
func DeleteFlags(cmd *cobra.Command, opts *IDOptions, flat bool) {
	opts.Flat = flat
	cmd.Aliases = []string{"rm"}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show what would be deleted, deleting nothing")
}

// DeleteRun deletes the object of kind that opts name with del (a
// client's Delete method), after asking unless the command is flat, --yes
// or a dry run, and says so: "kind/id deleted".
func DeleteRun(ctx context.Context, opts *IDOptions, kind string,
	del func(*client.Client, context.Context, string, client.WriteOptions) (*client.DryRunReport, error)) error {
	f := opts.Factory
	if !opts.Flat && !opts.DryRun {
		if err := f.Confirm(opts.Yes, fmt.Sprintf("delete %s %s", kind, opts.ID)); err != nil {
			return err
		}
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	if _, err := del(c, ctx, opts.ID, client.WriteOptions{DryRun: opts.DryRun}); err != nil {
		return err
	}
	verb := "deleted"
	if opts.DryRun {
		verb = "would be deleted"
	}
	_, err = fmt.Fprintf(f.IOStreams.Out, "%s/%s %s\n", kind, opts.ID, verb)
	return err
}
