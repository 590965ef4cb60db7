// Package audit holds `rlctl audit list`: who changed what, newest first,
// or followed as it happens.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// Limits of --limit (the server's) and the default page.
const (
	defaultLimit = 100
	maxLimit     = 10000
)

// resourceTypes are what --resource completes to.
var resourceTypes = []string{"definition", "membership", "admin", "token"}

// Columns of an audit table.
var Columns = []printer.Column[rl.AuditEntry]{
	{Header: "TIME", Value: func(e rl.AuditEntry) string { return e.Time.UTC().Format(time.RFC3339) }},
	{Header: "ACTOR", Value: func(e rl.AuditEntry) string { return e.Actor }},
	{Header: "ACTION", Value: func(e rl.AuditEntry) string { return e.Action }},
	{Header: "RESOURCE", Value: resourceOf},
	{Header: "ID", Value: func(e rl.AuditEntry) string { return strconv.FormatInt(e.ID, 10) }},
	{Header: "REQUEST-ID", Wide: true, Value: func(e rl.AuditEntry) string { return e.RequestID }},
	{Header: "CHANGES", Wide: true, Value: ChangesText},
}

func resourceOf(e rl.AuditEntry) string { return e.ResourceType + "/" + e.ResourceID }

func idOf(e rl.AuditEntry) string { return strconv.FormatInt(e.ID, 10) }

// ChangesText renders what an entry changed, field by field.
func ChangesText(e rl.AuditEntry) string {
	return cmdutil.FormatChanges(cmdutil.Changes(raw(e.Before), raw(e.After)))
}

// raw turns an absent or null JSON value into a nil interface, which
// cmdutil.Changes reads as "did not exist".
func raw(m json.RawMessage) any {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return m
}

// NewCmdAudit builds `rlctl audit`. Run without a command it is audit
// list, flags and all, so the spellings of following the log all work:
// audit list --follow, audit --follow (as the changelog once wrote it) and
// audit follow (as events follow is spelled).
func NewCmdAudit(f *cmdutil.Factory) *cobra.Command {
	cmd := newCmdList(f, nil, "audit", false)
	cmd.Short = "Read the audit log: every change, who made it and when"
	cmd.Long += "\n\nrlctl audit with no command is rlctl audit list; rlctl audit follow is\nrlctl audit list --follow."
	cmd.Aliases = nil
	cmd.GroupID = "admin"
	cmd.Example = `  rlctl audit --since 1h
  rlctl audit --follow
  rlctl audit follow --actor ci-deploy`
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return cmdutil.UnknownCommandError(cmd, args[0])
		}
		return nil
	}
	cmd.AddCommand(NewCmdList(f, nil), NewCmdFollow(f, nil))
	return cmd
}

// NewCmdFollow builds `audit follow`: audit list --follow.
func NewCmdFollow(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	return newCmdList(f, runF, "follow", true)
}

// ListOptions are the inputs of `audit list`.
type ListOptions struct {
	Factory  *cmdutil.Factory
	Filter   client.AuditFilter
	Follow   bool
	Interval time.Duration
}

// NewCmdList builds `audit list`.
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	return newCmdList(f, runF, "list", false)
}

// newCmdList builds audit list under the name use; follow makes it audit
// follow, which always follows and so has no --follow.
func newCmdList(f *cmdutil.Factory, runF func(*ListOptions) error, use string, follow bool) *cobra.Command {
	opts := &ListOptions{Factory: f, Follow: follow}
	var since string
	cmd := &cobra.Command{
		Use:     use,
		Aliases: []string{"ls"},
		Short:   "List audit entries, newest first, or follow new ones",
		Long: `List audit entries, newest first. -o wide adds the request id and the fields each
change touched.

With --follow, the entries that match are printed oldest first, then new ones as
they are written (checked every --interval) until Ctrl-C. With -o json, --follow
prints one JSON object per line (JSON lines).`,
		Example: `  rlctl audit list --since 1h
  rlctl audit list --resource definition/caller:group:developers:60 -o wide
  rlctl audit list --actor ci-deploy --limit 20
  rlctl audit list --follow -o json | jq .`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if since != "" {
				t, err := ParseSince(since, f.Now())
				if err != nil {
					return cmdutil.FlagErrorf("--since: %v", err)
				}
				opts.Filter.Since = t
			}
			if opts.Filter.Limit < 1 || opts.Filter.Limit > maxLimit {
				return cmdutil.FlagErrorf("--limit: must be between 1 and %d (got %d)", maxLimit, opts.Filter.Limit)
			}
			if opts.Interval < 100*time.Millisecond {
				return cmdutil.FlagErrorf("--interval: must be at least 100ms (got %s)", opts.Interval)
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Follow {
				return followRun(cmd.Context(), opts)
			}
			return listRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&since, "since", "", "only entries from this time on: a duration back from now (1h, 7d) or an RFC 3339 time")
	fl.StringVar(&opts.Filter.Resource, "resource", "", "only this resource type (definition) or resource (definition/<id>)")
	fl.StringVar(&opts.Filter.Actor, "actor", "", "only changes made by this actor (a token name)")
	fl.IntVar(&opts.Filter.Limit, "limit", defaultLimit, "at most this many entries (with --follow: of the existing ones)")
	if follow {
		cmd.Aliases = nil
		cmd.Short = "Print audit entries as they are written (audit list --follow)"
		cmd.Long = `Print the entries that match oldest first, then new ones as they are written
(checked every --interval) until Ctrl-C: audit list --follow. With -o json, one
JSON object per line (JSON lines).`
		cmd.Example = `  rlctl audit follow
  rlctl audit follow --resource definition -o json | jq .`
	} else {
		fl.BoolVarP(&opts.Follow, "follow", "f", false, "keep printing new entries until interrupted (also: audit follow)")
	}
	cmdutil.DurationVar(fl, &opts.Interval, "interval", 2*time.Second, "with --follow, how often to check for new entries")
	_ = cmd.RegisterFlagCompletionFunc("resource", cobra.FixedCompletions(resourceTypes, cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace))
	_ = cmd.RegisterFlagCompletionFunc("since", cobra.FixedCompletions([]string{"15m", "1h", "24h", "7d"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// ParseSince reads --since: a duration back from now (cmdutil.ParseDuration:
// 1h, 7d) or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := cmdutil.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want a duration such as 1h or 7d, or an RFC 3339 time such as 2026-01-02T15:04:05Z (got %q)", s)
	}
	return now.Add(-d), nil
}

func listRun(ctx context.Context, opts *ListOptions) error {
	f := opts.Factory
	c, err := f.Client()
	if err != nil {
		return err
	}
	page, err := c.ListAudit(ctx, opts.Filter)
	if err != nil {
		return err
	}
	if page.Entries == nil {
		page.Entries = []rl.AuditEntry{}
	}
	format := f.Global.Output
	if err := printer.List(f.IOStreams, format, page.Entries, Columns, page, "audit", idOf); err != nil {
		return err
	}
	if page.NextCursor != "" && f.IOStreams.IsStdoutTTY() && (format == printer.Table || format == printer.Wide) {
		fmt.Fprintf(f.IOStreams.ErrOut, "showing the %d newest entries; narrow with --since, --resource, --actor or raise --limit\n", len(page.Entries))
	}
	return nil
}

// followRun prints the matching entries oldest first, then polls for newer
// ones until ctx ends; an interrupt is a normal end, not an error.
func followRun(ctx context.Context, opts *ListOptions) error {
	f := opts.Factory
	c, err := f.Client()
	if err != nil {
		return err
	}
	out := newStream(f)
	page, err := c.ListAudit(ctx, opts.Filter)
	if err != nil {
		return cmdutil.EndOf(ctx, err)
	}
	initial := page.Entries
	slices.Reverse(initial)
	var lastID int64
	if err := out.write(initial); err != nil {
		return err
	}
	if n := len(initial); n > 0 {
		lastID = initial[n-1].ID
	}
	next := opts.Filter
	next.Cursor = ""
	fetch := func(ctx context.Context, after int64, limit int) ([]rl.AuditEntry, error) {
		next.After, next.Limit = after, limit
		page, err := c.ListAudit(ctx, next)
		return page.Entries, err
	}
	return cmdutil.Follow(ctx, f.IOStreams.ErrOut, "audit", opts.Interval, lastID, fetch,
		func(r rl.AuditEntry) int64 { return r.ID }, out.write)
}

// stream prints entries as they come: a table whose header and column
// widths are fixed by the first batch, JSON lines, YAML documents, or names.
type stream struct {
	f      *cmdutil.Factory
	cols   []printer.Column[rl.AuditEntry]
	widths []int
}

func newStream(f *cmdutil.Factory) *stream {
	s := &stream{f: f}
	for _, c := range Columns {
		if !c.Wide || f.Global.Output == printer.Wide {
			s.cols = append(s.cols, c)
		}
	}
	return s
}

func (s *stream) write(entries []rl.AuditEntry) error {
	io := s.f.IOStreams
	var b strings.Builder
	streamed, err := printer.AppendStream(&b, s.f.Global.Output, entries, func(e rl.AuditEntry) string { return fmt.Sprintf("audit/%d", e.ID) })
	if err != nil {
		return err
	}
	if !streamed {
		s.table(&b, entries)
	}
	_, err = io.Out.Write([]byte(b.String()))
	return err
}

// table writes rows tab-separated when piped; on a terminal, aligned, with
// the header once and the widths of the first rows (later, wider cells push
// the line rather than re-aligning what is already on the screen).
func (s *stream) table(b *strings.Builder, entries []rl.AuditEntry) {
	rows := make([][]string, len(entries))
	for i, e := range entries {
		row := make([]string, len(s.cols))
		for j, c := range s.cols {
			row[j] = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(c.Value(e))
		}
		rows[i] = row
	}
	if !s.f.IOStreams.IsStdoutTTY() {
		for _, r := range rows {
			b.WriteString(strings.Join(r, "\t"))
			b.WriteByte('\n')
		}
		return
	}
	line := func(cells []string) {
		for i, c := range cells {
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", max(s.widths[i]-len([]rune(c)), 0)+2))
			}
		}
		b.WriteByte('\n')
	}
	if s.widths == nil {
		s.widths = make([]int, len(s.cols))
		headers := make([]string, len(s.cols))
		for i, c := range s.cols {
			headers[i] = c.Header
			s.widths[i] = len(c.Header)
		}
		for _, r := range rows {
			for i, c := range r {
				s.widths[i] = max(s.widths[i], len([]rune(c)))
			}
		}
		// Leave room for actors and resources longer than the first ones.
		for i, c := range s.cols {
			if c.Header == "ACTOR" || c.Header == "ACTION" {
				s.widths[i] = max(s.widths[i], 12)
			}
		}
		line(headers)
	}
	for _, r := range rows {
		line(r)
	}
}
