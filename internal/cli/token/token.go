// Package token holds the API token commands: create (the secret is shown
// once), list and revoke.
package token

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// roles are the roles a token can have.
var roles = []string{rl.RoleAdmin, rl.RoleViewer, rl.RoleEnforcer}

// Token states, as the STATE column shows them.
const (
	StateActive  = "active"
	StateExpired = "expired"
	StateRevoked = "revoked"
)

// State says whether a token still authenticates at now.
func State(t rl.Token, now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return StateRevoked
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return StateExpired
	default:
		return StateActive
	}
}

// Columns of a token table; now decides the STATE column.
func Columns(now func() time.Time) []printer.Column[rl.Token] {
	return []printer.Column[rl.Token]{
		{Header: "NAME", Value: func(t rl.Token) string { return t.Name }},
		{Header: "ROLE", Value: func(t rl.Token) string { return t.Role }},
		{Header: "CREATED", Value: func(t rl.Token) string { return printer.Time(&t.CreatedAt) }},
		{Header: "EXPIRES", Value: func(t rl.Token) string { return printer.Time(t.ExpiresAt) }},
		{Header: "LAST-USED", Value: func(t rl.Token) string { return printer.Time(t.LastUsedAt) }},
		{Header: "STATE", Value: func(t rl.Token) string { return State(t, now()) }},
	}
}

func nameOf(t rl.Token) string { return t.Name }

// NewCmdToken builds `rlctl token`.
func NewCmdToken(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "token <command>",
		Aliases: []string{"tokens"},
		Short:   "Manage API tokens (admin role)",
		GroupID: "admin",
	}
	cmd.AddCommand(NewCmdCreate(f, nil), NewCmdList(f, nil), NewCmdRevoke(f, nil))
	return cmd
}

// CreateOptions are the inputs of `token create`.
type CreateOptions struct {
	Factory    *cmdutil.Factory
	Name       string
	Role       string
	ExpiresIn  time.Duration
	OutputFile string
}

// NewCmdCreate builds `token create`.
func NewCmdCreate(f *cmdutil.Factory, runF func(*CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an API token and print its secret, once",
		Long: `Create an API token. The server keeps only a hash: the secret is printed this once,
to stdout, or written to --output-file (mode 0600) so that it never reaches the
terminal or the shell's scrollback.

Roles: admin may do everything, viewer may only read, enforcer may only call the
decision endpoints (gateways).`,
		Example: `  rlctl token create --name ci-deploy --role admin --expires-in 720h --output-file ~/.config/rlctl/ci.token
  rlctl token create --name grafana --role viewer`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.RequireFlags(cmd, "name", "role"); err != nil {
				return err
			}
			if _, err := validate.TokenName(opts.Name); err != nil {
				return cmdutil.FieldFlags(cmd, err, nil)
			}
			if cmd.Flags().Changed("expires-in") && opts.ExpiresIn < time.Second {
				return cmdutil.FlagErrorf("--expires-in: must be at least 1s (got %s)", opts.ExpiresIn)
			}
			if runF != nil {
				return runF(opts)
			}
			return createRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Name, "name", "", "token name, unique; shown as the actor in the audit log")
	fl.StringVar(&opts.Role, "role", "", "admin, viewer or enforcer")
	cmdutil.DurationVar(fl, &opts.ExpiresIn, "expires-in", 0, "expire after this long, e.g. 30d or 720h (default: never)")
	fl.StringVar(&opts.OutputFile, "output-file", "", "write the secret to this file (mode 0600) instead of stdout")
	_ = cmd.MarkFlagFilename("output-file")
	cmdutil.EnumFlag(cmd, "role", roles...)
	_ = cmd.RegisterFlagCompletionFunc("name", cobra.NoFileCompletions)
	return cmd
}

func createRun(ctx context.Context, opts *CreateOptions) error {
	f := opts.Factory
	io := f.IOStreams
	// Prepare the file before asking for the token: a secret the server
	// minted and rlctl could not store would be lost for good.
	var tmp *os.File
	if opts.OutputFile != "" {
		path, err := absPath(opts.OutputFile)
		if err != nil {
			return err
		}
		opts.OutputFile = path
		if tmp, err = os.CreateTemp(filepath.Dir(path), ".rlctl-token-*"); err != nil {
			return fmt.Errorf("--output-file: %w", err)
		}
		defer func() {
			tmp.Close()
			os.Remove(tmp.Name()) // gone already after a successful rename
		}()
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	t, err := c.CreateToken(ctx, client.CreateTokenRequest{Name: opts.Name, Role: opts.Role, ExpiresInSeconds: int(opts.ExpiresIn / time.Second)})
	if err != nil {
		return err
	}
	if tmp != nil {
		if err := writeSecret(tmp, opts.OutputFile, t.Secret); err != nil {
			// Last resort: the secret exists nowhere else.
			fmt.Fprintf(io.ErrOut, "could not write %s; the token is:\n", opts.OutputFile)
			fmt.Fprintln(io.Out, t.Secret)
			return err
		}
	}
	expires := "never expires"
	if t.ExpiresAt != nil {
		expires = "expires " + printer.Time(t.ExpiresAt)
	}
	switch f.Global.Output {
	case printer.JSON, printer.YAML:
		if tmp != nil {
			fmt.Fprintf(io.ErrOut, "Token %q written to %s\n", t.Name, opts.OutputFile)
			return printer.Document(io, f.Global.Output, t.Token, nil)
		}
		return printer.Document(io, f.Global.Output, t, nil)
	}
	if tmp != nil {
		_, err := fmt.Fprintf(io.ErrOut, "Created %s token %q (%s); written to %s\n", t.Role, t.Name, expires, opts.OutputFile)
		return err
	}
	fmt.Fprintf(io.ErrOut, "Created %s token %q (%s). Store it now: it is not shown again.\n", t.Role, t.Name, expires)
	_, err = fmt.Fprintln(io.Out, t.Secret)
	return err
}

// writeSecret fills the temporary file and moves it into place, mode 0600.
func writeSecret(tmp *os.File, path, secret string) error {
	if _, err := tmp.WriteString(secret + "\n"); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

// absPath expands a leading ~/ and makes path absolute.
func absPath(path string) (string, error) {
	if strings.HasPrefix(path, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("--output-file: %w", err)
		}
		path = filepath.Join(home, path[2:])
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("--output-file: %w", err)
	}
	return abs, nil
}

// NewCmdList builds `token list`.
func NewCmdList(f *cmdutil.Factory, runF func(*cmdutil.Factory) error) *cobra.Command {
	return cmdutil.NewCmdList(f, "List API tokens, revoked and expired ones included", `  rlctl token list
  rlctl token list -o json`, listRun, runF)
}

type tokenList struct {
	Tokens []rl.Token `json:"tokens"`
}

func listRun(ctx context.Context, f *cmdutil.Factory) error {
	return cmdutil.RunList(ctx, f, func(ctx context.Context, c *client.Client) ([]rl.Token, error) { return c.ListTokens(ctx) },
		Columns(f.Now), func(tokens []rl.Token) any { return tokenList{tokens} }, "token", nameOf)
}

// RevokeOptions are the inputs of `token revoke`.
type RevokeOptions struct {
	Factory *cmdutil.Factory
	Name    string
	Yes     bool
}

// NewCmdRevoke builds `token revoke`.
func NewCmdRevoke(f *cmdutil.Factory, runF func(*RevokeOptions) error) *cobra.Command {
	opts := &RevokeOptions{Factory: f}
	cmd := &cobra.Command{
		Use:               "revoke NAME",
		Short:             "Revoke an API token: it stops working at once",
		Example:           `  rlctl token revoke ci-deploy --yes`,
		Args:              cmdutil.ExactArgs(1),
		ValidArgsFunction: CompleteTokenNames(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return revokeRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func revokeRun(ctx context.Context, opts *RevokeOptions) error {
	f := opts.Factory
	if err := f.Confirm(opts.Yes, fmt.Sprintf("revoke token %s", opts.Name)); err != nil {
		return err
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	if err := c.RevokeToken(ctx, opts.Name); err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return fmt.Errorf("%w (unknown, or revoked already)", err)
		}
		return err
	}
	switch f.Global.Output {
	case printer.JSON, printer.YAML:
		return printer.Document(f.IOStreams, f.Global.Output, map[string]any{"revoked": true, "name": opts.Name}, nil)
	case printer.Name:
		_, err = fmt.Fprintf(f.IOStreams.Out, "token/%s\n", opts.Name)
		return err
	}
	_, err = fmt.Fprintf(f.IOStreams.Out, "token/%s revoked\n", opts.Name)
	return err
}

// CompleteTokenNames completes the names of live tokens from the server.
func CompleteTokenNames(f *cmdutil.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return cmdutil.CompleteArg(f, func(ctx context.Context, c *client.Client, toComplete string) ([]string, error) {
		tokens, err := c.ListTokens(ctx)
		if err != nil {
			return nil, err
		}
		now := f.Now()
		var out []string
		for _, t := range tokens {
			if State(t, now) == StateRevoked || !strings.HasPrefix(t.Name, toComplete) {
				continue
			}
			out = append(out, t.Name+"\t"+t.Role)
		}
		return out, nil
	})
}
