// Package events holds `rlctl events`: the record of violations
// (throttles, quarantine denials, lockouts), listed newest first or
// followed as it is written.
package events

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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

// Columns of an events table.
var Columns = []printer.Column[rl.Event]{
	{Header: "MINUTE", Value: func(e rl.Event) string { return e.Minute.UTC().Format(time.RFC3339) }},
	{Header: "KIND", Value: func(e rl.Event) string { return e.Kind }},
	{Header: "SEVERITY", Value: func(e rl.Event) string { return e.Severity }},
	{Header: "SUBJECT", Value: func(e rl.Event) string {
		if e.MoreSubjects > 0 {
			return fmt.Sprintf("%s (%d more subjects)", e.Subject, e.MoreSubjects)
		}
		return e.Subject
	}},
	{Header: "DEFINITION", Value: func(e rl.Event) string { return dash(e.DefinitionID) }},
	{Header: "COUNT", Value: func(e rl.Event) string { return strconv.FormatInt(e.Count, 10) }},
	{Header: "ID", Value: idOf},
	{Header: "CALLER", Wide: true, Value: func(e rl.Event) string { return dash(e.Caller) }},
	{Header: "CLIENT-IP", Wide: true, Value: func(e rl.Event) string { return dash(e.ClientIP) }},
	{Header: "TARGET", Wide: true, Value: func(e rl.Event) string {
		if e.Target == "" {
			return "-"
		}
		return e.TargetType + ":" + e.Target
	}},
	{Header: "TEAM", Wide: true, Value: func(e rl.Event) string { return dash(e.Team) }},
	{Header: "PATH", Wide: true, Value: func(e rl.Event) string { return dash(e.Path) }},
	{Header: "TIER", Wide: true, Value: func(e rl.Event) string { return dash(e.Tier) }},
	{Header: "LIMIT", Wide: true, Value: func(e rl.Event) string { return strconv.FormatInt(e.Limit, 10) }},
	{Header: "LAST-SEEN", Wide: true, Value: func(e rl.Event) string { return e.LastSeen.UTC().Format(time.RFC3339) }},
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func idOf(e rl.Event) string { return strconv.FormatInt(e.ID, 10) }

// NewCmdEvents builds `rlctl events`.
func NewCmdEvents(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events <command>",
		Short: "Read the record of violations: who was throttled, quarantined or locked out",
		Long: `Read the record of violations. Every throttle, quarantine denial, lockout and
failed-credential lockout is recorded as an event, aggregated into one row per
minute, kind, subject and definition with a count: a flood writes one row a
minute, not one per call. A row's count grows while its minute lasts.`,
		GroupID: "admin",
	}
	cmd.AddCommand(NewCmdList(f, nil), NewCmdFollow(f, nil))
	return cmd
}

// filterFlags are the flags list and follow share.
type filterFlags struct {
	since, until string
}

func addFilterFlags(cmd *cobra.Command, fl *pflag.FlagSet, ff *filterFlags, filter *client.EventFilter) {
	fl.StringVar(&filter.Subject, "subject", "", "only this subject: a caller (user:alice, agent:bot or client:bot, ip:203.0.113.7), a team or route tier (team:acme, route:checkout), a target (mcp_server:weather), an Envoy domain called without an identity (descriptor:edge) or the summary rows past the caps (overflow:subjects)")
	fl.StringVar(&filter.DefinitionID, "definition", "", "only this definition id (caller:group:free:60)")
	fl.StringVar(&filter.Kind, "kind", "", "only this kind: "+strings.Join(rl.EventKinds(), ", "))
	fl.StringVar(&filter.Severity, "severity", "", "only this severity: "+strings.Join(rl.EventSeverities(), ", "))
	fl.StringVar(&ff.since, "since", "", "only minutes from this time on: a duration back from now (15m, 1h, 7d) or an RFC 3339 time")
	fl.StringVar(&ff.until, "until", "", "only minutes before this time: a duration back from now or an RFC 3339 time")
	cmdutil.EnumFlag(cmd, "kind", rl.EventKinds()...)
	cmdutil.EnumFlag(cmd, "severity", rl.EventSeverities()...)
	_ = cmd.RegisterFlagCompletionFunc("since", cobra.FixedCompletions([]string{"15m", "1h", "24h", "7d"}, cobra.ShellCompDirectiveNoFileComp))
}

// resolve checks the filter flags and fills the filter's times.
func (ff *filterFlags) resolve(f *cmdutil.Factory, filter *client.EventFilter) error {
	for _, p := range []struct {
		name, v string
		dst     *time.Time
	}{{"--since", ff.since, &filter.Since}, {"--until", ff.until, &filter.Until}} {
		if p.v == "" {
			continue
		}
		t, err := parseTime(p.v, f.Now())
		if err != nil {
			return cmdutil.FlagErrorf("%s: %v", p.name, err)
		}
		*p.dst = t
	}
	if !filter.Since.IsZero() && !filter.Until.IsZero() && !filter.Until.After(filter.Since) {
		return cmdutil.FlagErrorf("--until: must be after --since")
	}
	return nil
}

// parseTime reads --since and --until: a duration back from now
// (cmdutil.ParseDuration: 1h, 7d) or an RFC 3339 time.
func parseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := cmdutil.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want a duration such as 15m or 7d, or an RFC 3339 time such as 2026-01-02T15:04:05Z (got %q)", s)
	}
	return now.Add(-d), nil
}

// stream prints events as they come: a table whose header and column
// widths are fixed by the first batch, JSON lines, YAML documents, or names.
type stream struct {
	f      *cmdutil.Factory
	cols   []printer.Column[rl.Event]
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

func (s *stream) write(evs []rl.Event) error {
	var b strings.Builder
	streamed, err := printer.AppendStream(&b, s.f.Global.Output, evs, func(e rl.Event) string { return fmt.Sprintf("event/%d", e.ID) })
	if err != nil {
		return err
	}
	if !streamed {
		s.table(&b, evs)
	}
	_, err = s.f.IOStreams.Out.Write([]byte(b.String()))
	return err
}

// table writes rows tab-separated when piped; on a terminal, aligned, with
// the header once and the widths of the first rows plus some room.
func (s *stream) table(b *strings.Builder, evs []rl.Event) {
	clean := strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")
	rows := make([][]string, len(evs))
	for i, e := range evs {
		row := make([]string, len(s.cols))
		for j, c := range s.cols {
			row[j] = clean.Replace(c.Value(e))
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
			if c.Header == "SUBJECT" || c.Header == "DEFINITION" || c.Header == "KIND" {
				s.widths[i] = max(s.widths[i], 20)
			}
		}
		for _, r := range rows {
			for i, c := range r {
				s.widths[i] = max(s.widths[i], len([]rune(c)))
			}
		}
		line(headers)
	}
	for _, r := range rows {
		line(r)
	}
}
