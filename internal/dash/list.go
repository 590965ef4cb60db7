package dash

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// listSpec says how a view's items are shown, searched and sorted.
type listSpec[T any] struct {
	noun    string // "definitions", for counts and the empty message
	one     string // "definition", for a count of one
	columns []Column
	cells   func(T) []string
	// key identifies an item across refreshes, to keep the cursor on it.
	key func(T) string
	// text is what a free-text filter term is searched in.
	text func(T) string
	// fields are the "name:value" filter terms, matched exactly and
	// case-insensitively; value arrives lower-cased.
	fields map[string]func(item T, value string) bool
	// sorts are what s cycles through; the first is the default.
	sorts []sortSpec[T]
	// follow keeps the cursor on the first row when it is there, so a
	// list with the newest first follows new entries (audit).
	follow bool
}

type sortSpec[T any] struct {
	name string
	cmp  func(a, b T) int
}

// list is the part every view shares: the items, a filter typed into a
// text input, a sort order and a virtualized table of the matching rows.
// Filtering and sorting work on index slices, so neither copies items.
type list[T any] struct {
	spec *listSpec[T]

	items []T
	keys  []string
	hay   []string // lower-cased search text of each item
	order []int    // every item, sorted
	idx   []int    // the matching items, sorted

	loaded bool
	sortBy int
	query  string
	terms  []term

	input     textinput.Model
	filtering bool

	table  Table
	styles *Styles
	keyMap *KeyMap
	width  int
	height int
}

// term is one word of a filter: free text, or field:value.
type term struct {
	field string
	value string
}

func newList[T any](spec *listSpec[T], keys *KeyMap, styles *Styles) list[T] {
	in := textinput.New()
	in.Prompt = "/"
	in.Placeholder = "filter: words or field:value"
	in.CharLimit = 200
	in.Cursor.SetMode(cursor.CursorStatic)
	in.PromptStyle = styles.FilterPrompt
	in.PlaceholderStyle = styles.Dim
	in.TextStyle = styles.Header.UnsetForeground()
	in.Cursor.Style = styles.Cursor
	in.Cursor.TextStyle = styles.Header.UnsetForeground()
	l := list[T]{spec: spec, input: in, styles: styles, keyMap: keys, table: NewTable(spec.columns, keys, styles)}
	l.table.SetEmpty("loading " + spec.noun + "…")
	return l
}

// Init implements the component contract.
func (l list[T]) Init() tea.Cmd { return nil }

// SetSize gives the list its area: one line for the filter, the rest for
// the table.
func (l *list[T]) SetSize(width, height int) {
	l.width, l.height = width, height
	l.input.Width = max(width-30, 10)
	l.table.SetSize(width, max(height-1, 0))
}

// indexed is a list's items with what filtering and sorting need: built
// by index, which is pure and may run in a tea.Cmd, off the UI goroutine,
// for lists large enough for it to matter.
type indexed[T any] struct {
	items  []T
	keys   []string
	hay    []string // lower-cased search text of each item
	order  []int    // every item, sorted by sortBy
	sortBy int
}

// index builds the filtering and sorting data of items.
func index[T any](spec *listSpec[T], items []T, sortBy int) indexed[T] {
	x := indexed[T]{items: items, keys: make([]string, len(items)), hay: make([]string, len(items)), sortBy: sortBy}
	for i, it := range items {
		x.keys[i] = spec.key(it)
		x.hay[i] = strings.ToLower(spec.text(it))
	}
	x.order = sortOrder(spec, items, x.keys, sortBy)
	return x
}

// sortOrder is every item's index, sorted by sortBy, ties by key.
func sortOrder[T any](spec *listSpec[T], items []T, keys []string, sortBy int) []int {
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	if len(spec.sorts) > 0 {
		by := spec.sorts[sortBy].cmp
		slices.SortStableFunc(order, func(a, b int) int {
			if c := by(items[a], items[b]); c != 0 {
				return c
			}
			return cmp.Compare(keys[a], keys[b])
		})
	}
	return order
}

// SetItems replaces the items, keeping the filter, the sort and the cursor
// on the same item when it is still there.
func (l *list[T]) SetItems(items []T) { l.SetIndexed(index(l.spec, items, l.sortBy)) }

// SetIndexed is SetItems with the indexing already done.
func (l *list[T]) SetIndexed(x indexed[T]) {
	sel, hadSel := l.selectedKey()
	atTop := l.table.Cursor() <= 0
	l.items, l.keys, l.hay, l.order = x.items, x.keys, x.hay, x.order
	if x.sortBy != l.sortBy { // the sort changed while it was built
		l.sort()
	}
	l.loaded = true
	l.table.SetEmpty("no " + l.spec.noun)
	l.apply()
	switch {
	case l.spec.follow && atTop:
		l.table.SetCursor(0)
	case hadSel:
		l.selectKey(sel)
	}
}

// Items returns every item, filtered or not.
func (l list[T]) Items() []T { return l.items }

// Loaded reports whether items have arrived at least once.
func (l list[T]) Loaded() bool { return l.loaded }

// Selected returns the item under the cursor.
func (l list[T]) Selected() (T, bool) {
	var zero T
	c := l.table.Cursor()
	if c < 0 || c >= len(l.idx) {
		return zero, false
	}
	return l.items[l.idx[c]], true
}

func (l list[T]) selectedKey() (string, bool) {
	c := l.table.Cursor()
	if c < 0 || c >= len(l.idx) {
		return "", false
	}
	return l.keys[l.idx[c]], true
}

// selectKey moves the cursor to the item with key k, if it is shown.
func (l *list[T]) selectKey(k string) bool {
	for row, i := range l.idx {
		if l.keys[i] == k {
			l.table.SetCursor(row)
			return true
		}
	}
	return false
}

// Query is the filter in force.
func (l list[T]) Query() string { return l.query }

// SetQuery filters by q at once, as if typed.
func (l *list[T]) SetQuery(q string) {
	l.input.SetValue(q)
	l.setQuery(q)
}

func (l *list[T]) setQuery(q string) {
	if q == l.query {
		return
	}
	sel, hadSel := l.selectedKey()
	l.query = q
	l.terms = parseQuery(q, l.spec.fields)
	l.apply()
	if !hadSel || !l.selectKey(sel) {
		l.table.SetCursor(0)
	}
}

// Filtering reports whether the filter input has the keyboard.
func (l list[T]) Filtering() bool { return l.filtering }

// SortName is the name of the sort in force.
func (l list[T]) SortName() string {
	if len(l.spec.sorts) == 0 {
		return ""
	}
	return l.spec.sorts[l.sortBy].name
}

// Len is the number of matching rows.
func (l list[T]) Len() int { return len(l.idx) }

// parseQuery splits a filter into terms. A word "name:value" is a field
// term when name is one of fields; anything else (ids like
// "caller:group:dev:60" included) is free text.
func parseQuery[T any](q string, fields map[string]func(T, string) bool) []term {
	var out []term
	for _, w := range strings.Fields(strings.ToLower(q)) {
		if name, value, ok := strings.Cut(w, ":"); ok && value != "" {
			if _, known := fields[name]; known {
				out = append(out, term{field: name, value: value})
				continue
			}
		}
		out = append(out, term{value: w})
	}
	return out
}

// apply recomputes the matching rows from the sorted order. It builds new
// slices rather than reusing the old ones: copies of the model (Bubble Tea
// passes it by value) may still hold them.
func (l *list[T]) apply() {
	n := len(l.order)
	if len(l.terms) > 0 {
		n = min(n, 1024)
	}
	idx := make([]int, 0, n)
	for _, i := range l.order {
		if l.matches(i) {
			idx = append(idx, i)
		}
	}
	l.idx = idx
	items, cells := l.items, l.spec.cells
	l.table.SetRows(len(idx), func(row int) []string { return cells(items[idx[row]]) })
}

func (l *list[T]) matches(i int) bool {
	for _, t := range l.terms {
		if t.field == "" {
			if !strings.Contains(l.hay[i], t.value) {
				return false
			}
			continue
		}
		if !l.spec.fields[t.field](l.items[i], t.value) {
			return false
		}
	}
	return true
}

// sort orders every item by the current sort, ties by key.
func (l *list[T]) sort() { l.order = sortOrder(l.spec, l.items, l.keys, l.sortBy) }

// CycleSort moves to the next sort order.
func (l *list[T]) CycleSort() {
	if len(l.spec.sorts) < 2 {
		return
	}
	sel, hadSel := l.selectedKey()
	l.sortBy = (l.sortBy + 1) % len(l.spec.sorts)
	l.sort()
	l.apply()
	if hadSel {
		l.selectKey(sel)
	}
}

// Update handles the filter input while it has the keyboard, and the
// list's own keys (/, s, esc, navigation) otherwise.
func (l list[T]) Update(msg tea.Msg) (list[T], tea.Cmd) {
	k, isKey := msg.(tea.KeyMsg)
	if l.filtering {
		if isKey {
			switch k.Type {
			case tea.KeyEnter:
				l.filtering = false
				l.input.Blur()
				return l, nil
			case tea.KeyEsc:
				l.filtering = false
				l.input.Blur()
				l.input.SetValue("")
				l.setQuery("")
				return l, nil
			case tea.KeyUp, tea.KeyDown, tea.KeyPgUp, tea.KeyPgDown:
				// Move through the matches without leaving the filter.
				var cmd tea.Cmd
				l.table, cmd = l.table.Update(msg)
				return l, cmd
			}
		}
		var cmd tea.Cmd
		l.input, cmd = l.input.Update(msg)
		l.setQuery(l.input.Value())
		return l, cmd
	}
	if !isKey {
		return l, nil
	}
	switch {
	case key.Matches(k, l.keyMap.Filter):
		l.filtering = true
		l.input.SetValue(l.query)
		l.input.CursorEnd()
		return l, l.input.Focus()
	case key.Matches(k, l.keyMap.Back) && l.query != "":
		l.input.SetValue("")
		l.setQuery("")
		return l, nil
	case key.Matches(k, l.keyMap.Sort):
		l.CycleSort()
		return l, nil
	}
	var cmd tea.Cmd
	l.table, cmd = l.table.Update(msg)
	return l, cmd
}

// View renders the filter line and the table.
func (l list[T]) View() string {
	return l.FilterLine() + "\n" + l.table.View()
}

// FilterLine is the input while filtering, the filter in force otherwise,
// and the counts on the right.
func (l list[T]) FilterLine() string {
	st := l.styles
	var left string
	switch {
	case l.filtering:
		left = l.input.View()
	case l.query != "":
		left = st.FilterPrompt.Render("filter: ") + clean(l.query) + st.Dim.Render("  (/ edit, esc clear)")
	default:
		left = st.Dim.Render("/ to filter")
	}
	right := l.countText()
	if s := l.SortName(); s != "" {
		right += " · sort: " + s
	}
	right = st.Dim.Render(right)
	gap := l.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 2 {
		return truncate(left, l.width)
	}
	return left + strings.Repeat(" ", gap) + right
}

func (l list[T]) countText() string {
	if !l.loaded {
		return "loading"
	}
	total := len(l.items)
	if len(l.idx) == total {
		if total == 1 && l.spec.one != "" {
			return "1 " + l.spec.one
		}
		return formatCount(total) + " " + l.spec.noun
	}
	return formatCount(len(l.idx)) + " of " + formatCount(total)
}

// formatCount writes n with thousands separators: 100,000.
func formatCount(n int) string {
	s := strconv.Itoa(n)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	lead := len(s) % 3
	if lead > 0 {
		b.WriteString(s[:lead])
	}
	for i := lead; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}
