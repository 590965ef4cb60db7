package dash

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// paneTitle is a rule with a title: "── definition ─────────".
func paneTitle(st *Styles, title string, w int) string {
	rest := w - ansi.StringWidth(title) - 4
	if rest < 0 {
		return truncate(st.PaneTitle.Render(title), w)
	}
	return st.Rule.Render("── ") + st.PaneTitle.Render(title) + st.Rule.Render(" "+strings.Repeat("─", rest))
}

// field renders "label value".
func field(st *Styles, label, value string) string {
	if value == "" {
		value = "-"
	}
	return st.Label.Render(label) + " " + clean(value)
}

// fitLines makes exactly h lines of at most w cells: longer lines are cut
// with an ellipsis, missing lines are blank, and when lines are left over
// the last one says how many.
func fitLines(lines []string, w, h int) string {
	if h <= 0 {
		return ""
	}
	if len(lines) > h {
		more := len(lines) - h + 1
		lines = append(lines[:h-1:h-1], "  … "+formatCount(more)+" more")
	}
	out := make([]string, h)
	for i := range h {
		if i < len(lines) {
			out[i] = truncate(lines[i], w)
		}
	}
	return strings.Join(out, "\n")
}

// wrapWords lays words out in lines of at most w cells, each starting with
// indent.
func wrapWords(words []string, w int, indent string) []string {
	var (
		out  []string
		line = indent
	)
	for _, word := range words {
		word = clean(word)
		switch {
		case line == indent:
			line += word
		case ansi.StringWidth(line)+2+ansi.StringWidth(word) <= w:
			line += "  " + word
		default:
			out = append(out, line)
			line = indent + word
		}
	}
	if line != indent {
		out = append(out, line)
	}
	return out
}

// joinColumns puts right beside left, h lines, left padded to lw cells and
// separated by sep.
func joinColumns(left string, lw int, right string, h int, sep string) string {
	ls, rs := strings.Split(left, "\n"), strings.Split(right, "\n")
	out := make([]string, h)
	for i := range h {
		var l, r string
		if i < len(ls) {
			l = ls[i]
		}
		if i < len(rs) {
			r = rs[i]
		}
		out[i] = pad(truncate(l, lw), lw, false) + sep + r
	}
	return strings.Join(out, "\n")
}

// placeCenter puts a box in the middle of a w×h area, lines kept within w.
func placeCenter(box string, w, h int) string {
	lines := strings.Split(box, "\n")
	bw := 0
	for _, l := range lines {
		bw = max(bw, ansi.StringWidth(l))
	}
	left := max((w-bw)/2, 0)
	top := max((h-len(lines))/2, 0)
	out := make([]string, 0, h)
	for range top {
		out = append(out, "")
	}
	for _, l := range lines {
		if len(out) == h {
			break
		}
		out = append(out, truncate(strings.Repeat(" ", left)+l, w))
	}
	for len(out) < h {
		out = append(out, "")
	}
	return strings.Join(out, "\n")
}

// wrapText breaks plain text s into lines of at most w cells, at spaces
// (identifiers keep their hyphens), cutting only words longer than a line.
// It keeps at most n lines, the last ending in an ellipsis when text is
// left over.
func wrapText(s string, w, n int) []string {
	if w <= 0 || n <= 0 {
		return nil
	}
	var (
		lines []string
		line  string
	)
	for _, word := range strings.Fields(s) {
		for ansi.StringWidth(word) > w {
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			head := ansi.Truncate(word, w, "")
			lines = append(lines, head)
			word = word[len(head):]
		}
		switch {
		case word == "":
		case line == "":
			line = word
		case ansi.StringWidth(line)+1+ansi.StringWidth(word) <= w:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	if len(lines) > n {
		rest := strings.Join(lines[n-1:], " ")
		lines = append(lines[:n-1:n-1], truncate(rest, w))
	}
	return lines
}
