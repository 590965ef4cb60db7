// Package iostreams carries rlctl's input and output, and what it knows
// about them: whether each is a terminal and whether colour is wanted. All
// I/O goes through it so tests can run commands with buffers and choose
// whether they look like a terminal.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams is stdin, stdout and stderr with their terminal state.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY, stdoutTTY bool
	colorDisabled       bool
	termWidth           int
}

// System returns the process's streams. NO_COLOR (any value) turns colour off.
func System() *IOStreams {
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		stdinTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		stdoutTTY: term.IsTerminal(int(os.Stdout.Fd())),
	}
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		s.colorDisabled = true
	}
	if s.stdoutTTY {
		if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			s.termWidth = w
		}
	}
	return s
}

// Test returns streams over buffers, not terminals.
func Test() (s *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut, colorDisabled: true}, in, out, errOut
}

// IsStdoutTTY reports whether stdout is a terminal: tables get a header
// and alignment there, and plain tab-separated rows when piped.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// SetStdoutTTY overrides terminal detection (tests, --no-tty style flags).
func (s *IOStreams) SetStdoutTTY(v bool) { s.stdoutTTY = v }

// IsStdinTTY reports whether stdin is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// SetStdinTTY overrides terminal detection for stdin.
func (s *IOStreams) SetStdinTTY(v bool) { s.stdinTTY = v }

// CanPrompt reports whether the user can answer a question: both stdin and
// stdout are terminals.
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stdoutTTY }

// ColorEnabled reports whether output may carry colour.
func (s *IOStreams) ColorEnabled() bool { return s.stdoutTTY && !s.colorDisabled }

// DisableColor turns colour off (--no-color).
func (s *IOStreams) DisableColor() { s.colorDisabled = true }

// TerminalWidth is stdout's width, 0 when unknown or not a terminal.
func (s *IOStreams) TerminalWidth() int { return s.termWidth }
