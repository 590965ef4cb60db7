package state

import (
	"context"
	"fmt"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/envoyconf"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Export formats.
const (
	formatRlctl = "rlctl"
	formatEnvoy = "envoy-ratelimit"
)

// exportEnvoy writes the descriptor definitions in Envoy's format.
func exportEnvoy(ctx context.Context, opts *ExportOptions) error {
	f := opts.Factory
	c, err := f.Client()
	if err != nil {
		return err
	}
	defs, err := c.ListAllDefinitions(ctx, client.DefinitionFilter{EntityType: ratelimit.EntityDescriptor})
	if err != nil {
		return err
	}
	if opts.Domain != "" {
		kept := defs[:0]
		for _, d := range defs {
			if d.Domain == opts.Domain {
				kept = append(kept, d)
			}
		}
		defs = kept
	}
	out, domains, skipped := envoyconf.Render(defs)
	for _, s := range skipped {
		fmt.Fprintf(f.IOStreams.ErrOut, "left out %s\n", s)
	}
	if opts.Domain != "" && len(domains) == 0 {
		return cmdutil.FlagErrorf("--domain %q: no descriptor definitions of that domain to write", opts.Domain)
	}
	if opts.File == "" {
		_, err = f.IOStreams.Out.Write(out)
		return err
	}
	if err := writeFileAtomic(opts.File, out); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "wrote %s to %s\n", plural(len(domains), "domain"), opts.File)
	return nil
}
