package dash

import (
	"strings"
	"unicode"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// Column describes one table column. Widths are decided from the table's
// width, never from the data, so a list of 100,000 rows costs nothing to
// lay out: every column gets Min, and what is left is shared by Weight up to
// Max.
type Column struct {
	Title  string
	Min    int
	Max    int // 0: no maximum
	Weight int // share of the spare width; 0 keeps Min
	Right  bool
}

const (
	gutter   = 2 // "> " marks the cursor row, so it shows without colour
	ellipsis = "…"
	// Columns are two cells apart, one on narrow terminals.
	wideGap      = 2
	narrowGap    = 1
	narrowBefore = 100
)

// Table is a virtualized table: it holds the number of rows and a function
// that renders one, and renders only the rows that fit its height. The
// cursor and the scroll offset are kept in range of the row count.
type Table struct {
	cols   []Column
	widths []int
	gap    int
	n      int
	row    func(i int) []string
	empty  string

	cursor, offset int
	width, height  int

	keys   *KeyMap
	styles *Styles
}

// NewTable returns an empty table with the given columns.
func NewTable(cols []Column, keys *KeyMap, styles *Styles) Table {
	return Table{cols: cols, keys: keys, styles: styles, row: func(int) []string { return nil }}
}

// Init implements the component contract; the table needs no I/O.
func (t Table) Init() tea.Cmd { return nil }

// SetSize sets the table's size in cells, its header line included.
func (t *Table) SetSize(width, height int) {
	t.width, t.height = max(width, 0), max(height, 0)
	t.gap = wideGap
	if t.width < narrowBefore {
		t.gap = narrowGap
	}
	t.widths = layoutColumns(t.cols, t.width-gutter, t.gap)
	t.clamp()
}

// SetRows replaces the rows. The cursor keeps its index, clamped to the new
// count; callers that want to follow an item move it with SetCursor.
func (t *Table) SetRows(n int, row func(i int) []string) {
	t.n, t.row = n, row
	t.clamp()
}

// SetEmpty sets what the table says when it has no rows.
func (t *Table) SetEmpty(msg string) { t.empty = msg }

// Len is the number of rows.
func (t Table) Len() int { return t.n }

// Cursor is the selected row's index, or -1 without rows.
func (t Table) Cursor() int {
	if t.n == 0 {
		return -1
	}
	return t.cursor
}

// SetCursor selects row i (clamped) and scrolls it into view.
func (t *Table) SetCursor(i int) {
	t.cursor = i
	t.clamp()
}

// Offset is the index of the first visible row.
func (t Table) Offset() int { return t.offset }

// visible is how many rows fit below the header.
func (t Table) visible() int { return max(t.height-1, 0) }

func (t *Table) clamp() {
	t.cursor = min(max(t.cursor, 0), max(t.n-1, 0))
	v := t.visible()
	if v == 0 {
		t.offset = t.cursor
		return
	}
	if t.cursor < t.offset {
		t.offset = t.cursor
	}
	if t.cursor >= t.offset+v {
		t.offset = t.cursor - v + 1
	}
	// No empty space below the last row while there are rows above.
	t.offset = min(t.offset, max(t.n-v, 0))
	t.offset = max(t.offset, 0)
}

// Update moves the cursor on navigation keys.
func (t Table) Update(msg tea.Msg) (Table, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return t, nil
	}
	page := max(t.visible(), 1)
	switch {
	case key.Matches(k, t.keys.Up):
		t.cursor--
	case key.Matches(k, t.keys.Down):
		t.cursor++
	case key.Matches(k, t.keys.PageUp):
		t.cursor -= page
	case key.Matches(k, t.keys.PageDown):
		t.cursor += page
	case key.Matches(k, t.keys.Top):
		t.cursor = 0
	case key.Matches(k, t.keys.Bottom):
		t.cursor = t.n - 1
	default:
		return t, nil
	}
	t.clamp()
	return t, nil
}

// View renders the header and the visible rows, each line at most the
// table's width.
func (t Table) View() string {
	if t.height == 0 || t.width <= gutter {
		return ""
	}
	lines := make([]string, 0, t.height)
	titles := make([]string, len(t.cols))
	for i, c := range t.cols {
		titles[i] = c.Title
	}
	lines = append(lines, t.styles.TableHeader.Render(t.line("  ", titles)))
	if t.n == 0 {
		lines = append(lines, t.styles.Dim.Render(truncate("  "+t.empty, t.width)))
	}
	end := min(t.offset+t.visible(), t.n)
	for i := t.offset; i < end; i++ {
		if i == t.cursor {
			lines = append(lines, t.styles.Cursor.Render(t.line("> ", t.row(i))))
			continue
		}
		lines = append(lines, t.line("  ", t.row(i)))
	}
	return strings.Join(lines, "\n")
}

// line lays out one row's cells after the gutter mark, trailing blanks
// trimmed.
func (t Table) line(mark string, cells []string) string {
	var b strings.Builder
	b.WriteString(mark)
	for i, w := range t.widths {
		if w == 0 {
			continue
		}
		if i > 0 {
			b.WriteString(strings.Repeat(" ", t.gap))
		}
		var cell string
		if i < len(cells) {
			cell = cells[i]
		}
		b.WriteString(pad(truncate(clean(cell), w), w, t.cols[i].Right))
	}
	return strings.TrimRight(b.String(), " ")
}

// layoutColumns gives each column its width for a total of width cells.
// When the minimums do not fit, the widest columns shrink (down to a floor
// of a few cells); when even that does not fit, columns are hidden (width
// 0) from the last one backwards.
func layoutColumns(cols []Column, width, gap int) []int {
	widths := make([]int, len(cols))
	need := func(n int, w func(Column) int) int {
		total := gap * max(n-1, 0)
		for _, c := range cols[:n] {
			total += w(c)
		}
		return total
	}
	minOf := func(c Column) int { return c.Min }
	floorOf := func(c Column) int { return min(c.Min, 4) }

	shown := len(cols)
	for shown > 0 && need(shown, floorOf) > width {
		shown--
	}
	if shown == 0 {
		return widths
	}
	for i := range shown {
		widths[i] = cols[i].Min
	}
	if over := need(shown, minOf) - width; over > 0 {
		for ; over > 0; over-- {
			widest := 0
			for i := range shown {
				if widths[i]-floorOf(cols[i]) > widths[widest]-floorOf(cols[widest]) {
					widest = i
				}
			}
			widths[widest]--
		}
		return widths
	}

	// Share the spare width by weight, capped at Max; repeat while a
	// capped column leaves some over.
	spare := width - need(shown, minOf)
	for spare > 0 {
		open := 0
		for i := range shown {
			if c := cols[i]; c.Weight > 0 && (c.Max == 0 || widths[i] < c.Max) {
				open += c.Weight
			}
		}
		if open == 0 {
			break
		}
		given := 0
		for i := range shown {
			c := cols[i]
			if c.Weight == 0 || (c.Max > 0 && widths[i] >= c.Max) {
				continue
			}
			add := max(spare*c.Weight/open, 1)
			if c.Max > 0 {
				add = min(add, c.Max-widths[i])
			}
			add = min(add, spare-given)
			widths[i] += add
			given += add
		}
		if given == 0 {
			break
		}
		spare -= given
	}
	return widths
}

// truncate cuts s to at most w cells, ending in an ellipsis when cut.
func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, ellipsis)
}

// pad fills s with blanks to w cells.
func pad(s string, w int, right bool) string {
	n := w - ansi.StringWidth(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}

// clean keeps a cell on one line and harmless: server data may hold
// newlines, tabs or terminal escape sequences, which must not reach the
// terminal.
func clean(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
