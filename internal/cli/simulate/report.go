package simulate

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Report is what a simulation found: what -o json prints (docs/algorithms.md,
// "rlctl simulate", documents the shape).
type Report struct {
	Trace TraceInfo `json:"trace"`
	// Bucket is the width of Buckets (a Go duration: "1s", "100ms").
	Bucket        string      `json:"bucket"`
	BucketSeconds float64     `json:"bucket_seconds"`
	Runs          []RunReport `json:"runs"`
}

// TraceInfo describes the trace replayed.
type TraceInfo struct {
	File  string    `json:"file"`
	Calls int64     `json:"calls"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}

// Totals count calls and their outcomes.
type Totals struct {
	Calls   int64 `json:"calls"`
	Allowed int64 `json:"allowed"`
	Denied  int64 `json:"denied"`
	// DenialRate is Denied / Calls (0 without calls).
	DenialRate float64 `json:"denial_rate"`
	// FirstDenial is the time of the first denied call, null when none.
	FirstDenial *time.Time `json:"first_denial"`
}

func totals(t tally) Totals {
	out := Totals{Calls: t.calls, Allowed: t.allowed, Denied: t.denied}
	if t.calls > 0 {
		out.DenialRate = float64(t.denied) / float64(t.calls)
	}
	if !t.firstDenial.IsZero() {
		fd := t.firstDenial
		out.FirstDenial = &fd
	}
	return out
}

// RunReport is one replay of the trace: the definitions as the file has
// them (Name is their algorithm, or "mixed"), or all switched to the
// algorithm Name. Its totals count the calls' outcomes.
type RunReport struct {
	Name string `json:"name"`
	Totals
	Definitions []DefinitionReport `json:"definitions"`
	Buckets     []BucketReport     `json:"buckets"`
}

// DefinitionReport is one definition in one run. Calls are the calls it
// gated; Denied those it had no room for (a shadow definition's: those it
// would have denied), Allowed those it had room for.
type DefinitionReport struct {
	ID               string `json:"id"`
	Algorithm        string `json:"algorithm"`
	Mode             string `json:"mode"`
	WindowSeconds    int    `json:"window_seconds"`
	MaxRequests      *int   `json:"max_requests,omitempty"`
	UserMaxRequests  *int   `json:"user_max_requests,omitempty"`
	AgentMaxRequests *int   `json:"agent_max_requests,omitempty"`
	Burst            *int   `json:"burst,omitempty"`
	UserBurst        *int   `json:"user_burst,omitempty"`
	AgentBurst       *int   `json:"agent_burst,omitempty"`
	Totals
}

// BucketReport is one time bucket of a run: the calls made from Start
// for the report's Bucket, by outcome.
type BucketReport struct {
	Start   time.Time `json:"start"`
	Allowed int64     `json:"allowed"`
	Denied  int64     `json:"denied"`
}

// report turns a finished replay into its Report.
func (r *replay) report(file string) Report {
	// Every run saw the same timestamps: their buckets are alike.
	_, origin, width := r.runs[0].hist.display()
	rep := Report{
		Trace:  TraceInfo{File: file, Calls: r.rows, First: r.first, Last: r.last},
		Bucket: width.String(), BucketSeconds: width.Seconds(),
	}
	for _, run := range r.runs {
		rr := RunReport{Name: run.spec.name, Totals: totals(run.total), Definitions: []DefinitionReport{}}
		for _, d := range run.spec.defs {
			mode := d.Mode
			if mode == "" {
				mode = ratelimit.ModeEnforce
			}
			rr.Definitions = append(rr.Definitions, DefinitionReport{
				ID: d.ID, Algorithm: d.AlgorithmOrDefault(), Mode: mode, WindowSeconds: d.WindowSeconds,
				MaxRequests: d.MaxRequests, UserMaxRequests: d.UserMaxRequests, AgentMaxRequests: d.AgentMaxRequests,
				Burst: d.Burst, UserBurst: d.UserBurst, AgentBurst: d.AgentBurst,
				Totals: totals(*run.defs[d.ID]),
			})
		}
		cells, _, _ := run.hist.display()
		rr.Buckets = make([]BucketReport, len(cells[0]))
		for j, c := range cells[0] {
			rr.Buckets[j] = BucketReport{Start: time.Unix(0, origin+int64(j)*int64(width)).UTC(), Allowed: c.allowed, Denied: c.denied}
		}
		rep.Runs = append(rep.Runs, rr)
	}
	return rep
}

// tableRow is one line of the totals table.
type tableRow struct {
	run, definition, algorithm, limit string
	Totals
}

// limitText is a definition's limits with their window and bursts:
// "3 per 10s", "user=60 agent=30 per 60s burst user=90".
func limitText(d DefinitionReport) string {
	s := cmdutil.LimitText(ratelimit.Definition{MaxRequests: d.MaxRequests, UserMaxRequests: d.UserMaxRequests,
		AgentMaxRequests: d.AgentMaxRequests}) + " per " + (time.Duration(d.WindowSeconds) * time.Second).String()
	b := cmdutil.LimitText(ratelimit.Definition{MaxRequests: d.Burst, UserMaxRequests: d.UserBurst, AgentMaxRequests: d.AgentBurst})
	if b != "-" {
		s += " burst " + b
	}
	return s
}

// offset words t as the time since the trace's first call: "+9.95s".
func offset(first time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return "+" + t.Sub(first).Round(time.Millisecond).String()
}

// writeTable prints the totals: one line per run for all its calls, then
// one per definition.
func writeTable(io *iostreams.IOStreams, rep Report) error {
	var rows []tableRow
	for _, run := range rep.Runs {
		rows = append(rows, tableRow{run: run.Name, definition: "(all calls)", algorithm: "-", limit: "-", Totals: run.Totals})
		for _, d := range run.Definitions {
			def := d.ID
			if d.Mode == ratelimit.ModeShadow {
				def += " (shadow)"
			}
			rows = append(rows, tableRow{run: run.Name, definition: def, algorithm: d.Algorithm, limit: limitText(d), Totals: d.Totals})
		}
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	first := rep.Trace.First
	cols := []printer.Column[tableRow]{
		{Header: "RUN", Value: func(r tableRow) string { return r.run }},
		{Header: "DEFINITION", Value: func(r tableRow) string { return r.definition }},
		{Header: "ALGORITHM", Value: func(r tableRow) string { return r.algorithm }},
		{Header: "LIMIT", Value: func(r tableRow) string { return r.limit }},
		{Header: "CALLS", Value: func(r tableRow) string { return n(r.Calls) }},
		{Header: "ALLOWED", Value: func(r tableRow) string { return n(r.Allowed) }},
		{Header: "DENIED", Value: func(r tableRow) string { return n(r.Denied) }},
		{Header: "DENIED%", Value: func(r tableRow) string { return fmt.Sprintf("%.1f%%", 100*r.DenialRate) }},
		{Header: "FIRST DENIAL", Value: func(r tableRow) string { return offset(first, r.FirstDenial) }},
	}
	return printer.List(io, printer.Table, rows, cols, nil, "", nil)
}

// Chart glyphs: one cell of allowed calls, one of denied calls.
const (
	glyphAllowed = "█"
	glyphDenied  = "░"
)

// bucketLabel words a bucket's start for the chart, as precisely as the
// width needs.
func bucketLabel(t time.Time, width time.Duration, multiDay bool) string {
	switch {
	case width >= day:
		return t.Format("2006-01-02")
	case width%time.Second != 0:
		if multiDay {
			return t.Format("01-02 15:04:05.000")
		}
		return t.Format("15:04:05.000")
	case multiDay:
		return t.Format("01-02 15:04:05")
	default:
		return t.Format("15:04:05")
	}
}

// writeChart prints allowed against denied calls per bucket: a line per
// bucket, a column per run, each a bar of allowed (█) then denied (░)
// calls and the two counts.
func writeChart(io *iostreams.IOStreams, rep Report) error {
	if len(rep.Runs) == 0 || len(rep.Runs[0].Buckets) == 0 {
		return nil
	}
	allowedStyle, deniedStyle := lipgloss.NewStyle(), lipgloss.NewStyle()
	if io.ColorEnabled() {
		allowedStyle = allowedStyle.Foreground(lipgloss.Color("2"))
		deniedStyle = deniedStyle.Foreground(lipgloss.Color("1"))
	}
	width, _ := time.ParseDuration(rep.Bucket)
	multiDay := rep.Trace.Last.Sub(rep.Trace.First) >= day ||
		rep.Trace.First.YearDay() != rep.Trace.Last.YearDay()
	var maxCalls int64
	countW := 1
	for _, run := range rep.Runs {
		for _, b := range run.Buckets {
			maxCalls = max(maxCalls, b.Allowed+b.Denied)
			countW = max(countW, len(counts(b)))
		}
	}
	labelW := len(bucketLabel(rep.Runs[0].Buckets[0].Start, width, multiDay))
	term := io.TerminalWidth()
	if term <= 0 {
		term = 100
	}
	nRuns := len(rep.Runs)
	barW := (term - labelW - nRuns*(countW+3)) / nRuns
	barW = min(max(barW, 5), 40, int(max(maxCalls, 1)))         // a cell per call when they fit
	unit := max(int64(1), (maxCalls+int64(barW)-1)/int64(barW)) // calls per cell
	colW := barW + 1 + countW
	for _, run := range rep.Runs {
		colW = max(colW, len(run.Name))
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\nCalls per %s (UTC), from %s: %s allowed, %s denied", rep.Bucket,
		rep.Trace.First.Format(time.RFC3339Nano), allowedStyle.Render(glyphAllowed), deniedStyle.Render(glyphDenied))
	if unit > 1 {
		fmt.Fprintf(&b, ", each cell %d calls", unit)
	}
	b.WriteString("\n\n")
	b.WriteString(strings.Repeat(" ", labelW))
	for _, run := range rep.Runs {
		b.WriteString("  " + run.Name + strings.Repeat(" ", colW-len(run.Name)))
	}
	b.WriteString("\n")
	for i := range rep.Runs[0].Buckets {
		b.WriteString(bucketLabel(rep.Runs[0].Buckets[i].Start, width, multiDay))
		for _, run := range rep.Runs {
			bk := run.Buckets[i]
			a := int((bk.Allowed + unit - 1) / unit)
			d := int((bk.Denied + unit - 1) / unit)
			if a+d > barW { // rounding up both: give the extra cell back
				if a > d {
					a = barW - d
				} else {
					d = barW - a
				}
			}
			b.WriteString("  ")
			if a > 0 {
				b.WriteString(allowedStyle.Render(strings.Repeat(glyphAllowed, a)))
			}
			if d > 0 {
				b.WriteString(deniedStyle.Render(strings.Repeat(glyphDenied, d)))
			}
			c := counts(bk)
			b.WriteString(strings.Repeat(" ", colW-a-d-len(c)) + c)
		}
		b.WriteString("\n")
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.Out.Write([]byte(strings.Join(lines, "\n")))
	return err
}

// counts words a bucket's outcomes: "allowed/denied", "-" when empty.
func counts(b BucketReport) string {
	if b.Allowed+b.Denied == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", b.Allowed, b.Denied)
}
