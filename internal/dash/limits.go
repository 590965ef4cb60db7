package dash

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// limitsSpec is how the Limits view lists definitions.
var limitsSpec = &listSpec[ratelimit.Definition]{
	noun: "definitions",
	columns: []Column{
		{Title: "AXIS", Min: 8, Max: 13, Weight: 1},
		{Title: "ENTITY", Min: 8, Max: 12, Weight: 1},
		{Title: "NAME", Min: 12, Weight: 6},
		{Title: "WINDOW", Min: 6, Right: true},
		{Title: "LIMITS", Min: 12, Max: 24, Weight: 2},
		{Title: "ALGO", Min: 7},
		{Title: "BURST", Min: 5, Max: 20, Weight: 2},
		{Title: "MODE", Min: 7},
		{Title: "ENABLED", Min: 7},
	},
	cells: func(d ratelimit.Definition) []string {
		return []string{d.Axis, d.EntityType, definitionName(d), formatWindow(d.WindowSeconds), cmdutil.LimitText(d),
			algorithmShort(d), cmdutil.BurstText(d), d.Mode, yesNo(d.Enabled)}
	},
	key: definitionID,
	text: func(d ratelimit.Definition) string {
		return definitionID(d) + " " + d.Name + " " + d.Mode + " " + d.Description + " " + strings.Join(d.Members, " ") +
			" " + cmdutil.MatchText(d) + " " + definitionName(d)
	},
	fields: map[string]func(ratelimit.Definition, string) bool{
		"id":     func(d ratelimit.Definition, v string) bool { return strings.EqualFold(definitionID(d), v) },
		"axis":   func(d ratelimit.Definition, v string) bool { return strings.EqualFold(d.Axis, v) },
		"entity": func(d ratelimit.Definition, v string) bool { return strings.EqualFold(d.EntityType, v) },
		"name":   func(d ratelimit.Definition, v string) bool { return strings.EqualFold(d.Name, v) },
		"mode":   func(d ratelimit.Definition, v string) bool { return strings.EqualFold(d.Mode, v) },
		"algorithm": func(d ratelimit.Definition, v string) bool {
			return strings.EqualFold(d.AlgorithmOrDefault(), v) || strings.EqualFold(algorithmShort(d), v)
		},
		"window": func(d ratelimit.Definition, v string) bool {
			return v == strconv.Itoa(d.WindowSeconds) || v == strconv.Itoa(d.WindowSeconds)+"s" || v == formatWindow(d.WindowSeconds)
		},
		"enabled": func(d ratelimit.Definition, v string) bool {
			switch v {
			case "yes", "true", "on", "1":
				return d.Enabled
			case "no", "false", "off", "0":
				return !d.Enabled
			}
			return false
		},
		// group: the group definitions of that name and the server groups
		// that list it as a member, as the API's ?group= filter.
		"group": func(d ratelimit.Definition, v string) bool {
			if d.EntityType == ratelimit.EntityGroup && strings.EqualFold(d.Name, v) {
				return true
			}
			for _, m := range d.Members {
				if strings.EqualFold(m, v) {
					return true
				}
			}
			return false
		},
	},
	sorts: []sortSpec[ratelimit.Definition]{
		{name: "id", cmp: func(a, b ratelimit.Definition) int { return 0 }},
		{name: "name", cmp: func(a, b ratelimit.Definition) int { return cmp.Compare(a.Name, b.Name) }},
		{name: "window", cmp: func(a, b ratelimit.Definition) int { return cmp.Compare(a.WindowSeconds, b.WindowSeconds) }},
		{name: "limit", cmp: func(a, b ratelimit.Definition) int { return cmp.Compare(limitValue(b), limitValue(a)) }},
		{name: "enabled", cmp: func(a, b ratelimit.Definition) int { return cmp.Compare(yesNo(a.Enabled), yesNo(b.Enabled)) }},
		{name: "mode", cmp: func(a, b ratelimit.Definition) int { return cmp.Compare(a.Mode, b.Mode) }},
	},
}

// algorithmShort names a definition's algorithm in the table's few cells:
// fixed, sliding or bucket.
func algorithmShort(d ratelimit.Definition) string {
	if d.Axis == ratelimit.AxisQuarantine {
		return "-" // a kill switch counts nothing
	}
	switch a := d.AlgorithmOrDefault(); a {
	case ratelimit.AlgorithmFixedWindow:
		return "fixed"
	case ratelimit.AlgorithmSlidingWindow:
		return "sliding"
	case ratelimit.AlgorithmTokenBucket:
		return "bucket"
	default:
		return a
	}
}

// definitionID is the definition's id, from its body when the server left
// it out.
func definitionID(d ratelimit.Definition) string {
	if d.ID != "" {
		return d.ID
	}
	return d.Key()
}

// definitionDetail is what the detail pane shows besides the definition:
// fetched when the pane opens on a definition.
type definitionDetail struct {
	id          string
	loading     bool
	memberships []ratelimit.Membership
	moreMembers bool // the group has more than were loaded
	membersErr  error
	counters    []client.Counter
	// countersTruncated: the live counters are more than were listed.
	countersTruncated bool
	countersOK        bool
	countersErr       error
}

// limitsView lists every definition; enter opens a detail pane.
type limitsView struct {
	list       list[ratelimit.Definition]
	detailOpen bool
	detail     definitionDetail

	styles *Styles
	keys   *KeyMap
	now    func() time.Time
	width  int
	height int
}

func newLimitsView(keys *KeyMap, styles *Styles, now func() time.Time) limitsView {
	return limitsView{list: newList(limitsSpec, keys, styles), styles: styles, keys: keys, now: now}
}

func (v limitsView) Init() tea.Cmd { return nil }

// SetSize lays the view out: with the pane open, the table shares the area
// with it, side by side from sideBySideFrom columns, one above the other
// below that.
func (v *limitsView) SetSize(width, height int) {
	v.width, v.height = width, height
	lw, lh := v.listArea()
	v.list.SetSize(lw, lh)
}

// sideBySideFrom is the width from which panes sit beside the table
// rather than below it.
const sideBySideFrom = 160

func (v limitsView) sideBySide() bool { return v.width >= sideBySideFrom }

func (v limitsView) listArea() (int, int) {
	if !v.detailOpen {
		return v.width, v.height
	}
	if v.sideBySide() {
		return v.width * 3 / 5, v.height
	}
	return v.width, max(v.height*2/5, 5)
}

// SetDefinitions replaces the definitions.
func (v *limitsView) SetDefinitions(defs []ratelimit.Definition) { v.list.SetItems(defs) }

// Selected is the definition under the cursor.
func (v limitsView) Selected() (ratelimit.Definition, bool) { return v.list.Selected() }

// Definition looks a definition up by id among those loaded.
func (v limitsView) Definition(id string) (ratelimit.Definition, bool) {
	for _, d := range v.list.Items() {
		if definitionID(d) == id {
			return d, true
		}
	}
	return ratelimit.Definition{}, false
}

// OpenDetail opens or closes the pane.
func (v *limitsView) SetDetailOpen(open bool) {
	v.detailOpen = open
	v.SetSize(v.width, v.height)
}

// Update handles the list's keys and enter/esc for the pane.
func (v limitsView) Update(msg tea.Msg) (limitsView, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok && !v.list.Filtering() {
		switch {
		case key.Matches(k, v.keys.Detail):
			v.SetDetailOpen(!v.detailOpen)
			return v, nil
		case key.Matches(k, v.keys.Back) && v.detailOpen:
			v.SetDetailOpen(false)
			return v, nil
		}
	}
	var cmd tea.Cmd
	v.list, cmd = v.list.Update(msg)
	return v, cmd
}

// View renders the list and, when open, the pane.
func (v limitsView) View() string {
	if !v.detailOpen {
		return v.list.View()
	}
	lw, lh := v.listArea()
	if v.sideBySide() {
		return joinColumns(v.list.View(), lw, v.detailView(v.width-lw-1, v.height), lh, v.styles.Rule.Render("│"))
	}
	return v.list.View() + "\n" + v.detailView(v.width, v.height-lh)
}

// detailView renders the selected definition, its server-group members,
// the memberships of its group and its live counters in w×h cells.
func (v limitsView) detailView(w, h int) string {
	st := v.styles
	d, ok := v.Selected()
	lines := []string{paneTitle(st, "definition", w)}
	if !ok {
		lines = append(lines, st.Dim.Render("  no definition selected"))
		return fitLines(lines, w, h)
	}
	loc := v.now().Location()
	lines = append(lines,
		st.PaneTitle.Render(clean(definitionID(d))),
		field(st, "axis", d.Axis)+"  "+field(st, "entity", d.EntityType)+"  "+field(st, "window", formatWindow(d.WindowSeconds))+
			"  "+field(st, "mode", d.Mode),
		field(st, "limits", cmdutil.LimitText(d))+"  "+field(st, "enabled", yesNo(d.Enabled))+"  "+field(st, "fail-closed", yesNo(d.FailClosed)),
	)
	if d.Axis != ratelimit.AxisQuarantine {
		alg := field(st, "algorithm", d.AlgorithmOrDefault())
		if d.AlgorithmOrDefault() == ratelimit.AlgorithmTokenBucket {
			alg += "  " + field(st, "burst", cmdutil.BurstText(d))
		}
		// Whom it selects beyond its members, and who shares a bucket.
		if sel := cmdutil.SelectorText(d); sel != "" {
			alg += "  " + field(st, "buckets", sel)
		}
		// An override outranks the less specific definitions sharing the
		// caller's bucket (rlctl rate-limit status names which).
		if d.Override {
			alg += "  " + field(st, "override", "yes")
		}
		// Leases: shown when the definition overrides the enforcer's
		// choice (auto, the default, goes unsaid).
		if d.Lease != "" {
			alg += "  " + field(st, "lease", d.Lease)
		}
		// The fail policy: shown when the definition has one of its own
		// (none follows the enforcer's default, rlapi --fail-policy).
		if d.FailPolicy != "" {
			alg += "  " + field(st, "fail-policy", d.FailPolicy)
		}
		lines = append(lines, alg)
	}
	// Routes and tools: what the definition selects.
	lines = append(lines, matchLines(st, d, w)...)
	upd := field(st, "version", strconv.FormatInt(d.Version, 10))
	if d.UpdatedAt != nil || d.UpdatedBy != "" {
		upd += "  " + field(st, "updated", formatStampPtr(d.UpdatedAt, loc))
		if d.UpdatedBy != "" {
			upd += " by " + clean(d.UpdatedBy)
		}
	}
	lines = append(lines, upd)
	if d.Description != "" {
		lines = append(lines, field(st, "description", d.Description))
	}
	if d.EntityType == ratelimit.EntityServerGroup || len(d.Members) > 0 {
		lines = append(lines, field(st, "members (servers)", strings.Join(d.Members, ", ")))
	}
	det := v.detail
	current := det.id == definitionID(d)
	if hasGroupMemberships(d) {
		head := "memberships of " + d.Name
		switch {
		case !current || det.loading:
			lines = append(lines, st.Label.Render(head+": ")+st.Dim.Render("loading…"))
		case det.membersErr != nil:
			lines = append(lines, st.Label.Render(head+": ")+st.StatusErr.Render(det.membersErr.Error()))
		default:
			count := strconv.Itoa(len(det.memberships))
			if det.moreMembers {
				count = "more than " + count + " (Members view: filter group:" + d.Name + ")"
			}
			lines = append(lines, st.Label.Render(head+": "+clean(count)))
			// Only what can show: a big group has thousands.
			lines = append(lines, wrapWords(subjectsOf(det.memberships[:min(len(det.memberships), maxPaneItems)]), w-2, "  ")...)
		}
	}
	if current && !det.loading {
		switch {
		case det.countersErr != nil:
			lines = append(lines, st.Label.Render("live counters: ")+st.Dim.Render(det.countersErr.Error()))
		case det.countersOK:
			count := fmt.Sprintf("live counters: %d", len(det.counters))
			if det.countersTruncated {
				count = fmt.Sprintf("live counters: %d or more (the server stopped looking)", len(det.counters))
			}
			lines = append(lines, st.Label.Render(count))
			for _, c := range det.counters[:min(len(det.counters), maxPaneItems)] {
				if c.Algorithm == ratelimit.AlgorithmTokenBucket {
					tokens := "bucket"
					if c.Tokens != nil {
						tokens = fmt.Sprintf("%d/%d tokens", *c.Tokens, c.Burst)
					}
					full := "full now"
					if c.FullAt != nil {
						full = "full " + formatUntil(v.now(), c.FullAt)
					}
					lines = append(lines, fmt.Sprintf("  %s  %s  (%s)", clean(c.Key), tokens, full))
					continue
				}
				lines = append(lines, fmt.Sprintf("  %s  %d  (window %s, resets %s)", clean(c.Key), c.Count,
					formatWindow(c.WindowSeconds), formatUntil(v.now(), &c.ExpiresAt)))
			}
		}
	}
	return fitLines(lines, w, h)
}

// matchLines says what a route or tool definition selects, field by
// field: a route's methods, whether it is exempt and every path pattern
// (wrapped, so a tier's list is not cut at the pane's edge); a tool or
// skill definition's kinds and what its bucket is kept per; a descriptor
// definition's Envoy fields (descriptorLines). Nothing for other
// definitions.
func matchLines(st *Styles, d ratelimit.Definition, w int) []string {
	switch d.EntityType {
	case ratelimit.EntityRoute:
		methods := "every method"
		if len(d.Methods) > 0 {
			methods = strings.Join(d.Methods, ", ")
		}
		lines := []string{field(st, "methods", methods) + "  " + field(st, "exempt", yesNo(d.Exempt)),
			st.Label.Render(fmt.Sprintf("paths (%d):", len(d.Paths)))}
		return append(lines, wrapWords(d.Paths, w-2, "  ")...)
	case ratelimit.EntityMCPTool, ratelimit.EntityA2ASkill:
		kinds := "every kind"
		if len(d.Kinds) > 0 {
			kinds = strings.Join(d.Kinds, ", ")
		}
		return []string{field(st, "kinds", kinds) + "  " + field(st, "tool scope", cmp.Or(d.ToolScope, ratelimit.ToolScopeGlobal))}
	case ratelimit.EntityDescriptor:
		return descriptorLines(st, d, w)
	}
	return nil
}

// maxPaneItems bounds the memberships and counters the pane lays out.
const maxPaneItems = 200

// hasGroupMemberships reports whether subjects can be members of d's group.
func hasGroupMemberships(d ratelimit.Definition) bool {
	return d.EntityType == ratelimit.EntityGroup || d.EntityType == ratelimit.EntityServerGroup
}

func subjectsOf(ms []ratelimit.Membership) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = ratelimit.MembershipID(m.SubjectType, m.Subject)
	}
	return out
}
