package events

import (
	"context"
	"fmt"
	"time"

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
	// Follow is --follow: events follow, spelled as audit list --follow.
	Follow   bool
	Interval time.Duration
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
caps for one definition and minute: "N more subjects".

With --follow it is events follow: the newest rows that match (--limit, 20 unless
given) oldest first, then each new one as it is written.`,
		Example: `  rlctl events list --since 15m
  rlctl events list --subject user:alice -o wide
  rlctl events list --kind quarantine_denied --severity high
  rlctl events list --definition caller:group:free:60 -o json | jq '.events[].count'
  rlctl events list --follow --severity high`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ff.resolve(f, &opts.Filter); err != nil {
				return err
			}
			if opts.Follow {
				if !cmd.Flags().Changed("limit") {
					opts.Filter.Limit = defaultFollowLimit
				}
				if err := checkFollow(opts.Filter.Limit, opts.Interval); err != nil {
					return err
				}
			} else if opts.Filter.Limit < 1 || opts.Filter.Limit > maxLimit {
				return cmdutil.FlagErrorf("--limit: must be between 1 and %d (got %d)", maxLimit, opts.Filter.Limit)
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Follow {
				return followRun(cmd.Context(), &FollowOptions{Factory: f, Filter: opts.Filter, Interval: opts.Interval})
			}
			return listRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	addFilterFlags(cmd, fl, &ff, &opts.Filter)
	fl.IntVar(&opts.Filter.Limit, "limit", defaultLimit, "at most this many rows (with --follow: existing rows printed first, default 20)")
	fl.BoolVarP(&opts.Follow, "follow", "f", false, "keep printing new rows until interrupted (also: events follow)")
	cmdutil.DurationVar(fl, &opts.Interval, "interval", 2*time.Second, "with --follow, how often to check for new rows")
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
