package dash

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// auditKeep is how many audit entries the view holds; older ones drop off
// the bottom as new ones arrive.
const auditKeep = 2000

// auditView follows the audit log, newest first, with the selected entry's
// before and after in a pane.
type auditView struct {
	list list[ratelimit.AuditEntry]

	styles *Styles
	now    func() time.Time
	width  int
	height int
}

func newAuditView(keys *KeyMap, styles *Styles, now func() time.Time) auditView {
	spec := &listSpec[ratelimit.AuditEntry]{
		noun: "entries",
		one:  "entry",
		columns: []Column{
			{Title: "ID", Min: 5, Right: true},
			{Title: "TIME", Min: 19},
			{Title: "ACTOR", Min: 8, Max: 24, Weight: 1},
			{Title: "ACTION", Min: 6, Max: 10, Weight: 1},
			{Title: "RESOURCE", Min: 12, Weight: 4},
		},
		cells: func(e ratelimit.AuditEntry) []string {
			return []string{strconv.FormatInt(e.ID, 10), formatStamp(e.Time, now().Location()), e.Actor, e.Action, resourceOf(e)}
		},
		key: func(e ratelimit.AuditEntry) string { return strconv.FormatInt(e.ID, 10) },
		text: func(e ratelimit.AuditEntry) string {
			return e.Actor + " " + e.Action + " " + resourceOf(e) + " " + e.RequestID
		},
		fields: map[string]func(ratelimit.AuditEntry, string) bool{
			"actor":    func(e ratelimit.AuditEntry, v string) bool { return strings.EqualFold(e.Actor, v) },
			"action":   func(e ratelimit.AuditEntry, v string) bool { return strings.EqualFold(e.Action, v) },
			"resource": func(e ratelimit.AuditEntry, v string) bool { return strings.EqualFold(e.ResourceType, v) },
			"id":       func(e ratelimit.AuditEntry, v string) bool { return strings.EqualFold(e.ResourceID, v) },
		},
		sorts: []sortSpec[ratelimit.AuditEntry]{
			{name: "newest", cmp: func(a, b ratelimit.AuditEntry) int { return cmp.Compare(b.ID, a.ID) }},
		},
		follow: true,
	}
	return auditView{list: newList(spec, keys, styles), styles: styles, now: now}
}

func resourceOf(e ratelimit.AuditEntry) string { return e.ResourceType + "/" + e.ResourceID }

func (v auditView) Init() tea.Cmd { return nil }

// SetSize gives the table the top half (the left three fifths from
// sideBySideFrom columns) and the pane the rest.
func (v *auditView) SetSize(width, height int) {
	v.width, v.height = width, height
	lw, lh := v.listArea()
	v.list.SetSize(lw, lh)
}

func (v auditView) sideBySide() bool { return v.width >= sideBySideFrom }

func (v auditView) listArea() (int, int) {
	if v.sideBySide() {
		return v.width * 3 / 5, v.height
	}
	return v.width, max(v.height/2, 4)
}

// Newest is the id of the newest entry held, 0 without any.
func (v auditView) Newest() int64 {
	var n int64
	for _, e := range v.list.Items() {
		n = max(n, e.ID)
	}
	return n
}

// SetEntries replaces the entries (a first page, newest first).
func (v *auditView) SetEntries(es []ratelimit.AuditEntry) {
	if len(es) > auditKeep {
		es = es[:auditKeep]
	}
	v.list.SetItems(es)
}

// Append adds entries newer than those held (in any order), dropping the
// oldest beyond auditKeep.
func (v *auditView) Append(es []ratelimit.AuditEntry) {
	if len(es) == 0 && v.list.Loaded() {
		return
	}
	all := make([]ratelimit.AuditEntry, 0, len(es)+len(v.list.Items()))
	all = append(all, es...)
	all = append(all, v.list.Items()...)
	// Newest first; the list sorts too, but trimming needs the order.
	slices.SortStableFunc(all, func(a, b ratelimit.AuditEntry) int { return cmp.Compare(b.ID, a.ID) })
	if len(all) > auditKeep {
		all = all[:auditKeep]
	}
	v.list.SetItems(all)
}

func (v auditView) Update(msg tea.Msg) (auditView, tea.Cmd) {
	var cmd tea.Cmd
	v.list, cmd = v.list.Update(msg)
	return v, cmd
}

func (v auditView) View() string {
	lw, lh := v.listArea()
	if v.sideBySide() {
		return joinColumns(v.list.View(), lw, v.detailView(v.width-lw-1, v.height), v.height, v.styles.Rule.Render("│"))
	}
	return v.list.View() + "\n" + v.detailView(v.width, v.height-lh)
}

// detailView shows who changed what in the selected entry, field by field.
func (v auditView) detailView(w, h int) string {
	st := v.styles
	e, ok := v.list.Selected()
	if !ok {
		return fitLines([]string{paneTitle(st, "change", w), st.Dim.Render("  no entry selected")}, w, h)
	}
	lines := []string{
		paneTitle(st, "change #"+strconv.FormatInt(e.ID, 10), w),
		field(st, "when", formatStamp(e.Time, v.now().Location())) + "  " + field(st, "by", e.Actor),
		field(st, e.Action, resourceOf(e)),
	}
	if e.RequestID != "" {
		lines = append(lines, field(st, "request", e.RequestID))
	}
	changes := cmdutil.Changes(rawJSON(e.Before), rawJSON(e.After))
	if len(changes) == 0 {
		lines = append(lines, st.Dim.Render("no field changed"))
	}
	for _, c := range changes {
		var line string
		switch {
		case c.From == nil:
			line = st.On.Render("+ ") + clean(c.Field+": "+cmdutil.FormatValue(c.To))
		case c.To == nil:
			line = st.Off.Render("- ") + clean(c.Field+": "+cmdutil.FormatValue(c.From))
		default:
			line = st.Stale.Render("~ ") + clean(c.Field+": "+cmdutil.FormatValue(c.From)+" → "+cmdutil.FormatValue(c.To))
		}
		lines = append(lines, line)
	}
	return fitLines(lines, w, h)
}

// rawJSON turns an absent or null JSON value into a nil interface, which
// cmdutil.Changes reads as "did not exist".
func rawJSON(m json.RawMessage) any {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return m
}
