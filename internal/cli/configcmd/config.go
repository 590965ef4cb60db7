// Package configcmd holds `rlctl config`: the named contexts (a server and
// a token file each) in rlctl's configuration file, and which one is in
// use.
package configcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/config"
	"github.com/rlctl/rlctl/internal/cli/printer"
)

// NewCmdConfig builds `rlctl config`.
func NewCmdConfig(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config <command>",
		Short: "Manage contexts: named servers with their token files",
		Long: `Manage contexts. A context is a server URL and the file holding the token for it;
the current context is used when neither flags (--server, --token-file) nor the
environment (RLCTL_SERVER, RLCTL_TOKEN, RLCTL_TOKEN_FILE) say otherwise, and
--context or RLCTL_CONTEXT picks another for one command.

The file is $XDG_CONFIG_HOME/rlctl/config.yaml (~/.config/rlctl/config.yaml), or
RLCTL_CONFIG. It names token files, never tokens.`,
		GroupID: "admin",
	}
	cmd.AddCommand(NewCmdSetContext(f, nil), NewCmdUseContext(f, nil), NewCmdView(f, nil),
		NewCmdCurrentContext(f, nil), NewCmdDeleteContext(f, nil))
	return cmd
}

// SetContextOptions are the inputs of `config set-context`.
type SetContextOptions struct {
	Factory   *cmdutil.Factory
	Name      string
	Server    string
	TokenFile string
	Use       bool
}

// NewCmdSetContext builds `config set-context`.
func NewCmdSetContext(f *cmdutil.Factory, runF func(*SetContextOptions) error) *cobra.Command {
	opts := &SetContextOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "set-context NAME --server URL [--token-file FILE] [--use]",
		Short: "Create or replace a context",
		Long: `Create or replace a context. The token file is stored as an absolute path; it
is read on each command, so rotating the token means replacing the file.`,
		Example: `  rlctl config set-context prod --server https://rlapi.example.com --token-file ~/.config/rlctl/prod.token --use
  rlctl config set-context local --server http://127.0.0.1:8080 --token-file .rl/admin.token`,
		Args:              cmdutil.ExactArgs(1),
		ValidArgsFunction: completeContexts(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if err := checkName(opts.Name); err != nil {
				return err
			}
			if !cmd.Flags().Changed("server") || opts.Server == "" {
				return cmdutil.FlagErrorf("--server is required")
			}
			if err := cmdutil.CheckServer("--server", opts.Server); err != nil {
				return err
			}
			if opts.TokenFile != "" {
				abs, err := absPath(opts.TokenFile)
				if err != nil {
					return cmdutil.FlagErrorf("--token-file: %v", err)
				}
				opts.TokenFile = abs
			}
			if runF != nil {
				return runF(opts)
			}
			return setContextRun(opts)
		},
	}
	// These shadow the global --server and --token-file: here they describe
	// the context being written, not the one used to reach a server.
	fl := cmd.Flags()
	fl.StringVar(&opts.Server, "server", "", "the context's rlapi URL")
	fl.StringVar(&opts.TokenFile, "token-file", "", "file holding the context's token (stored as an absolute path)")
	_ = cmd.MarkFlagFilename("token-file")
	fl.BoolVar(&opts.Use, "use", false, "make it the current context")
	return cmd
}

func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		return cmdutil.FlagErrorf("context name %q: must be non-empty, without spaces", name)
	}
	return nil
}

// absPath expands a leading ~/ and makes path absolute.
func absPath(path string) (string, error) {
	if strings.HasPrefix(path, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		path = filepath.Join(home, path[2:])
	}
	return filepath.Abs(path)
}

func setContextRun(opts *SetContextOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	_, existed := cfg.Contexts[opts.Name]
	cfg.Contexts[opts.Name] = &config.Context{Server: strings.TrimRight(opts.Server, "/"), TokenFile: opts.TokenFile}
	if opts.Use {
		cfg.CurrentContext = opts.Name
	}
	if err := cfg.Save(); err != nil {
		return err
	}
	errOut := f.IOStreams.ErrOut
	if opts.TokenFile != "" {
		if _, err := cmdutil.ReadTokenFile(opts.TokenFile); err != nil {
			fmt.Fprintf(errOut, "Warning: %v\n", err)
		}
	}
	verb := "Created"
	if existed {
		verb = "Replaced"
	}
	fmt.Fprintf(errOut, "%s context %q in %s\n", verb, opts.Name, cfg.File())
	if opts.Use {
		fmt.Fprintf(errOut, "Switched to context %q\n", opts.Name)
	}
	return nil
}

// NameOptions are the inputs of the commands on one context.
type NameOptions struct {
	Factory *cmdutil.Factory
	Name    string
}

// nameCommand builds a command on one existing context: it parses the
// name, loads the file, checks the context exists and hands both to run.
func nameCommand(f *cmdutil.Factory, cmd *cobra.Command, runF func(*NameOptions) error, run func(*config.Config, string) error) *cobra.Command {
	opts := &NameOptions{Factory: f}
	cmd.Args = cmdutil.ExactArgs(1)
	cmd.ValidArgsFunction = completeContexts(f)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts.Name = args[0]
		if runF != nil {
			return runF(opts)
		}
		cfg, err := f.Config()
		if err != nil {
			return err
		}
		if err := known(cfg, opts.Name); err != nil {
			return err
		}
		return run(cfg, opts.Name)
	}
	return cmd
}

// NewCmdUseContext builds `config use-context`.
func NewCmdUseContext(f *cmdutil.Factory, runF func(*NameOptions) error) *cobra.Command {
	return nameCommand(f, &cobra.Command{
		Use:     "use-context NAME",
		Aliases: []string{"use"},
		Short:   "Make a context the current one",
		Example: `  rlctl config use-context prod`,
	}, runF, func(cfg *config.Config, name string) error {
		cfg.CurrentContext = name
		if err := cfg.Save(); err != nil {
			return err
		}
		_, err := fmt.Fprintf(f.IOStreams.ErrOut, "Switched to context %q\n", name)
		return err
	})
}

// known fails with a usage error when the context does not exist.
func known(cfg *config.Config, name string) error {
	if _, ok := cfg.Contexts[name]; ok {
		return nil
	}
	have := "there are none; create one with rlctl config set-context"
	if names := cfg.Names(); len(names) > 0 {
		have = "known: " + strings.Join(names, ", ")
	}
	return cmdutil.FlagErrorf("no context %q in %s (%s)", name, cfg.File(), have)
}

// NewCmdView builds `config view`.
func NewCmdView(f *cmdutil.Factory, runF func(*cmdutil.Factory) error) *cobra.Command {
	return &cobra.Command{
		Use:   "view",
		Short: "Print the configuration file (YAML, or -o json)",
		Example: `  rlctl config view
  rlctl config view -o json`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(f)
			}
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			switch f.Global.Output {
			case printer.JSON:
				return printer.Document(f.IOStreams, printer.JSON, cfg, nil)
			case printer.Name:
				for _, n := range cfg.Names() {
					if _, err := fmt.Fprintf(f.IOStreams.Out, "context/%s\n", n); err != nil {
						return err
					}
				}
				return nil
			}
			return printer.Document(f.IOStreams, printer.YAML, cfg, nil)
		},
	}
}

// NewCmdCurrentContext builds `config current-context`.
func NewCmdCurrentContext(f *cmdutil.Factory, runF func(*cmdutil.Factory) error) *cobra.Command {
	return &cobra.Command{
		Use:   "current-context",
		Short: "Print the name of the current context",
		Args:  cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(f)
			}
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			if cfg.CurrentContext == "" {
				return fmt.Errorf("no current context (rlctl config use-context NAME sets one)")
			}
			_, err = fmt.Fprintln(f.IOStreams.Out, cfg.CurrentContext)
			return err
		},
	}
}

// NewCmdDeleteContext builds `config delete-context`.
func NewCmdDeleteContext(f *cmdutil.Factory, runF func(*NameOptions) error) *cobra.Command {
	return nameCommand(f, &cobra.Command{
		Use:     "delete-context NAME",
		Short:   "Delete a context (its token file is left alone)",
		Example: `  rlctl config delete-context staging`,
	}, runF, func(cfg *config.Config, name string) error {
		delete(cfg.Contexts, name)
		wasCurrent := cfg.CurrentContext == name
		if wasCurrent {
			cfg.CurrentContext = ""
		}
		if err := cfg.Save(); err != nil {
			return err
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "Deleted context %q from %s\n", name, cfg.File())
		if wasCurrent {
			fmt.Fprintln(f.IOStreams.ErrOut, "It was the current context; there is none now (rlctl config use-context NAME)")
		}
		return nil
	})
}

// completeContexts completes context names from the configuration file.
func completeContexts(f *cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cfg, err := f.Config()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var out []string
		for _, n := range cfg.Names() {
			if strings.HasPrefix(n, toComplete) {
				out = append(out, n+"\t"+cfg.Contexts[n].Server)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
