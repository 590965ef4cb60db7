package events

import (
	"context"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// FollowOptions are the inputs of `events follow`.
type FollowOptions struct {
	Factory  *cmdutil.Factory
	Filter   client.EventFilter
	Interval time.Duration
}

// NewCmdFollow builds `events follow`.
func NewCmdFollow(f *cmdutil.Factory, runF func(*FollowOptions) error) *cobra.Command {
	opts := &FollowOptions{Factory: f}
	var ff filterFlags
	cmd := &cobra.Command{
		Use:   "follow",
		Short: "Print recorded violations as they are written",
		Long: `Print the newest --limit rows that match, oldest first, then each new row as it
is written (checked every --interval) until Ctrl-C, like audit follow (also
spelled events list --follow).
A row appears once, when its minute, kind, subject and definition are first
recorded; its count may still grow during that minute (events list shows the
current count). With -o json, one JSON object per line (JSON lines).`,
		Example: `  rlctl events follow
  rlctl events follow --severity high
  rlctl events follow --subject user:alice -o json | jq .`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ff.resolve(f, &opts.Filter); err != nil {
				return err
			}
			if err := checkFollow(opts.Filter.Limit, opts.Interval); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return followRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	addFilterFlags(cmd, fl, &ff, &opts.Filter)
	fl.IntVar(&opts.Filter.Limit, "limit", defaultFollowLimit, "how many existing rows to print first (0: none, only new ones)")
	cmdutil.DurationVar(fl, &opts.Interval, "interval", 2*time.Second, "how often to check for new rows")
	return cmd
}

// defaultFollowLimit is how many existing rows following prints first.
const defaultFollowLimit = 20

// checkFollow checks following's --limit and --interval.
func checkFollow(limit int, interval time.Duration) error {
	if limit < 0 || limit > maxLimit {
		return cmdutil.FlagErrorf("--limit: must be between 0 and %d (got %d)", maxLimit, limit)
	}
	if interval < 100*time.Millisecond {
		return cmdutil.FlagErrorf("--interval: must be at least 100ms (got %s)", interval)
	}
	return nil
}

// followRun prints the newest matching rows oldest first, then polls for
// newer ones until ctx ends; an interrupt is a normal end, not an error.
func followRun(ctx context.Context, opts *FollowOptions) error {
	f := opts.Factory
	c, err := f.Client()
	if err != nil {
		return err
	}
	out := newStream(f)
	first := opts.Filter
	first.Limit = max(first.Limit, 1)
	page, err := c.ListEvents(ctx, first)
	if err != nil {
		return cmdutil.EndOf(ctx, err)
	}
	var lastID int64
	if len(page.Events) > 0 {
		lastID = page.Events[0].ID // newest first
	}
	initial := page.Events
	if opts.Filter.Limit == 0 {
		initial = nil
	}
	slices.Reverse(initial)
	if err := out.write(initial); err != nil {
		return err
	}
	next := opts.Filter
	fetch := func(ctx context.Context, after int64, limit int) ([]ratelimit.Event, error) {
		next.After, next.Limit = after, limit
		page, err := c.ListEvents(ctx, next)
		return page.Events, err
	}
	return cmdutil.Follow(ctx, f.IOStreams.ErrOut, "events", opts.Interval, lastID, fetch,
		func(r ratelimit.Event) int64 { return r.ID }, out.write)
}
