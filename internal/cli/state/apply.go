package state

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/client"
)

// Dry-run modes of apply (kubectl's --dry-run values).
const (
	DryRunNone   = "none"   // apply
	DryRunClient = "client" // diff locally against what the server lists; no apply call
	DryRunServer = "server" // the server runs the apply and rolls it back
)

// ApplyOptions are the inputs of apply and diff.
type ApplyOptions struct {
	Factory *cmdutil.Factory
	Files   []string
	Prune   bool
	DryRun  string
	Yes     bool
	// Diff makes the run diff's: a server dry run that exits
	// cmdutil.ExitChanges when anything would change.
	Diff bool
	// Quarantine lets the apply change quarantine; without it quarantine
	// is left as it is on the server.
	Quarantine bool
}

// filesHelp is the part of the help about -f that apply and diff share.
const filesHelp = `-f takes a file, a directory (its *.yaml, *.yml and *.json files in name order, not
recursively) or - for standard input, and may be repeated. YAML and JSON are told apart by
the extension (stdin: JSON when it starts with '{'). The files are merged: a section
(definitions, memberships, admins) present in any file is present; a section no file has is
left alone on the server. apiVersion (rlctl/v1) and kind (State) are checked when given.
Problems in the files themselves (syntax, unknown fields, duplicate ids within or across
files) are reported together, naming file and field, and exit 2 before anything is sent;
files over 32 MiB, alone or together (what one apply may send), are refused before they are
read.
Objects the server refuses exit 5 and change nothing: the apply is one transaction.

Each object that is (or would be) changed gets one line, then a summary:

  definition/caller:group:devs:60 created
  definition/target:mcp_server:mcpgw:60 configured: max_requests: 500 -> 800
  membership/user:bob deleted
  created 1, updated 1, deleted 1, unchanged 118

Without --prune nothing is deleted. With it, the objects of each present section that the
files do not name are deleted (an empty list, definitions: [], deletes all of that kind);
the two quarantine sentinels are never deleted.

Quarantine is incident state, left as it is unless --quarantine is given, so that CI never
undoes or redoes an incident action: a membership that names no quarantine group keeps the
subject's quarantine (groups, reason, expiry); one that names a quarantine group must match
the server's quarantine, or nothing is applied (exit 5); --prune never releases anyone.
With --quarantine the files decide quarantine too. Quarantine changes get lines of their
own, never "membership/... created":

  quarantine/user:mallory added
  quarantine/server:flaky removed`

// NewCmdApply builds `rlctl apply`. runF replaces the run function in
// flag-parsing tests.
func NewCmdApply(f *cmdutil.Factory, runF func(*ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|- [flags]",
		Short: "Make the server's definitions, memberships and admins match files",
		Long: `Make the server match the desired state in the files, in one server-side transaction:
everything in them is created or updated, or, if any object is invalid or refused, nothing
is. Objects already as desired are not written (their version stays). Applying what
'rlctl export' wrote changes nothing.

` + filesHelp + `
On a terminal, --prune first asks the server what it would delete and asks before deleting
it; off a terminal it needs --yes. (What is deleted is what the real apply finds: a write
landing between the question and the apply can change it.)

--dry-run=server (or plain --dry-run) has the server run the whole apply, its checks
included, and roll it back: the output is what the apply would print. --dry-run=client makes
no apply call: it reads the server's current state, as 'rlctl export' does, and diffs
locally with the same rules; it cannot see what only the server checks (its floors, the
refusal to quarantine an administrator) nor writes landing meanwhile. Dry runs print a note
to stderr and exit 0 whether or not anything would change: 'rlctl diff' is the command
whose exit code says so (6).`,
		Example: `  rlctl export > state.yaml          # the whole state, as a starting point
  rlctl apply -f state.yaml
  rlctl apply -f state/ --prune --yes           # exactly the directory's state, in CI
  rlctl apply -f state/ --dry-run=client       # diff locally, no apply call
  kustomize build . | rlctl apply -f -`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFiles(opts.Files); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return applyRun(cmd.Context(), opts)
		},
	}
	cmd.GroupID = "state"
	addFileFlags(cmd, opts)
	fl := cmd.Flags()
	fl.StringVar(&opts.DryRun, "dry-run", DryRunNone, "none, server (the server applies and rolls back) or client (diff locally, no apply call)")
	fl.Lookup("dry-run").NoOptDefVal = DryRunServer
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask before --prune deletes")
	cmdutil.EnumFlag(cmd, "dry-run", DryRunNone, DryRunServer, DryRunClient)
	return cmd
}

// NewCmdDiff builds `rlctl diff`: apply as a server dry run.
func NewCmdDiff(f *cmdutil.Factory, runF func(*ApplyOptions) error) *cobra.Command {
	opts := &ApplyOptions{Factory: f, Diff: true, DryRun: DryRunServer}
	cmd := &cobra.Command{
		Use:   "diff -f FILE|DIR|- [flags]",
		Short: "Show what apply would change; exit 6 if anything",
		Long: `Show what 'rlctl apply' with the same files and flags would change. It is apply run by the
server in a transaction it rolls back, so the report includes everything the server checks;
nothing is written.

` + filesHelp + `

Exit codes: 0 when the server already matches the files, 6 when anything would change,
another code on error (see 'rlctl help exit-codes'). In CI:

  rlctl diff -f state/                     # fail the job on drift (6) or on an error
  rlctl diff -f state/ || [ $? -eq 6 ]     # show the plan; fail only on an error

-o json prints the server's report (created, updated, deleted, unchanged and changes).`,
		Example: `  rlctl diff -f state.yaml
  rlctl diff -f state/ --prune
  rlctl export | rlctl diff -f -           # always in sync: exit 0`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFiles(opts.Files); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return applyRun(cmd.Context(), opts)
		},
	}
	cmd.GroupID = "state"
	addFileFlags(cmd, opts)
	return cmd
}

func addFileFlags(cmd *cobra.Command, opts *ApplyOptions) {
	fl := cmd.Flags()
	fl.StringArrayVarP(&opts.Files, "filename", "f", nil, "state file, directory or - for stdin (repeatable)")
	fl.BoolVar(&opts.Prune, "prune", false, "also delete the objects of each present section that the files do not name")
	fl.BoolVar(&opts.Quarantine, "quarantine", false, "let the files change quarantine (put subjects in, release them); without it quarantine is left alone")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
}

func checkFiles(files []string) error {
	if len(files) == 0 {
		return cmdutil.FlagErrorf("-f is required: a state file, a directory of them, or - for stdin")
	}
	return nil
}

// applyRun is apply, its dry runs and diff: one path that gets an
// ApplyResult from the server (or, for the client dry run, from planLocal)
// and prints it.
func applyRun(ctx context.Context, opts *ApplyOptions) error {
	f := opts.Factory
	l, err := Load(opts.Files, f.IOStreams.In)
	if err != nil {
		return &cmdutil.FlagError{Err: err}
	}
	ask := opts.Prune && opts.DryRun == DryRunNone && !opts.Yes
	if ask && !f.IOStreams.CanPrompt() {
		return f.Confirm(false, "apply --prune (it deletes what the files do not name)")
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	state := l.Doc.State()
	var res client.ApplyResult
	switch opts.DryRun {
	case DryRunClient:
		cur, err := fetch(ctx, c, state.Definitions != nil, state.Memberships != nil, state.Admins != nil)
		if err != nil {
			return err
		}
		res, err = planLocal(l, cur, opts.Prune, opts.Quarantine, f.Now())
		var ve *validate.Error
		if errors.As(err, &ve) {
			fmt.Fprintln(f.IOStreams.ErrOut, "Error: invalid state (client dry run); nothing was sent")
			for _, fe := range ve.Errors {
				fmt.Fprintf(f.IOStreams.ErrOut, "  %s\n", fe.Message)
			}
			return &cmdutil.ExitCodeError{Code: cmdutil.ExitRefused}
		}
		if err != nil {
			return err
		}
	case DryRunServer:
		if res, err = c.Apply(ctx, state, client.ApplyOptions{Prune: opts.Prune, Quarantine: opts.Quarantine, DryRun: true}); err != nil {
			return l.explain(err)
		}
	default:
		if ask {
			preview, err := c.Apply(ctx, state, client.ApplyOptions{Prune: true, Quarantine: opts.Quarantine, DryRun: true})
			if err != nil {
				return l.explain(err)
			}
			if preview.Deleted+preview.Released > 0 {
				if err := f.Confirm(false, pruneQuestion(preview)); err != nil {
					return err
				}
			}
		}
		if res, err = c.Apply(ctx, state, client.ApplyOptions{Prune: opts.Prune, Quarantine: opts.Quarantine}); err != nil {
			return l.explain(err)
		}
	}
	if err := printResult(f, res); err != nil {
		return err
	}
	switch {
	case opts.Diff:
		if res.Changed() {
			return &cmdutil.ExitCodeError{Code: cmdutil.ExitChanges}
		}
	case opts.DryRun == DryRunServer:
		fmt.Fprintln(f.IOStreams.ErrOut, "(server dry run: nothing was changed)")
	case opts.DryRun == DryRunClient:
		fmt.Fprintln(f.IOStreams.ErrOut, "(client dry run: computed locally from the server's current state, without the server's own checks; nothing was changed)")
	}
	return nil
}

// pruneQuestion says what a pruning apply would delete, by kind.
func pruneQuestion(preview client.ApplyResult) string {
	counts := map[string]int{}
	for _, ch := range preview.Changes {
		if ch.Action == client.ActionDelete {
			counts[ch.ResourceType]++
		}
	}
	release := ""
	if preview.Released > 0 {
		release = fmt.Sprintf(", release %s from quarantine,", plural(preview.Released, "subject"))
	}
	var parts []string
	for _, kind := range []string{"definition", "membership", "admin"} {
		if n := counts[kind]; n > 0 {
			parts = append(parts, plural(n, kind))
		}
	}
	return fmt.Sprintf("delete %s not named in the files (%s)%s and apply the rest (created %d, updated %d)",
		plural(preview.Deleted, "object"), strings.Join(parts, ", "), release, preview.Created, preview.Updated)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// explain names, in the server's field errors, the file each object came
// from: the server counts places in the merged request.
func (l *Loaded) explain(err error) error {
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || len(apiErr.Errors) == 0 {
		return err
	}
	for i, fe := range apiErr.Errors {
		apiErr.Errors[i].Message = l.annotate(fe.Field, fe.Message)
	}
	if len(apiErr.Errors) == 1 {
		apiErr.Detail = apiErr.Errors[0].Message
	}
	return err
}

// Past tenses of the actions, as the per-object lines print them.
var verbs = map[string]string{
	client.ActionCreate:           "created",
	client.ActionUpdate:           "configured",
	client.ActionDelete:           "deleted",
	client.ActionQuarantineAdd:    "added",
	client.ActionQuarantineRemove: "removed",
}

// printResult writes an ApplyResult: one line per changed object and the
// summary, or the result itself for -o json|yaml, or the changed objects'
// names for -o name.
func printResult(f *cmdutil.Factory, res client.ApplyResult) error {
	io := f.IOStreams
	if res.Changes == nil {
		res.Changes = []client.ApplyChange{}
	}
	switch f.Global.Output {
	case printer.JSON, printer.YAML:
		return printer.Document(io, f.Global.Output, res, nil)
	}
	w := bufio.NewWriter(io.Out)
	if f.Global.Output == printer.Name {
		for _, ch := range res.Changes {
			fmt.Fprintf(w, "%s/%s\n", ch.ResourceType, ch.ID)
		}
		return w.Flush()
	}
	styles := map[string]lipgloss.Style{}
	if io.ColorEnabled() {
		styles[client.ActionCreate] = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
		styles[client.ActionUpdate] = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
		styles[client.ActionDelete] = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
		styles[client.ActionQuarantineAdd] = lipgloss.NewStyle().Foreground(lipgloss.Color("1"))
		styles[client.ActionQuarantineRemove] = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	}
	for _, ch := range res.Changes {
		verb := verbs[ch.Action]
		if verb == "" {
			verb = ch.Action
		}
		if st, ok := styles[ch.Action]; ok {
			verb = st.Render(verb)
		}
		fmt.Fprintf(w, "%s/%s %s", ch.ResourceType, ch.ID, verb)
		if len(ch.Fields) > 0 {
			// The API's field changes are statediff's (pkg/wire's Change).
			fmt.Fprintf(w, ": %s", cmdutil.FormatChanges(ch.Fields))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "created %d, updated %d, deleted %d, unchanged %d", res.Created, res.Updated, res.Deleted, res.Unchanged)
	if res.Quarantined+res.Released > 0 {
		fmt.Fprintf(w, "; quarantine: added %d, removed %d", res.Quarantined, res.Released)
	}
	fmt.Fprintln(w)
	return w.Flush()
}
