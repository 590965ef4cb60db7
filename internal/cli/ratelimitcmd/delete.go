package ratelimitcmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// NewCmdDelete builds `rate-limit delete`. The grouped command asks for
// confirmation (or --yes); the reference's flat rate-limit-delete does not,
// so ported scripts keep working.
func NewCmdDelete(f *cmdutil.Factory, flat bool, runF func(*IDOptions) error) *cobra.Command {
	cmd, opts := idCommand(f, "delete", "Delete a rate-limit definition",
		"  rlctl rate-limit delete caller:group:developers:60 --yes", deleteRun, runF)
	cmdutil.DeleteFlags(cmd, opts, flat)
	return cmd
}

func deleteRun(ctx context.Context, opts *IDOptions) error {
	return cmdutil.DeleteRun(ctx, opts, "definition", (*client.Client).DeleteDefinition)
}

// NewCmdEnable builds `rate-limit enable`.
func NewCmdEnable(f *cmdutil.Factory, runF func(*IDOptions) error) *cobra.Command {
	cmd, opts := idCommand(f, "enable", "Enable a rate-limit definition in place",
		"  rlctl rate-limit enable caller:group:developers:60", func(ctx context.Context, o *IDOptions) error {
			return setEnabled(ctx, o, true)
		}, runF)
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show what would change, changing nothing")
	return cmd
}

// NewCmdDisable builds `rate-limit disable`. Disabling a quarantine
// sentinel turns that half of quarantine off for everyone, so the grouped
// command asks first (or takes --yes); the reference's flat
// rate-limit-disable does not ask.
func NewCmdDisable(f *cmdutil.Factory, flat bool, runF func(*IDOptions) error) *cobra.Command {
	cmd, opts := idCommand(f, "disable", "Disable a rate-limit definition in place",
		`  rlctl rate-limit disable caller:group:developers:60
  # turn caller quarantine off for everyone, keeping the list
  rlctl rate-limit disable quarantine:group:quarantine-callers:1`, func(ctx context.Context, o *IDOptions) error {
			if rl.IsSentinel(o.ID) && !o.Flat && !o.DryRun {
				if err := f.Confirm(o.Yes, fmt.Sprintf("disable %s, turning %s quarantine off for every subject", o.ID, sentinelScope(o.ID))); err != nil {
					return err
				}
			}
			return setEnabled(ctx, o, false)
		}, runF)
	opts.Flat = flat
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "show what would change, changing nothing")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation (asked only for a quarantine sentinel)")
	return cmd
}

// sentinelScope is the half of quarantine a sentinel switches.
func sentinelScope(id string) string {
	if id == rl.SentinelTargets {
		return "target"
	}
	return "caller"
}

func setEnabled(ctx context.Context, opts *IDOptions, enabled bool) error {
	f := opts.Factory
	c, err := f.Client()
	if err != nil {
		return err
	}
	before, err := c.GetDefinition(ctx, opts.ID)
	if err != nil {
		return err
	}
	after, _, err := c.SetDefinitionEnabled(ctx, opts.ID, enabled, client.WriteOptions{DryRun: opts.DryRun})
	if err != nil {
		return err
	}
	if opts.DryRun {
		after.Enabled = enabled
	}
	return PrintOutcome(f, "definition", opts.ID, before, after, false, opts.DryRun)
}
