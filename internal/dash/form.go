package dash

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// subjectTypes are what the form's type field cycles through: every
// subject type the server quarantines, callers first (users, clients,
// networks by CIDR, teams), then targets. Each is picked by its first
// letter too, so the first letters must stay distinct.
var subjectTypes = []string{ratelimit.SubjectUser, ratelimit.SubjectClient, ratelimit.SubjectNetwork, ratelimit.SubjectTeam,
	ratelimit.SubjectServer, ratelimit.SubjectAgent}

// isTargetType says whether a subject type is a target (quarantined in
// quarantine-targets) rather than a caller.
func isTargetType(subjectType string) bool {
	return subjectType == ratelimit.SubjectServer || subjectType == ratelimit.SubjectAgent
}

// maxQuarantine is the longest duration the server accepts; longer is
// "until removed", which an empty duration says.
const maxQuarantine = 365 * 24 * time.Hour

// formState says whether the form is still being filled in.
type formState int

const (
	formEditing formState = iota
	formSubmitted
	formCanceled
)

// Form fields, in tab order.
const (
	fieldType = iota
	fieldSubject
	fieldReason
	fieldDuration
	numFields
)

// quarantineRequest is what the form asks for.
type quarantineRequest struct {
	SubjectType string
	Subject     string
	Reason      string
	For         time.Duration // zero: until removed
}

// quarantineForm asks for a subject to quarantine: its type, name, a reason
// and how long.
type quarantineForm struct {
	typeIdx int
	inputs  [numFields]textinput.Model // fieldType unused
	focus   int
	err     string
	state   formState
	request quarantineRequest
	width   int
	keys    *KeyMap
	styles  *Styles
}

func newQuarantineForm(keys *KeyMap, styles *Styles) quarantineForm {
	f := quarantineForm{keys: keys, styles: styles, typeIdx: 1} // client: the usual leaked key
	placeholders := [numFields]string{
		fieldSubject:  "username, client id, CIDR, team, server or agent path",
		fieldReason:   "why: shown in lists and the audit log",
		fieldDuration: "until removed; e.g. 30m, 2h, 7d",
	}
	for i := fieldSubject; i < numFields; i++ {
		in := textinput.New()
		in.Prompt = ""
		in.Placeholder = placeholders[i]
		in.CharLimit = 256
		in.Cursor.SetMode(cursor.CursorStatic)
		in.PlaceholderStyle = styles.Dim
		in.Cursor.Style = styles.Cursor
		f.inputs[i] = in
	}
	f.inputs[fieldDuration].CharLimit = 16
	return f
}

func (f quarantineForm) Init() tea.Cmd { return nil }

// SetSize sets the width the form may use.
func (f *quarantineForm) SetSize(width, _ int) {
	f.width = width
	inner := f.innerWidth()
	for i := fieldSubject; i < numFields; i++ {
		f.inputs[i].Width = max(inner-14, 8)
	}
}

func (f quarantineForm) innerWidth() int { return max(min(f.width-4, 72), 20) }

// State reports whether the form was submitted or canceled.
func (f quarantineForm) State() formState { return f.state }

// Request is the submitted request.
func (f quarantineForm) Request() quarantineRequest { return f.request }

func (f *quarantineForm) setFocus(i int) tea.Cmd {
	f.focus = (i + numFields) % numFields
	var cmd tea.Cmd
	for j := fieldSubject; j < numFields; j++ {
		if j == f.focus {
			cmd = f.inputs[j].Focus()
		} else {
			f.inputs[j].Blur()
		}
	}
	return cmd
}

// Update edits the focused field; enter on the last field submits.
func (f quarantineForm) Update(msg tea.Msg) (quarantineForm, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return f, nil
	}
	switch {
	case k.Type == tea.KeyEsc:
		f.state = formCanceled
		return f, nil
	case k.Type == tea.KeyTab || k.Type == tea.KeyDown:
		return f, f.setFocus(f.focus + 1)
	case k.Type == tea.KeyShiftTab || k.Type == tea.KeyUp:
		return f, f.setFocus(f.focus - 1)
	case key.Matches(k, f.keys.Submit):
		if f.focus < numFields-1 {
			return f, f.setFocus(f.focus + 1)
		}
		return f.submit()
	}
	if f.focus == fieldType {
		switch k.String() {
		case "right", "l", " ":
			f.typeIdx = (f.typeIdx + 1) % len(subjectTypes)
		case "left", "h":
			f.typeIdx = (f.typeIdx + len(subjectTypes) - 1) % len(subjectTypes)
		default:
			for i, t := range subjectTypes {
				if k.String() == t[:1] {
					f.typeIdx = i
				}
			}
		}
		return f, nil
	}
	var cmd tea.Cmd
	f.inputs[f.focus], cmd = f.inputs[f.focus].Update(msg)
	f.err = ""
	return f, cmd
}

// submit checks the fields and, when they are right, marks the form done.
func (f quarantineForm) submit() (quarantineForm, tea.Cmd) {
	subject := strings.TrimSpace(f.inputs[fieldSubject].Value())
	if subject == "" {
		f.err = "subject: required"
		return f, f.setFocus(fieldSubject)
	}
	typ := subjectTypes[f.typeIdx]
	if typ == ratelimit.SubjectNetwork || typ == ratelimit.SubjectTeam {
		// Checked here, with the server's own rules, so that a mistyped
		// network never leaves the form; sent in its canonical form.
		canonical, err := validate.Subject(typ, subject)
		if err != nil {
			f.err = err.Error()
			return f, f.setFocus(fieldSubject)
		}
		subject = canonical
	}
	d, err := parseDuration(f.inputs[fieldDuration].Value())
	if err != nil {
		f.err = "duration: " + err.Error()
		return f, f.setFocus(fieldDuration)
	}
	f.request = quarantineRequest{
		SubjectType: typ,
		Subject:     subject,
		Reason:      strings.TrimSpace(f.inputs[fieldReason].Value()),
		For:         d,
	}
	f.state = formSubmitted
	return f, nil
}

// parseDuration reads a quarantine duration: empty for none, Go's
// durations (90s, 30m, 2h30m), or whole days (7d).
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	d, err := cmdutil.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration such as 30m, 2h or 7d", s)
	case d < time.Second:
		return 0, errors.New("must be at least 1s")
	case d > maxQuarantine:
		return 0, errors.New("must be at most 365d (leave empty for until removed)")
	}
	return d, nil
}

// View renders the form as a dialog box.
func (f quarantineForm) View() string {
	st := f.styles
	inner := f.innerWidth()
	label := func(i int, name string) string {
		mark := "  "
		if f.focus == i {
			mark = "> "
		}
		return mark + st.Label.Render(fmt.Sprintf("%-9s", name)) + " "
	}
	var callers, targets []string
	for i, t := range subjectTypes {
		choice := "( ) " + t
		if i == f.typeIdx {
			choice = st.On.Render("(*) " + t)
		}
		if isTargetType(t) {
			targets = append(targets, choice)
		} else {
			callers = append(callers, choice)
		}
	}
	lines := []string{
		st.DialogTitle.Render("Quarantine a caller or a target"),
		"",
		label(fieldType, "type") + st.Dim.Render("callers ") + strings.Join(callers, "  "),
		strings.Repeat(" ", 12) + st.Dim.Render("targets ") + strings.Join(targets, "  "),
		label(fieldSubject, "subject") + f.inputs[fieldSubject].View(),
		label(fieldReason, "reason") + f.inputs[fieldReason].View(),
		label(fieldDuration, "duration") + f.inputs[fieldDuration].View(),
		"",
		st.Dim.Render("←/→ or u/c/n/t/s/a · network: a CIDR such as 10.1.0.0/16"),
		st.Dim.Render("tab next field · enter on the last field submits · esc cancel"),
	}
	// An error is wrapped, not cut: the server's rules name the fix at
	// the end ("write 10.1.2.3/32 for the one address").
	for _, l := range wrapText(clean(f.err), inner, 3) {
		lines = append(lines, st.FormError.Render(l))
	}
	for i, l := range lines {
		lines[i] = truncate(l, inner)
	}
	return st.Dialog.Width(inner + 2).Render(strings.Join(lines, "\n"))
}
