package dash

import (
	"io"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Styles is every style the dashboard draws with, in one place. All of them
// come from one lipgloss renderer, so that turning colour off there (NO_COLOR,
// --no-color, tests) turns it off everywhere. Nothing the dashboard shows
// depends on colour alone: the cursor row has a "> " marker, the active tab
// brackets, states are words.
type Styles struct {
	Color bool

	Title     lipgloss.Style // "rlctl dashboard"
	Header    lipgloss.Style // the rest of the header line
	Connected lipgloss.Style
	Lost      lipgloss.Style
	Stale     lipgloss.Style

	TabActive   lipgloss.Style
	TabInactive lipgloss.Style

	Banner lipgloss.Style // connection lost, stale data

	TableHeader lipgloss.Style
	Cursor      lipgloss.Style // the selected row
	Dim         lipgloss.Style // placeholders, counts, hints
	On          lipgloss.Style // enabled, active
	Off         lipgloss.Style // disabled, expired

	FilterPrompt lipgloss.Style

	PaneTitle lipgloss.Style
	Label     lipgloss.Style
	Rule      lipgloss.Style

	StatusOK  lipgloss.Style
	StatusErr lipgloss.Style

	Dialog      lipgloss.Style
	DialogTitle lipgloss.Style
	FormError   lipgloss.Style

	Help help.Styles
}

// NewStyles returns the dashboard's styles for output w; without color
// they render plain text.
func NewStyles(w io.Writer, color bool) Styles {
	r := lipgloss.NewRenderer(w)
	if !color {
		r.SetColorProfile(termenv.Ascii)
	}
	return newStyles(r, color)
}

func newStyles(r *lipgloss.Renderer, color bool) Styles {
	// Plain colours, never lipgloss.AdaptiveColor: deciding between light
	// and dark would query the terminal and wait for its answer.
	var (
		accent = lipgloss.Color("39")  // blue
		green  = lipgloss.Color("42")  // green
		red    = lipgloss.Color("203") // red
		yellow = lipgloss.Color("214") // amber
		grey   = lipgloss.Color("245")
		faint  = lipgloss.Color("240")
	)
	s := Styles{
		Color:     color,
		Title:     r.NewStyle().Bold(true).Foreground(accent),
		Header:    r.NewStyle().Foreground(grey),
		Connected: r.NewStyle().Foreground(green),
		Lost:      r.NewStyle().Foreground(red).Bold(true),
		Stale:     r.NewStyle().Foreground(yellow),

		TabActive:   r.NewStyle().Bold(true).Foreground(accent),
		TabInactive: r.NewStyle().Foreground(grey),

		Banner: r.NewStyle().Bold(true).Foreground(lipgloss.Color("230")).Background(lipgloss.Color("124")),

		TableHeader: r.NewStyle().Bold(true).Foreground(grey),
		Cursor:      r.NewStyle().Bold(true).Foreground(lipgloss.Color("231")).Background(lipgloss.Color("24")),
		Dim:         r.NewStyle().Foreground(faint),
		On:          r.NewStyle().Foreground(green),
		Off:         r.NewStyle().Foreground(red),

		FilterPrompt: r.NewStyle().Foreground(accent),

		PaneTitle: r.NewStyle().Bold(true).Foreground(accent),
		Label:     r.NewStyle().Foreground(grey),
		Rule:      r.NewStyle().Foreground(faint),

		StatusOK:  r.NewStyle().Foreground(green),
		StatusErr: r.NewStyle().Foreground(red).Bold(true),

		Dialog:      r.NewStyle().Border(lipgloss.NormalBorder()).BorderForeground(accent).Padding(0, 1),
		DialogTitle: r.NewStyle().Bold(true),
		FormError:   r.NewStyle().Foreground(red),
	}
	keyStyle := r.NewStyle().Foreground(grey).Bold(true)
	descStyle := r.NewStyle().Foreground(faint)
	sep := r.NewStyle().Foreground(faint)
	s.Help = help.Styles{
		Ellipsis:       sep,
		ShortKey:       keyStyle,
		ShortDesc:      descStyle,
		ShortSeparator: sep,
		FullKey:        keyStyle,
		FullDesc:       descStyle,
		FullSeparator:  sep,
	}
	return s
}
