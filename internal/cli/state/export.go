package state

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/internal/statediff"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// ExportOptions are the inputs of export.
type ExportOptions struct {
	Factory *cmdutil.Factory
	// File, when set, receives the document (replaced atomically) instead
	// of stdout.
	File string
	// IncludeQuarantine keeps the quarantine groups and their metadata in
	// the memberships; by default export leaves quarantine out.
	IncludeQuarantine bool
	// Format is rlctl (the apply document, the default) or
	// envoy-ratelimit (the descriptor definitions in the format of
	// Envoy's ratelimit service).
	Format string
	// Domain, with --format envoy-ratelimit, writes that domain only.
	Domain string
}

// NewCmdExport builds `rlctl export`. runF replaces the run function in
// flag-parsing tests.
func NewCmdExport(f *cmdutil.Factory, runF func(*ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "export [--file FILE] [-o yaml|json]",
		Short: "Write the server's whole state as a file apply reads",
		Long: `Write every definition (the quarantine sentinels included), membership and
administrator as one document:

  apiVersion: rlctl/v1
  kind: State
  definitions: [...]
  memberships: [...]
  admins: [...]

Objects are sorted by id and carry no server fields (id, version, timestamps, authors, a
definition's derived scope), so the output is stable and 'rlctl apply -f' of it changes
nothing. The format is YAML unless -o json is given (or --file ends in .json); -o name lists
the objects' names instead.

--format envoy-ratelimit writes the descriptor definitions instead, in the configuration
format of Envoy's ratelimit service (one YAML document per domain, --domain for one): what
'rlctl import envoy-ratelimit' reads. Definitions that format cannot hold (disabled ones,
windows other than a second, minute, hour or day, other algorithms, a fail_policy) are left
out, each named on stderr. Wildcard values are written most literal first, the order rlctl
matches them in: Envoy's service tries them in the order written.

Quarantine is left out: it is incident state, not configuration. Memberships are written
without the quarantine groups (and without quarantine_reason, quarantined_at and
quarantine_expires_at); a subject only in quarantine is not written at all. Applying such a
file leaves quarantine as it is on the server, whatever happened since the export (see
'rlctl apply --help'). --include-quarantine writes it as well, for a backup; applying it
changes quarantine only with 'rlctl apply --quarantine'.

The three lists are read one after another, not as one snapshot: a write landing in between
can show in one and not another. Run it again, or compare with 'rlctl diff -f', when that
matters.`,
		Example: `  rlctl export > state.yaml
  rlctl export -o json --file state.json
  rlctl export --include-quarantine > backup.yaml
  rlctl export --format envoy-ratelimit --domain edge > config/edge.yaml
  rlctl export | rlctl diff -f -      # always exit 0: the server matches its own export`,
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return exportRun(cmd.Context(), opts)
		},
	}
	cmd.GroupID = "state"
	cmd.Flags().StringVar(&opts.File, "file", "", "write to this file (replaced atomically) instead of stdout")
	cmd.Flags().BoolVar(&opts.IncludeQuarantine, "include-quarantine", false, "also write quarantine (the quarantine groups of memberships, with reason and expiry)")
	cmd.Flags().StringVar(&opts.Format, "format", formatRlctl, "rlctl (the apply document) or envoy-ratelimit (the descriptor definitions in Envoy's ratelimit service format, one YAML document per domain)")
	cmd.Flags().StringVar(&opts.Domain, "domain", "", "with --format envoy-ratelimit: only this domain (Envoy's service reads one domain per file)")
	cmdutil.EnumFlag(cmd, "format", formatRlctl, formatEnvoy)
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	return cmd
}

func exportRun(ctx context.Context, opts *ExportOptions) error {
	f := opts.Factory
	switch {
	case opts.Format == formatEnvoy:
		if opts.IncludeQuarantine {
			return cmdutil.FlagErrorf("--include-quarantine: not with --format %s (it holds descriptor definitions only)", formatEnvoy)
		}
		return exportEnvoy(ctx, opts)
	case opts.Format != formatRlctl:
		return cmdutil.FlagErrorf("--format: must be %s or %s (got %q)", formatRlctl, formatEnvoy, opts.Format)
	case opts.Domain != "":
		return cmdutil.FlagErrorf("--domain: only with --format %s", formatEnvoy)
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	cur, err := fetch(ctx, c, true, true, true)
	if err != nil {
		return err
	}
	mems := cur.mems
	if !opts.IncludeQuarantine {
		mems = withoutQuarantine(mems)
	}
	doc := NewDocument(cur.defs, mems, cur.admins)

	var b bytes.Buffer
	switch exportFormat(f.Global.Output, opts.File) {
	case printer.JSON:
		err = doc.WriteJSON(&b)
	case printer.Name:
		err = writeNames(&b, doc)
	default:
		err = doc.WriteYAML(&b)
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if opts.File == "" {
		_, err = f.IOStreams.Out.Write(b.Bytes())
		return err
	}
	if err := writeFileAtomic(opts.File, b.Bytes()); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "wrote %s, %s and %s to %s\n",
		plural(len(doc.Definitions), "definition"), plural(len(doc.Memberships), "membership"), plural(len(doc.Admins), "admin"), opts.File)
	return nil
}

// withoutQuarantine is mems with quarantine left out: the quarantine groups
// and metadata dropped, and the memberships that held nothing else.
func withoutQuarantine(mems []ratelimit.Membership) []ratelimit.Membership {
	out := make([]ratelimit.Membership, 0, len(mems))
	for _, m := range mems {
		var groups []string
		for _, g := range m.Groups {
			if !statediff.IsQuarantineGroup(g) {
				groups = append(groups, g)
			}
		}
		if len(groups) == 0 {
			continue
		}
		m.Groups = groups
		m.QuarantineReason, m.QuarantinedAt, m.QuarantineExpiresAt = "", nil, nil
		out = append(out, m)
	}
	return out
}

// exportFormat is -o, with the table formats (the global default) meaning
// YAML, or JSON for a --file ending in .json.
func exportFormat(output, file string) string {
	switch output {
	case printer.JSON, printer.YAML, printer.Name:
		return output
	}
	if strings.EqualFold(filepath.Ext(file), ".json") {
		return printer.JSON
	}
	return printer.YAML
}

func writeNames(w io.Writer, doc Document) error {
	bw := bufio.NewWriter(w)
	for _, d := range doc.Definitions {
		fmt.Fprintf(bw, "definition/%s\n", d.Key())
	}
	for _, m := range doc.Memberships {
		fmt.Fprintf(bw, "membership/%s\n", m.Key())
	}
	for _, a := range doc.Admins {
		fmt.Fprintf(bw, "admin/%s\n", a.Key())
	}
	return bw.Flush()
}

// writeFileAtomic replaces path with data: a reader sees the old file or
// the new one, never half of one. An existing file keeps its mode; a new
// one is 0644.
func writeFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if info, err := os.Stat(path); err == nil {
		mode = info.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
