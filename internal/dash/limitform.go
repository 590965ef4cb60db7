package dash

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// limitInput is one number the limit form edits, named by its JSON field
// (how validation errors name it).
type limitInput struct {
	field string // "max_requests", "user_burst", ...
	label string
	burst bool // a token bucket's capacity: shown for token_bucket only
	in    textinput.Model
}

// limitForm changes an existing definition's algorithm, limits and
// bursts. Everything else (identity, mode, members, description) stays as
// loaded. Problems are shown under the field they concern: the client's
// own checks (internal/validate, the rules rlapi applies) on submit, and
// the server's answer when it refuses the change (errors).
type limitForm struct {
	def    ratelimit.Definition // as loaded
	algIdx int
	inputs []limitInput
	focus  int // 0: the algorithm; i > 0: the i-th shown input
	errs   map[string]string
	err    string // a problem no field of the form shows
	state  formState
	result ratelimit.Definition
	width  int
	keys   *KeyMap
	styles *Styles
}

// editable reports whether the form can edit d: the quarantine sentinels
// carry no limits.
func editable(d ratelimit.Definition) bool { return d.Axis != ratelimit.AxisQuarantine }

func newLimitForm(d ratelimit.Definition, keys *KeyMap, styles *Styles) limitForm {
	f := limitForm{def: d, keys: keys, styles: styles, errs: map[string]string{}}
	for i, a := range ratelimit.Algorithms() {
		if a == d.AlgorithmOrDefault() {
			f.algIdx = i
		}
	}
	add := func(field, label string, burst bool, v *int, placeholder string) {
		in := textinput.New()
		in.Prompt = ""
		in.Placeholder = placeholder
		in.CharLimit = 10
		in.Cursor.SetMode(cursor.CursorStatic)
		in.PlaceholderStyle = styles.Dim
		in.Cursor.Style = styles.Cursor
		if v != nil {
			in.SetValue(strconv.Itoa(*v))
		}
		f.inputs = append(f.inputs, limitInput{field: field, label: label, burst: burst, in: in})
	}
	switch d.Axis {
	case ratelimit.AxisTarget:
		add("max_requests", "limit", false, d.MaxRequests, "requests per window")
		add("burst", "burst", true, d.Burst, "the limit")
	default:
		add("user_max_requests", "user", false, d.UserMaxRequests, "none: humans not limited")
		add("user_burst", "user burst", true, d.UserBurst, "the user limit")
		add("agent_max_requests", "agent", false, d.AgentMaxRequests, "none: agents not limited")
		add("agent_burst", "agent burst", true, d.AgentBurst, "the agent limit")
	}
	return f
}

func (f limitForm) Init() tea.Cmd { return nil }

// SetSize sets the width the form may use.
func (f *limitForm) SetSize(width, _ int) {
	f.width = width
	for i := range f.inputs {
		f.inputs[i].in.Width = max(f.innerWidth()-16, 8)
	}
}

func (f limitForm) innerWidth() int { return max(min(f.width-4, 72), 20) }

// State reports whether the form was submitted or canceled.
func (f limitForm) State() formState { return f.state }

// Definition is the submitted definition.
func (f limitForm) Definition() ratelimit.Definition { return f.result }

func (f limitForm) algorithm() string { return ratelimit.Algorithms()[f.algIdx] }

// shown lists the inputs on screen: the bursts only for a token bucket.
func (f limitForm) shown() []int {
	var out []int
	for i, in := range f.inputs {
		if !in.burst || f.algorithm() == ratelimit.AlgorithmTokenBucket {
			out = append(out, i)
		}
	}
	return out
}

func (f *limitForm) setFocus(i int) tea.Cmd {
	n := len(f.shown()) + 1
	f.focus = (i%n + n) % n
	var cmd tea.Cmd
	for j, idx := range f.shown() {
		if j+1 == f.focus {
			cmd = f.inputs[idx].in.Focus()
		} else {
			f.inputs[idx].in.Blur()
		}
	}
	return cmd
}

// focusField moves the focus to the input of field, when it is shown.
func (f *limitForm) focusField(field string) tea.Cmd {
	if field == "algorithm" {
		return f.setFocus(0)
	}
	for j, idx := range f.shown() {
		if f.inputs[idx].field == field {
			return f.setFocus(j + 1)
		}
	}
	return nil
}

// SetErrors shows the server's refusal: each problem under its field, the
// rest (and a problem of a field the form does not show) below them.
func (f *limitForm) SetErrors(fields []fieldProblem, fallback string) tea.Cmd {
	f.errs, f.err = map[string]string{}, ""
	var first string
	for _, p := range fields {
		if f.showsField(p.field) {
			f.errs[p.field] = p.message
			if first == "" {
				first = p.field
			}
			continue
		}
		f.err = strings.TrimSpace(f.err + " " + p.message)
	}
	if len(fields) == 0 {
		f.err = fallback
	}
	f.state = formEditing
	if first != "" {
		return f.focusField(first)
	}
	return nil
}

// fieldProblem is one field's problem, from the client's checks or the
// server's answer.
type fieldProblem struct{ field, message string }

func (f limitForm) showsField(field string) bool {
	if field == "algorithm" {
		return true
	}
	for _, idx := range f.shown() {
		if f.inputs[idx].field == field {
			return true
		}
	}
	return false
}

// Update edits the focused field; enter on the last field submits.
func (f limitForm) Update(msg tea.Msg) (limitForm, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return f, nil
	}
	last := len(f.shown())
	switch {
	case k.Type == tea.KeyEsc:
		f.state = formCanceled
		return f, nil
	case k.Type == tea.KeyTab || k.Type == tea.KeyDown:
		return f, f.setFocus(f.focus + 1)
	case k.Type == tea.KeyShiftTab || k.Type == tea.KeyUp:
		return f, f.setFocus(f.focus - 1)
	case key.Matches(k, f.keys.Submit):
		if f.focus < last {
			return f, f.setFocus(f.focus + 1)
		}
		return f.submit()
	}
	if f.focus == 0 {
		n := len(ratelimit.Algorithms())
		switch k.String() {
		case "right", "l", " ":
			f.algIdx = (f.algIdx + 1) % n
		case "left", "h":
			f.algIdx = (f.algIdx + n - 1) % n
		default:
			for i, a := range ratelimit.Algorithms() {
				if k.String() == a[:1] {
					f.algIdx = i
				}
			}
		}
		delete(f.errs, "algorithm")
		return f, nil
	}
	idx := f.shown()[f.focus-1]
	var cmd tea.Cmd
	f.inputs[idx].in, cmd = f.inputs[idx].in.Update(msg)
	delete(f.errs, f.inputs[idx].field)
	f.err = ""
	return f, cmd
}

// submit reads the fields and checks the definition they make with the
// rules rlapi applies (internal/validate, without the server's floors,
// which it checks itself); when they pass, the form is done.
func (f limitForm) submit() (limitForm, tea.Cmd) {
	d := f.def
	d.Algorithm = f.algorithm()
	f.errs, f.err = map[string]string{}, ""
	var problems []fieldProblem
	tokenBucket := d.Algorithm == ratelimit.AlgorithmTokenBucket
	for _, in := range f.inputs {
		v, err := parseLimit(in.in.Value())
		if err != nil && (!in.burst || tokenBucket) {
			problems = append(problems, fieldProblem{in.field, in.field + ": " + err.Error()})
			continue
		}
		if in.burst && !tokenBucket {
			v = nil // a window has no burst: switching to one drops them
		}
		*limitTarget(&d, in.field) = v
	}
	if len(problems) == 0 {
		_, err := validate.Definition(d, validate.Floors{})
		var ve *validate.Error
		if errors.As(err, &ve) {
			for _, fe := range ve.Errors {
				problems = append(problems, fieldProblem{fe.Field, fe.Message})
			}
		} else if err != nil {
			problems = append(problems, fieldProblem{"", err.Error()})
		}
	}
	if len(problems) > 0 {
		cmd := f.SetErrors(problems, "")
		return f, cmd
	}
	f.result = d
	f.state = formSubmitted
	return f, nil
}

// limitTarget is the definition's field an input edits.
func limitTarget(d *ratelimit.Definition, field string) **int {
	switch field {
	case "max_requests":
		return &d.MaxRequests
	case "burst":
		return &d.Burst
	case "user_max_requests":
		return &d.UserMaxRequests
	case "user_burst":
		return &d.UserBurst
	case "agent_max_requests":
		return &d.AgentMaxRequests
	case "agent_burst":
		return &d.AgentBurst
	}
	panic("unknown limit field " + field)
}

// parseLimit reads a limit or burst: empty for none.
func parseLimit(s string) (*int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, fmt.Errorf("must be a whole number (got %q)", s)
	}
	return &n, nil
}

// View renders the form as a dialog box, each problem under its field.
func (f limitForm) View() string {
	st := f.styles
	inner := f.innerWidth()
	label := func(i int, name string) string {
		mark := "  "
		if f.focus == i {
			mark = "> "
		}
		return mark + st.Label.Render(fmt.Sprintf("%-11s", name)) + " "
	}
	problem := func(field string) []string {
		var out []string
		if msg, ok := f.errs[field]; ok {
			// The whole message: it says what to fix.
			for _, l := range wrapText(clean(msg), inner-4, 4) {
				out = append(out, "    "+st.FormError.Render(l))
			}
		}
		return out
	}
	var algs []string
	for i, a := range ratelimit.Algorithms() {
		if i == f.algIdx {
			algs = append(algs, st.On.Render("(*) "+a))
		} else {
			algs = append(algs, "( ) "+a)
		}
	}
	lines := []string{
		st.DialogTitle.Render("Change " + clean(definitionID(f.def))),
		"",
		label(0, "algorithm") + strings.Join(algs, " "),
	}
	lines = append(lines, problem("algorithm")...)
	for j, idx := range f.shown() {
		in := f.inputs[idx]
		lines = append(lines, label(j+1, in.label)+in.in.View())
		lines = append(lines, problem(in.field)...)
	}
	lines = append(lines, "")
	switch f.algorithm() {
	case ratelimit.AlgorithmTokenBucket:
		lines = append(lines, st.Dim.Render("limits are the sustained rate per "+formatWindow(f.def.WindowSeconds)+"; a burst is the bucket's size"))
	case ratelimit.AlgorithmSlidingWindow:
		lines = append(lines, st.Dim.Render("at most the limit in any "+formatWindow(f.def.WindowSeconds)+" (bursts: token_bucket only)"))
	default:
		lines = append(lines, st.Dim.Render("per window aligned on the clock (bursts: token_bucket only)"))
	}
	lines = append(lines, st.Dim.Render("←/→ or f/s/t: algorithm · an empty field: none · esc cancel"))
	for i, l := range lines {
		lines[i] = truncate(l, inner)
	}
	if f.err != "" {
		for _, l := range wrapText(clean(f.err), inner, 4) {
			lines = append(lines, st.FormError.Render(l))
		}
	}
	return st.Dialog.Width(inner + 2).Render(strings.Join(lines, "\n"))
}
