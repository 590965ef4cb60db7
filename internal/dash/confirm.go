package dash

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// confirmDialog asks before a mutation is sent: y sends it, n or esc drops
// it. Nothing else closes it, so a stray key cannot confirm.
type confirmDialog struct {
	question string
	details  []string
	act      action
	answer   confirmAnswer
	width    int
	keys     *KeyMap
	styles   *Styles
}

type confirmAnswer int

const (
	confirmPending confirmAnswer = iota
	confirmYes
	confirmNo
)

func newConfirm(act action, keys *KeyMap, styles *Styles) confirmDialog {
	return confirmDialog{question: act.question, details: act.details, act: act, keys: keys, styles: styles}
}

func (c confirmDialog) Init() tea.Cmd { return nil }

func (c *confirmDialog) SetSize(width, _ int) { c.width = width }

// Answer is the user's answer so far.
func (c confirmDialog) Answer() confirmAnswer { return c.answer }

// Action is what the dialog asks about.
func (c confirmDialog) Action() action { return c.act }

func (c confirmDialog) Update(msg tea.Msg) (confirmDialog, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok {
		switch {
		case key.Matches(k, c.keys.Confirm):
			c.answer = confirmYes
		case key.Matches(k, c.keys.Cancel):
			c.answer = confirmNo
		}
	}
	return c, nil
}

func (c confirmDialog) View() string {
	st := c.styles
	inner := max(min(c.width-4, 72), 20)
	lines := []string{st.DialogTitle.Render(truncate(clean(c.question), inner)), ""}
	for _, d := range c.details {
		lines = append(lines, truncate(clean(d), inner))
	}
	if len(c.details) > 0 {
		lines = append(lines, "")
	}
	lines = append(lines, st.Help.ShortKey.Render("y")+" "+st.Help.ShortDesc.Render("yes, send it")+"   "+
		st.Help.ShortKey.Render("n/esc")+" "+st.Help.ShortDesc.Render("no"))
	w := 0
	for _, l := range lines {
		w = max(w, ansi.StringWidth(l))
	}
	return st.Dialog.Width(min(w, inner) + 2).Render(strings.Join(lines, "\n"))
}
