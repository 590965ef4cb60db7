// Package enforcement holds `rlctl enforcement`: the master switch that
// turns enforcement off, or back on, for every replica at once.
package enforcement

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// NewCmdEnforcement builds `rlctl enforcement`.
func NewCmdEnforcement(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "enforcement <command>",
		Short: "Show or flip the master switch: enforcement on or off for every gateway at once",
		Long: `The master switch (the reference's RATE_LIMITING_ENABLED). Off, every enforcer on the
database (every rlapi replica and every gateway that embeds pkg/enforce) allows every
call and counts nothing, quarantine included, within a second. Use it when the limiter
itself misbehaves mid-incident; turn it back on when it is fixed. Every switch is in
the audit log with its reason.

rlapi's --enforcement (RLAPI_ENFORCEMENT) only gives the switch its value while nothing
has set it; once set here, the stored value wins over every restart.`,
		GroupID: "admin",
	}
	cmd.AddCommand(NewCmdStatus(f, nil), NewCmdSet(f, false, nil), NewCmdSet(f, true, nil))
	return cmd
}

// StatusOptions are the inputs of `enforcement status`.
type StatusOptions struct {
	Factory *cmdutil.Factory
}

// NewCmdStatus builds `enforcement status`.
func NewCmdStatus(f *cmdutil.Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{Factory: f}
	return &cobra.Command{
		Use:     "status",
		Short:   "Show whether enforcement is on, who switched it last and why",
		Example: "  rlctl enforcement status\n  rlctl enforcement status -o json",
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			e, err := c.GetEnforcement(cmd.Context())
			if err != nil {
				return err
			}
			return write(f, e)
		},
	}
}

// SetOptions are the inputs of `enforcement on` and `enforcement off`.
type SetOptions struct {
	Factory   *cmdutil.Factory
	Enabled   bool
	Reason    string
	Yes       bool
	DryRun    bool
	IfVersion int64
}

// NewCmdSet builds `enforcement on` (enabled) or `enforcement off`.
func NewCmdSet(f *cmdutil.Factory, enabled bool, runF func(*SetOptions) error) *cobra.Command {
	opts := &SetOptions{Factory: f, Enabled: enabled}
	cmd := &cobra.Command{
		Use:   "on",
		Short: "Turn enforcement back on for every gateway",
		Long: `Turn enforcement back on: limits and quarantine apply again on every replica within a
second. Calls allowed while it was off were not counted.`,
		Example: `  rlctl enforcement on --reason "limiter fixed (INC-42)"`,
		Args:    cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !opts.Enabled && opts.Reason == "" {
				return cmdutil.FlagErrorf("--reason is required: say why enforcement goes off (it is kept in the audit log)")
			}
			if runF != nil {
				return runF(opts)
			}
			return setRun(cmd.Context(), opts)
		},
	}
	if !enabled {
		cmd.Use = "off"
		cmd.Short = "Turn enforcement off for every gateway: allow every call, count nothing"
		cmd.Long = `Turn enforcement off for every replica within a second: every call is allowed and
nothing is counted, quarantine included, until 'rlctl enforcement on'. It asks first on a
terminal; scripts must pass --yes. --reason is required and kept in the audit log.`
		cmd.Example = `  rlctl enforcement off --reason "counter store overloaded (INC-42)"
  rlctl enforcement off --reason "INC-42" --yes`
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Reason, "reason", "", "why (kept in the audit log; at most 500 characters)")
	// on never asks; it takes --yes too, so scripts can pass it to both.
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what would change, changing nothing")
	fl.Int64Var(&opts.IfVersion, "if-version", 0, "change only if the switch is still at this version (see status)")
	return cmd
}

func setRun(ctx context.Context, opts *SetOptions) error {
	f := opts.Factory
	if !opts.Enabled && !opts.DryRun {
		if err := f.Confirm(opts.Yes, "turn enforcement off for every gateway (every call allowed, nothing counted)"); err != nil {
			return err
		}
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	e, rep, err := c.SetEnforcement(ctx, opts.Enabled, opts.Reason, client.WriteOptions{DryRun: opts.DryRun, IfVersion: opts.IfVersion})
	if err != nil {
		return err
	}
	if rep != nil {
		return printer.Document(f.IOStreams, f.Global.Output, rep, func() error {
			verb := "would change"
			if !rep.Changed() {
				verb = "would not change (already " + onOff(opts.Enabled) + ")"
			}
			_, err := fmt.Fprintf(f.IOStreams.Out, "enforcement %s: %s\n", onOff(opts.Enabled), verb)
			return err
		})
	}
	if f.Global.Output == printer.Table {
		msg := "enforcement is on: limits and quarantine apply on every replica within a second"
		if !e.Enabled {
			msg = "enforcement is OFF: every replica allows every call and counts nothing within a second; 'rlctl enforcement on' restores it"
		}
		fmt.Fprintln(f.IOStreams.ErrOut, msg)
	}
	return write(f, e)
}

func write(f *cmdutil.Factory, e rl.Enforcement) error {
	return printer.Document(f.IOStreams, f.Global.Output, e, func() error {
		if f.Global.Output == printer.Name {
			_, err := fmt.Fprintln(f.IOStreams.Out, onOff(e.Enabled))
			return err
		}
		state := onOff(e.Enabled)
		if !e.Enabled {
			state = "OFF (every call allowed, nothing counted)"
		}
		setBy, version := e.UpdatedBy, strconv.FormatInt(e.Version, 10)
		if e.Version == 0 {
			setBy, version = "never set (default)", "0"
		}
		lines := [][2]string{
			{"Enforcement", state},
			{"Reason", dash(e.Reason)},
			{"Set by", dash(setBy)},
			{"Set at", printer.Time(e.UpdatedAt)},
			{"Version", version},
		}
		for _, l := range lines {
			if _, err := fmt.Fprintf(f.IOStreams.Out, "%-13s%s\n", l[0]+":", l[1]); err != nil {
				return err
			}
		}
		return nil
	})
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
