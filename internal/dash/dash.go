// Package dash is `rlctl dashboard`: the interactive terminal UI where an
// operator watches and steers rate limits during an incident. It is a Bubble
// Tea program: a root Model (model.go) with one view per tab, a virtualized
// table shared by all of them, and every call to rlapi made in a tea.Cmd
// through pkg/client (commands.go).
package dash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
)

// Options are the inputs of Run.
type Options struct {
	Client API
	// Server and Context are shown in the header.
	Server  string
	Context string
	// Refresh is the background refresh interval (default 2s).
	Refresh time.Duration
	// Timeout bounds each call to the server (default 30s).
	Timeout time.Duration
	// Color turns colour on; off for NO_COLOR and --no-color.
	Color bool
	// In and Out are the terminal; a nil In reads keys from /dev/tty (for
	// when stdin is redirected).
	In  io.Reader
	Out io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Run shows the dashboard on the terminal until the user quits or ctx ends.
func Run(ctx context.Context, opts Options) error {
	// Calls still in flight when the user quits end with Run.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := preflight(ctx, opts); err != nil {
		return err
	}
	m := New(ctx, Config{
		API:     opts.Client,
		Server:  opts.Server,
		Context: opts.Context,
		Refresh: opts.Refresh,
		Timeout: opts.Timeout,
		Now:     opts.Now,
		Styles:  NewStyles(opts.Out, opts.Color),
	})
	input := tea.WithInput(opts.In)
	if opts.In == nil {
		input = tea.WithInputTTY()
	}
	p := tea.NewProgram(m, tea.WithContext(ctx), input, tea.WithOutput(opts.Out), tea.WithAltScreen())
	final, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // interrupted: leave quietly, as q does
	}
	if fm, ok := final.(Model); ok && fm.Err() != nil {
		return fm.Err()
	}
	return err
}

// preflight makes one small request before the screen opens, so that a
// refused token (401) or a role that may not read (403) ends the command
// at once, with rlctl's auth exit code, after a single failed attempt:
// the first refresh would otherwise send one request per view, enough to
// trip rlapi's failed-auth lockout for everyone on this address. Other
// failures (the server is down) are left to the dashboard, which shows
// them and retries.
func preflight(ctx context.Context, opts Options) error {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := opts.Client.ListQuarantine(ctx); isAuthFailure(err) {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}

// minRefresh keeps --refresh from hammering the server.
const minRefresh = 200 * time.Millisecond

// notATerminal is the refusal when stdout is piped or redirected.
const notATerminal = `the dashboard needs a terminal, and stdout is not one.
In scripts, read the same data with the -o json commands:
  rlctl rate-limit list -o json
  rlctl member list -o json
  rlctl quarantine list -o json
  rlctl admin list -o json
  rlctl audit list -o json`

// NewCmdDashboard builds `rlctl dashboard` (alias dash).
func NewCmdDashboard(f *cmdutil.Factory) *cobra.Command {
	var refresh time.Duration
	cmd := &cobra.Command{
		Use:     "dashboard",
		Aliases: []string{"dash"},
		Short:   "Watch and steer limits, memberships and quarantine in a terminal UI",
		Long: `An interactive view of rlapi for incidents: every definition, membership,
quarantined subject, administrator and audit entry, refreshed in the background.

Views (1-6, tab/shift+tab): Limits, Members, Quarantine, Admins, Audit, Incidents.
/ filters as you type (words, or field:value such as group:developers), s sorts,
enter opens details, ? lists every key. Changes (e enable/disable, a quarantine,
d release, t/T switch quarantine off and on) each ask for confirmation and show
the server's answer in the status line. With a viewer token they are hidden.

When the server cannot be reached a banner says so and the dashboard retries with
backoff; the data on screen stays usable and is marked stale. A refused token (401)
or a role that may not read (403) is never retried: the dashboard stops and rlctl
exits 3, so it cannot trip rlapi's failed-auth lockout.

It needs a terminal; in scripts use the -o json commands (rlctl rate-limit list -o json).`,
		Example: `  rlctl dashboard
  rlctl dash --refresh 5s --context prod`,
		GroupID: "core",
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if refresh < minRefresh {
				return cmdutil.FlagErrorf("--refresh: must be at least %s (got %s)", minRefresh, refresh)
			}
			if f.Global.Output != printer.Table {
				return cmdutil.FlagErrorf("the dashboard has no -o; use the list commands for %s output", f.Global.Output)
			}
			ios := f.IOStreams
			if !ios.IsStdoutTTY() {
				return cmdutil.FlagErrorf("%s", notATerminal)
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			in := ios.In
			if !ios.IsStdinTTY() {
				in = nil
			}
			return Run(cmd.Context(), Options{
				Client:  c,
				Server:  c.BaseURL(),
				Context: contextName(f),
				Refresh: refresh,
				Timeout: f.Global.Timeout,
				Color:   ios.ColorEnabled(),
				In:      in,
				Out:     ios.Out,
			})
		},
	}
	cmdutil.DurationVar(cmd.Flags(), &refresh, "refresh", 2*time.Second, "reload the view on screen this often")
	return cmd
}

// contextName is the rlctl context in use, for the header: the one named
// by --context or RLCTL_CONTEXT, else the current one when neither flags
// nor the environment name the server.
func contextName(f *cmdutil.Factory) string {
	if f.Global.Context != "" {
		return f.Global.Context
	}
	if name := f.Getenv("RLCTL_CONTEXT"); name != "" {
		return name
	}
	if f.Global.Server != "" || f.Getenv("RLCTL_SERVER") != "" {
		return ""
	}
	cfg, err := f.Config()
	if err != nil || cfg.Current() == nil {
		return ""
	}
	return cfg.CurrentContext
}
