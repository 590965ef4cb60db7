// Package gen writes what is generated from rlctl's command tree: the
// static shell completion scripts (completions/) and the CLI reference
// (docs/cli/). `make completions` and `make docs` run it through
// cmd/rlctl-gen; a test fails when the checked-in copies are stale.
package gen

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/rlctl/rlctl/internal/cli"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
)

// Completion script file names, as each shell expects to find them.
const (
	BashFile       = "rlctl.bash"
	ZshFile        = "_rlctl"
	FishFile       = "rlctl.fish"
	PowerShellFile = "rlctl.ps1"
)

// Root builds rlctl's command tree as a user sees it, independent of the
// environment, the configuration file and the terminal, so that what is
// generated from it is the same on every machine. The default completion
// command is added, as cobra adds it when rlctl runs.
func Root() *cobra.Command {
	ios, _, _, _ := iostreams.Test()
	root := cli.NewCmdRoot(cmdutil.NewFactory(ios, func(string) string { return "" }))
	root.InitDefaultCompletionCmd()
	return root
}

// Completions writes the static completion scripts for bash, zsh, fish and
// PowerShell into dir, creating it if needed. The scripts call back into
// rlctl (`rlctl __complete ...`) for the words themselves, so they change
// only with the program's name and the cobra version.
func Completions(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("completions: %w", err)
	}
	scripts := []struct {
		name string
		gen  func(io.Writer) error
	}{
		{BashFile, func(w io.Writer) error { return root.GenBashCompletionV2(w, true) }},
		{ZshFile, root.GenZshCompletion},
		{FishFile, func(w io.Writer) error { return root.GenFishCompletion(w, true) }},
		{PowerShellFile, root.GenPowerShellCompletionWithDesc},
	}
	for _, s := range scripts {
		var b bytes.Buffer
		if err := s.gen(&b); err != nil {
			return fmt.Errorf("completions: %s: %w", s.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, s.name), b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("completions: %w", err)
		}
	}
	return nil
}

// IndexFile is the CLI reference's table of contents.
const IndexFile = "README.md"

// Docs writes the CLI reference into dir: one Markdown file per command
// (cobra/doc, without the date stamp, so that regenerating an unchanged
// tree changes nothing) and an index, README.md. Reference files left by
// commands that no longer exist are removed first.
func Docs(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("docs: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(dir, root.Name()+"*.md"))
	if err != nil {
		return fmt.Errorf("docs: %w", err)
	}
	for _, p := range append(old, filepath.Join(dir, IndexFile)) {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("docs: %w", err)
		}
	}
	walk(root, func(c *cobra.Command) { c.DisableAutoGenTag = true })
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return fmt.Errorf("docs: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, IndexFile), index(root), 0o644); err != nil {
		return fmt.Errorf("docs: %w", err)
	}
	return nil
}

// walk calls fn on c and every command under it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// documented reports whether cobra/doc writes a page for c.
func documented(c *cobra.Command) bool {
	return c.IsAvailableCommand() && !c.IsAdditionalHelpTopicCommand()
}

func pageOf(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}

// index renders README.md: the commands by help group, each with its
// subcommands, then the exit codes (a help topic, which cobra/doc skips).
func index(root *cobra.Command) []byte {
	var b bytes.Buffer
	name := root.Name()
	fmt.Fprintf(&b, "# %s command reference\n\n", name)
	fmt.Fprintf(&b, "Generated from the command tree by `make docs` (cmd/rlctl-gen); do not edit by hand.\n")
	fmt.Fprintf(&b, "Every command also prints its own help: `%s <command> --help`.\n\n", name)
	fmt.Fprintf(&b, "[%s](%s): %s\n\n", name, pageOf(root), root.Short)

	groups := append([]*cobra.Group{}, root.Groups()...)
	groups = append(groups, &cobra.Group{ID: "", Title: "Other commands:"})
	for _, g := range groups {
		var cmds []*cobra.Command
		for _, c := range root.Commands() {
			if documented(c) && c.GroupID == g.ID {
				cmds = append(cmds, c)
			}
		}
		if len(cmds) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n", strings.TrimSuffix(g.Title, ":"))
		for _, c := range cmds {
			list(&b, c, 0)
		}
		b.WriteString("\n")
	}

	b.WriteString("## Exit codes\n\n")
	fmt.Fprintf(&b, "`%s help exit-codes`:\n\n```\n%s```\n", name, cmdutil.ExitCodesHelp)
	return b.Bytes()
}

func list(b *bytes.Buffer, c *cobra.Command, depth int) {
	fmt.Fprintf(b, "%s- [%s](%s): %s\n", strings.Repeat("  ", depth), c.CommandPath(), pageOf(c), c.Short)
	for _, sub := range c.Commands() {
		if documented(sub) {
			list(b, sub, depth+1)
		}
	}
}
