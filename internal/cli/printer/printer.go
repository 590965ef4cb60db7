// Package printer writes command output in the format the user chose:
// aligned tables with a header on a terminal, tab-separated rows under a
// header line when piped, or stable JSON, YAML (in the same field order)
// or resource names.
package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/rlctl/rlctl/internal/cli/iostreams"
)

// Formats accepted by -o.
const (
	Table = "table"
	Wide  = "wide"
	JSON  = "json"
	YAML  = "yaml"
	Name  = "name"
)

// Formats lists the -o values for help and completion.
var Formats = []string{Table, Wide, JSON, YAML, Name}

// Column is one column of a table: its header, whether only -o wide shows
// it, and how to render a row's cell.
type Column[T any] struct {
	Header string
	Wide   bool
	// Optional columns are shown only when some row has a value in them,
	// so that a table of objects that never use the field reads as it
	// always did.
	Optional bool
	Value    func(T) string
}

// Time renders a time for a table cell: RFC 3339 in UTC, or "-" when
// there is none (nil or zero).
func Time(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// List prints items. doc is what JSON and YAML print (the API's envelope,
// so scripts see the same shape as the API); kind prefixes -o name lines.
func List[T any](io *iostreams.IOStreams, format string, items []T, cols []Column[T], doc any, kind string, id func(T) string) error {
	switch format {
	case JSON:
		return writeJSON(io.Out, doc)
	case YAML:
		return writeYAML(io.Out, doc)
	case Name:
		for _, it := range items {
			fmt.Fprintf(io.Out, "%s/%s\n", kind, id(it))
		}
		return nil
	}
	var shown []Column[T]
	for _, c := range cols {
		if (!c.Wide || format == Wide) && (!c.Optional || anyValue(items, c)) {
			shown = append(shown, c)
		}
	}
	rows := make([][]string, len(items))
	for i, it := range items {
		row := make([]string, len(shown))
		for j, c := range shown {
			row[j] = clean(c.Value(it))
		}
		rows[i] = row
	}
	headers := make([]string, len(shown))
	for i, c := range shown {
		headers[i] = c.Header
	}
	return writeTable(io, headers, rows)
}

// anyValue reports whether c has a value for one of items.
func anyValue[T any](items []T, c Column[T]) bool {
	for _, it := range items {
		if c.Value(it) != "" {
			return true
		}
	}
	return false
}

// Object prints one object: JSON or YAML of doc, or the same table as a
// one-row list.
func Object[T any](io *iostreams.IOStreams, format string, item T, cols []Column[T], kind string, id func(T) string) error {
	switch format {
	case JSON:
		return writeJSON(io.Out, item)
	case YAML:
		return writeYAML(io.Out, item)
	}
	return List(io, format, []T{item}, cols, item, kind, id)
}

// Document prints any value as JSON or YAML; for table formats it calls
// table, which writes its own text.
func Document(io *iostreams.IOStreams, format string, doc any, table func() error) error {
	switch format {
	case JSON:
		return writeJSON(io.Out, doc)
	case YAML:
		return writeYAML(io.Out, doc)
	}
	return table()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// clean keeps a cell on one line and free of tabs, which would break both
// alignment and tab-separated parsing.
func clean(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}

// writeTable aligns the table under a header on a terminal. Piped, it
// writes tab-separated lines, still under one header line so that a
// reader of `| less` or a file knows the columns (scripts that want no
// header have -o json, or skip the first line).
func writeTable(io *iostreams.IOStreams, headers []string, rows [][]string) error {
	if !io.IsStdoutTTY() {
		if _, err := fmt.Fprintln(io.Out, strings.Join(headers, "\t")); err != nil {
			return err
		}
		for _, r := range rows {
			if _, err := fmt.Fprintln(io.Out, strings.Join(r, "\t")); err != nil {
				return err
			}
		}
		return nil
	}
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = lipgloss.Width(h)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], lipgloss.Width(c))
		}
	}
	header := lipgloss.NewStyle()
	if io.ColorEnabled() {
		header = header.Bold(true).Foreground(lipgloss.Color("12"))
	}
	var b strings.Builder
	line := func(cells []string, style *lipgloss.Style) {
		for i, c := range cells {
			pad := widths[i] - lipgloss.Width(c)
			if style != nil {
				c = style.Render(c)
			}
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", pad+2))
			}
		}
		b.WriteByte('\n')
	}
	line(headers, &header)
	for _, r := range rows {
		line(r, nil)
	}
	_, err := io.Out.Write([]byte(b.String()))
	return err
}
