package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/envoyconf"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// ImportOptions are the inputs of import envoy-ratelimit.
type ImportOptions struct {
	Factory *cmdutil.Factory
	Path    string
	// Apply applies the definitions instead of writing the document.
	Apply bool
	// File, when set, receives the document instead of stdout.
	File string
	// MergeDomains merges a domain found in several files, as Envoy's
	// service does with MERGE_DOMAIN_CONFIG=true (refused without it).
	MergeDomains bool
}

// NewCmdImport builds `rlctl import`, the migrations from other rate-limit
// services' configuration.
func NewCmdImport(f *cmdutil.Factory, runF func(*ImportOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import <format> PATH",
		Short: "Turn another rate-limit service's configuration into definitions",
		Args:  cmdutil.NoArgs,
	}
	cmd.GroupID = "state"
	opts := &ImportOptions{Factory: f}
	envoy := &cobra.Command{
		Use:   "envoy-ratelimit PATH [--apply] [--file FILE]",
		Short: "Import the configuration of Envoy's ratelimit service",
		Long: `Read a file, or a directory of files (*.yaml and *.yml, in name order, not recursively), in
the configuration format of Envoy's reference rate-limit service (github.com/envoyproxy/ratelimit)
and write the descriptor definitions it amounts to as an apply document (rlctl apply -f reads
it), or apply them with --apply.

Every field of that format is read: domain, descriptors (key, value, rate_limit with unit,
requests_per_unit, unlimited, name and replaces, nested descriptors), shadow_mode,
detailed_metric, value_to_metric and share_threshold. Each descriptor with a rate_limit (and
each leaf without one, which Envoy's service leaves unlimited) becomes one definition of
entity type descriptor, named <domain>/<key>[=<value>]... (docs/envoy.md).

A file that is not valid YAML, has an unknown field, a duplicate key, a field of the wrong
type or a field rlctl does not support (quota_mode, metadata) exits 2 naming the file, line
and field, and nothing is written or applied; so does what Envoy's service refuses (a unit
with unlimited: true, an empty replaces name) and what rlctl cannot hold (share_threshold on
one wildcard entry of a path and not on another). A domain in two files (or documents) is
refused, as Envoy's service refuses it by default; --merge-domains merges them, as it does
with MERGE_DOMAIN_CONFIG=true. Files over 32 MiB, alone or together (what one apply may
send), are refused before they are read.

Wildcard values of one key that overlap, given in another order than the most literal
first, print a warning naming file and line: Envoy's service takes the first in the files,
rlctl the most literal (docs/envoy.md). --apply sends one apply (definitions only, nothing
pruned): the server refuses it whole or applies it whole. SIGTERM or Ctrl-C stops it.`,
		Example: `  rlctl import envoy-ratelimit /etc/ratelimit/config > envoy.yaml && rlctl diff -f envoy.yaml
  rlctl import envoy-ratelimit config.yaml --apply`,
		Args: cmdutil.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			if runF != nil {
				return runF(opts)
			}
			return importRun(cmd.Context(), opts)
		},
	}
	envoy.Flags().BoolVar(&opts.Apply, "apply", false, "apply the definitions instead of writing the document")
	envoy.Flags().BoolVar(&opts.MergeDomains, "merge-domains", false, "merge a domain that several files name (Envoy's MERGE_DOMAIN_CONFIG=true); refused without it")
	envoy.Flags().StringVar(&opts.File, "file", "", "write the document to this file (replaced atomically) instead of stdout")
	_ = envoy.MarkFlagFilename("file", "yaml", "yml")
	cmd.AddCommand(envoy)
	return cmd
}

// ReadEnvoy reads the Envoy configuration at path (a file or a directory)
// into definitions, validated as the server validates them; problems name
// file, line and field. Files over the apply's limit are refused before
// any is read. Warnings are what the configuration means otherwise to
// rlctl than to Envoy's service (envoyconf.Loader.Warnings). It stops
// with ctx's error when ctx ends.
func ReadEnvoy(ctx context.Context, path string, opts envoyconf.Options) (defs []ratelimit.Definition, warnings []string, err error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	files := []string{path}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, nil, err
		}
		files = files[:0]
		for _, e := range entries {
			if ext := strings.ToLower(filepath.Ext(e.Name())); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, nil, fmt.Errorf("%s: no *.yaml or *.yml files", path)
		}
	}
	if tooBig := checkSizes(files); len(tooBig) > 0 {
		return nil, nil, &LoadError{Problems: tooBig}
	}
	var probs []string
	where := map[string]string{}
	loader := envoyconf.NewLoader(opts)
	for _, file := range files {
		data, tooBig, err := readFile(file)
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		if tooBig != "" {
			return nil, nil, &LoadError{Problems: []string{tooBig}}
		}
		got, err := loader.Add(ctx, file, data)
		var es envoyconf.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				probs = append(probs, e.Error())
			}
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		kept := got[:0]
		for _, d := range got {
			n, err := validate.Definition(d, validate.Floors{})
			if err != nil {
				probs = append(probs, fmt.Sprintf("%s: descriptor %s: %v", file, d.Name, err))
				continue
			}
			// One path once, whatever its rate: Envoy's service refuses a
			// descriptor that merged files both have.
			if prev, dup := where[n.Name]; dup {
				probs = append(probs, fmt.Sprintf("%s: descriptor %s of domain %s is also in %s", file, n.Name, n.Domain, prev))
				continue
			}
			where[n.Name] = file
			kept = append(kept, n)
		}
		if defs == nil {
			defs = kept
		} else {
			defs = append(defs, kept...)
		}
	}
	if len(probs) > 0 {
		return nil, nil, &LoadError{Problems: probs}
	}
	ws, err := loader.Warnings(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range ws {
		warnings = append(warnings, w.Error())
	}
	return defs, warnings, nil
}

func importRun(ctx context.Context, opts *ImportOptions) error {
	f := opts.Factory
	defs, warnings, err := ReadEnvoy(ctx, opts.Path, envoyconf.Options{MergeDomains: opts.MergeDomains})
	if ctx.Err() != nil {
		return fmt.Errorf("import: %w", errStopped(ctx))
	}
	if err != nil {
		return &cmdutil.FlagError{Err: err}
	}
	for _, w := range warnings {
		fmt.Fprintf(f.IOStreams.ErrOut, "warning: %s\n", w)
	}
	doc := NewDocument(defs, nil, nil)
	defs = nil
	doc.Memberships, doc.Admins = nil, nil
	if !opts.Apply {
		if opts.File == "" {
			if err := doc.WriteYAML(ctxWriter{ctx, f.IOStreams.Out}); err != nil {
				return fmt.Errorf("import: %w", err)
			}
			return nil
		}
		var b bytes.Buffer
		if err := doc.WriteYAML(ctxWriter{ctx, &b}); err != nil {
			return fmt.Errorf("import: %w", err)
		}
		if err := writeFileAtomic(opts.File, b.Bytes()); err != nil {
			return fmt.Errorf("import: %w", err)
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "wrote %s to %s\n", plural(len(doc.Definitions), "definition"), opts.File)
		return nil
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	res, err := c.Apply(ctx, client.State{Definitions: doc.Definitions}, client.ApplyOptions{})
	if err != nil {
		return err
	}
	return printResult(f, res)
}

// ctxWriter stops writing once ctx has ended: writing a large document
// takes longer than reading it, and SIGTERM should stop that too.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, errStopped(c.ctx)
	}
	return c.w.Write(p)
}

func errStopped(ctx context.Context) error {
	return fmt.Errorf("stopped: %w", ctx.Err())
}
