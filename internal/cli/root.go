// Package cli is rlctl: the root command, the global flags, and the one
// place that prints errors and picks the exit code.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/admin"
	"github.com/rlctl/rlctl/internal/cli/audit"
	"github.com/rlctl/rlctl/internal/cli/authlockout"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/configcmd"
	"github.com/rlctl/rlctl/internal/cli/counters"
	"github.com/rlctl/rlctl/internal/cli/enforcement"
	"github.com/rlctl/rlctl/internal/cli/events"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
	"github.com/rlctl/rlctl/internal/cli/member"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/internal/cli/quarantine"
	"github.com/rlctl/rlctl/internal/cli/ratelimitcmd"
	"github.com/rlctl/rlctl/internal/cli/simulate"
	"github.com/rlctl/rlctl/internal/cli/state"
	"github.com/rlctl/rlctl/internal/cli/status"
	"github.com/rlctl/rlctl/internal/cli/token"
	"github.com/rlctl/rlctl/internal/dash"
	"github.com/rlctl/rlctl/internal/version"
	"github.com/rlctl/rlctl/pkg/client"
)

// Main runs rlctl with the process's arguments and streams and returns the
// exit code.
func Main() int {
	ctx, cancel := signalContext()
	defer cancel()
	return Run(ctx, os.Args[1:], iostreams.System(), os.Getenv)
}

// Run executes one command line; tests call it with buffers.
func Run(ctx context.Context, args []string, io *iostreams.IOStreams, getenv func(string) string) int {
	f := cmdutil.NewFactory(io, getenv)
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return cmdutil.ExitOK
	}
	code := cmdutil.ExitCode(err)
	printError(io, err, code)
	return code
}

// NewCmdRoot builds the whole command tree.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	g := f.Global
	root := &cobra.Command{
		Use:   "rlctl <command> [flags]",
		Short: "Manage rate limits, memberships and quarantine on rlapi",
		Long: `rlctl manages the rate limits that gateways enforce: definitions (who may call how
often), group memberships, quarantine (the kill switch), administrators, tokens and the
audit log. It talks to rlapi only through its API.

The server and token come from --server/--token/--token-file, then RLCTL_SERVER,
RLCTL_TOKEN, RLCTL_TOKEN_FILE, then the current context (rlctl config), then
` + cmdutil.DefaultServer + `.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version.String(),
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckEnums(cmd); err != nil {
				return err
			}
			if g.NoColor {
				f.IOStreams.DisableColor()
			}
			if g.Timeout < 0 {
				return cmdutil.FlagErrorf("--timeout must not be negative")
			}
			return nil
		},
	}
	root.SetFlagErrorFunc(cmdutil.FlagParseError)
	// --version and -v print the first line of rlctl version, not
	// cobra's "rlctl version dev".
	root.SetVersionTemplate(versionLine())
	pf := root.PersistentFlags()
	pf.StringVar(&g.Server, "server", "", "rlapi URL (RLCTL_SERVER; default "+cmdutil.DefaultServer+")")
	pf.StringVar(&g.Server, "registry-url", "", "same as --server (the reference CLI's name)")
	_ = pf.MarkHidden("registry-url")
	pf.StringVar(&g.Token, "token", "", "API token (RLCTL_TOKEN); prefer --token-file")
	pf.StringVar(&g.TokenFile, "token-file", "", "file holding the API token, bare or as JSON (RLCTL_TOKEN_FILE)")
	pf.StringVar(&g.Context, "context", "", "use this context from the config file (RLCTL_CONTEXT)")
	pf.StringVarP(&g.Output, "output", "o", printer.Table, "output format: "+strings.Join(printer.Formats, ", "))
	cmdutil.DurationVar(pf, &g.Timeout, "timeout", 30*time.Second, "give up on a request after this long")
	pf.BoolVar(&g.NoColor, "no-color", false, "no colour in output (also NO_COLOR)")
	pf.BoolVar(&g.Debug, "debug", false, "print each request and response line to stderr (token redacted)")
	cmdutil.EnumFlag(root, "output", printer.Formats...)

	root.AddGroup(
		&cobra.Group{ID: "core", Title: "Rate limits:"},
		&cobra.Group{ID: "admin", Title: "Administration:"},
		&cobra.Group{ID: "state", Title: "Declarative state (CI):"},
		&cobra.Group{ID: "reference", Title: "Reference CLI commands (same flags, no prompts):"},
	)
	root.AddCommand(ratelimitcmd.NewCmdRateLimit(f), member.NewCmdMember(f), quarantine.NewCmdQuarantine(f))
	root.AddCommand(ratelimitcmd.NewFlatCommands(f)...)
	root.AddCommand(member.NewFlatCommands(f)...)
	root.AddCommand(quarantine.NewFlatCommands(f)...)
	root.AddCommand(newCmdExitCodes(), newCmdVersion(f))
	addMoreCommands(root, f)
	_ = root.MarkPersistentFlagFilename("token-file")
	cmdutil.RequireSubcommands(root)
	cmdutil.NoFileCompletion(root)
	return root
}

// addMoreCommands is where further command groups register.
func addMoreCommands(root *cobra.Command, f *cmdutil.Factory) {
	root.AddCommand(admin.NewCmdAdmin(f))
	root.AddCommand(token.NewCmdToken(f))
	root.AddCommand(authlockout.NewCmdAuthLockout(f))
	root.AddCommand(audit.NewCmdAudit(f))
	root.AddCommand(events.NewCmdEvents(f))
	root.AddCommand(status.NewCmdStatus(f, nil))
	root.AddCommand(enforcement.NewCmdEnforcement(f))
	root.AddCommand(configcmd.NewCmdConfig(f))
	root.AddCommand(counters.NewCmdCounters(f))
	root.AddCommand(dash.NewCmdDashboard(f))
	root.AddCommand(state.NewCmdExport(f, nil), state.NewCmdDiff(f, nil), state.NewCmdApply(f, nil))
	root.AddCommand(state.NewCmdImport(f, nil))
	root.AddCommand(simulate.NewCmdSimulate(f, nil))
}

// newCmdExitCodes is a help topic: `rlctl help exit-codes`.
func newCmdExitCodes() *cobra.Command {
	return &cobra.Command{
		Use:   "exit-codes",
		Short: "What rlctl's exit codes mean",
		Long:  cmdutil.ExitCodesHelp,
	}
}

func newCmdVersion(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print rlctl's version and the server's",
		GroupID: "admin",
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			info := map[string]any{"client": version.String()}
			c, err := f.Client()
			if err == nil {
				ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
				defer cancel()
				if v, verr := c.Version(ctx); verr == nil {
					info["server"] = v
				} else {
					info["server_error"] = verr.Error()
				}
			}
			return printer.Document(f.IOStreams, f.Global.Output, info, func() error {
				fmt.Fprint(f.IOStreams.Out, versionLine())
				if v, ok := info["server"].(client.VersionInfo); ok {
					fmt.Fprintf(f.IOStreams.Out, "rlapi %s (schema %d)\n", v.Version, v.SchemaVersion)
				} else if e, ok := info["server_error"]; ok {
					fmt.Fprintf(f.IOStreams.ErrOut, "server: %v\n", e)
				}
				return nil
			})
		},
	}
}

// versionLine is rlctl's version as --version and rlctl version print it.
func versionLine() string { return "rlctl " + version.String() + "\n" }

// printError is the one place errors reach the user: the server's message
// as is, each field error on its own line.
func printError(io *iostreams.IOStreams, err error, code int) {
	var ce *cmdutil.ExitCodeError
	if errors.As(err, &ce) {
		return // the command already said what it had to
	}
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && len(apiErr.Errors) > 1 {
		fmt.Fprintf(io.ErrOut, "Error: %s\n", apiErr.Title)
		for _, fe := range apiErr.Errors {
			fmt.Fprintf(io.ErrOut, "  %s\n", fe.Message)
		}
		return
	}
	fmt.Fprintf(io.ErrOut, "Error: %v\n", err)
	if code == cmdutil.ExitAuth && errors.Is(err, client.ErrUnauthorized) {
		fmt.Fprintln(io.ErrOut, "Hint: pass --token-file, set RLCTL_TOKEN_FILE, or select a context (rlctl config use-context)")
	}
}
