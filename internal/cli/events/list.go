package events

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// ListOptions are the inputs of `events list`.
type ListOptions struct {
	Factory *cmdutil.Factory
	Filter  client.EventFilter
}

// NewCmdList builds `events list`.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	var ff filterFlags
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List recorded violations, newest first",
		Long: `List recorded violations, newest first: one row per minute, kind, subject and
definition, with how many calls it stands for. -o wide adds the latest caller,
client address, target, team, request path, tier, limit and last time seen.
A row of subject overflow:subjects sums up the subjects past the record's
caps for one definition and minute: "N more subjects".`,
		Example: `  rlctl events list --since 15m
  rlctl events list --subject user:alice -o wide
  rlctl events list --kind quarantine_denied --severity high
  rlctl events list --definition caller:group:free:60 -o json | jq '.events[].count'`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ff.resolve(f, &opts.Filter); err != nil {
				return err
			}
			if opts.Filter.Limit < 1 || opts.Filter.Limit > maxLimit {
				return cmdutil.FlagErrorf("--limit: must be between 1 and %d (got %d)", maxLimit, opts.Filter.Limit)
			}
			if runF != nil {
				return runF(opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	addFilterFlags(cmd, fl, &ff, &opts.Filter)
	fl.IntVar(&opts.Filter.Limit, "limit", defaultLimit, "at most this many rows")
	return cmd
}

func listRun(ctx context.Context, opts *ListOptions) error {
	f := opts.Factory
	c, err := f.Client()
	if err != nil {
		return err
	}
	page, err := c.ListEvents(ctx, opts.Filter)
	if err != nil {
		return err
	}
	if page.Events == nil {
		page.Events = []rl.Event{}
	}
	format := f.Global.Output
	if err := printer.List(f.IOStreams, format, page.Events, Columns, page, "event", idOf); err != nil {
		return err
	}
	if page.NextCursor != "" && f.IOStreams.IsStdoutTTY() && (format == printer.Table || format == printer.Wide) {
		fmt.Fprintf(f.IOStreams.ErrOut, "showing the %d newest rows; narrow with --since, --subject, --kind or raise --limit\n", len(page.Events))
	}
	return nil
}
