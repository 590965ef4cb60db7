package dash

import (
	"fmt"
	"io"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// TestTableRendersOnlyVisibleRows: a table of a million rows asks for the
// rows it shows and no others.
func TestTableRendersOnlyVisibleRows(t *testing.T) {
	t.Parallel()
	keys, styles := DefaultKeyMap(), NewStyles(io.Discard, false)
	tb := NewTable([]Column{{Title: "N", Min: 8, Weight: 1}}, &keys, &styles)
	tb.SetSize(40, 11) // header and ten rows
	var asked []int
	tb.SetRows(1_000_000, func(i int) []string {
		asked = append(asked, i)
		return []string{fmt.Sprint("row ", i)}
	})
	tb, _ = tb.Update(tea.KeyMsg{Type: tea.KeyEnd})
	view := tb.View()
	if len(asked) != 10 || asked[0] != 999_990 || asked[9] != 999_999 {
		t.Errorf("rendered rows %v, want 999990..999999", asked)
	}
	if !strings.Contains(view, "> row 999999") {
		t.Errorf("cursor row not marked:\n%s", view)
	}
}

func TestTableNavigation(t *testing.T) {
	t.Parallel()
	km, styles := DefaultKeyMap(), NewStyles(io.Discard, false)
	tests := []struct {
		keys       string
		wantCursor int
		wantOffset int
	}{
		{"", 0, 0},
		{"j", 1, 0},
		{"k", 0, 0},
		{"jjjjjj", 6, 2}, // five rows visible: the cursor pulls the view down
		{"<pgdown>", 5, 1},
		{"<pgdown><pgdown><pgdown><pgdown><pgdown>", 19, 15},
		{"G", 19, 15},
		{"Gg", 0, 0},
		{"G<pgup>", 14, 14},
	}
	for _, tt := range tests {
		tb := NewTable([]Column{{Title: "N", Min: 4}}, &km, &styles)
		tb.SetSize(20, 6)
		tb.SetRows(20, func(i int) []string { return []string{fmt.Sprint(i)} })
		for _, k := range keys(tt.keys) {
			tb, _ = tb.Update(k)
		}
		if tb.Cursor() != tt.wantCursor || tb.Offset() != tt.wantOffset {
			t.Errorf("%q: cursor %d offset %d, want %d %d", tt.keys, tb.Cursor(), tb.Offset(), tt.wantCursor, tt.wantOffset)
		}
	}
}

// TestTableShrinkKeepsCursorInRange: fewer rows or a smaller window never
// leave the cursor or the offset out of range.
func TestTableShrinkKeepsCursorInRange(t *testing.T) {
	t.Parallel()
	keys, styles := DefaultKeyMap(), NewStyles(io.Discard, false)
	tb := NewTable([]Column{{Title: "N", Min: 4}}, &keys, &styles)
	tb.SetSize(20, 10)
	tb.SetRows(100, func(i int) []string { return []string{fmt.Sprint(i)} })
	tb.SetCursor(80)
	tb.SetRows(3, func(i int) []string { return []string{fmt.Sprint(i)} })
	if tb.Cursor() != 2 || tb.Offset() != 0 {
		t.Errorf("cursor %d offset %d after shrinking to 3 rows", tb.Cursor(), tb.Offset())
	}
	tb.SetRows(0, nil)
	if tb.Cursor() != -1 {
		t.Errorf("cursor %d without rows, want -1", tb.Cursor())
	}
	tb.SetEmpty("nothing here")
	if v := tb.View(); !strings.Contains(v, "nothing here") {
		t.Errorf("empty table says:\n%s", v)
	}
}

// TestLayoutColumns: whatever the width, the columns fit it; spare room
// goes by weight and respects Max.
func TestLayoutColumns(t *testing.T) {
	t.Parallel()
	cols := limitsSpec.columns
	for width := 0; width <= 300; width++ {
		for _, gap := range []int{1, 2} {
			ws := layoutColumns(cols, width, gap)
			total, shown := 0, 0
			for i, w := range ws {
				if w < 0 || (cols[i].Max > 0 && w > cols[i].Max) {
					t.Fatalf("width %d: column %s gets %d", width, cols[i].Title, w)
				}
				if w > 0 {
					total += w
					shown++
				}
			}
			if shown > 0 {
				total += gap * (shown - 1)
			}
			if total > width {
				t.Fatalf("width %d gap %d: columns take %d (%v)", width, gap, total, ws)
			}
		}
	}
	ws := layoutColumns(cols, 200, 2)
	if ws[0] != 13 || ws[1] != 12 || ws[4] != 24 {
		t.Errorf("capped columns at 200: %v", ws)
	}
	if ws[2] <= ws[4] {
		t.Errorf("NAME (weight 6) narrower than LIMITS: %v", ws)
	}
}

func TestTruncateAndClean(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		w    int
		want string
	}{
		{"developers", 20, "developers"},
		{"developers", 10, "developers"},
		{"developers", 6, "devel…"},
		{"developers", 1, "…"},
		{"developers", 0, ""},
		{"日本語のグループ", 7, "日本語…"},
	}
	for _, tt := range tests {
		got := truncate(tt.in, tt.w)
		if got != tt.want || ansi.StringWidth(got) > max(tt.w, 0) {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.in, tt.w, got, tt.want)
		}
	}
	if got := clean("evil\x1b[2Jreason\nsecond\tline\x07"); strings.ContainsAny(got, "\x1b\n\t\x07") {
		t.Errorf("clean left control characters: %q", got)
	}
}

// TestServerTextCannotEscape: escape sequences in server data (a reason,
// a name) never reach the terminal.
func TestServerTextCannotEscape(t *testing.T) {
	t.Parallel()
	m := loaded(t, 80, 24)
	q := fixtureQuarantine()
	q.Callers[0].Reason = "pwned\x1b]0;title\x07\x1b[31mred\x1b[2J"
	m = update(t, m, quarantineMsg{reply: ok(m, resQuarantine), list: q})
	m, _ = press(t, m, "3d")
	if v := m.View(); strings.Contains(v, "\x1b") || strings.Contains(v, "\x07") {
		t.Errorf("escape sequence from server data on screen: %q", v)
	}
}

func TestWrapText(t *testing.T) {
	t.Parallel()
	got := wrapText("refusing to quarantine client:gateway-health: it is an administrator", 30, 2)
	want := []string{"refusing to quarantine", "client:gateway-health: it is …"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrapText = %q, want %q", got, want)
	}
	if got := wrapText("averyveryverylongidentifierwithoutspaces", 10, 5); len(got) != 4 || got[0] != "averyveryv" {
		t.Errorf("long word: %q", got)
	}
}
