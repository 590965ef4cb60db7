package ratelimitcmd

import (
	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
)

// NewCmdRateLimit builds `rlctl rate-limit` and its verbs.
func NewCmdRateLimit(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "rate-limit <command>",
		Aliases: []string{"ratelimit", "rl"},
		Short:   "Manage rate-limit definitions",
		GroupID: "core",
	}
	cmd.AddCommand(NewCmdSet(f, nil), NewCmdList(f, nil), NewCmdGet(f, nil), NewCmdDelete(f, false, nil),
		NewCmdEnable(f, nil), NewCmdDisable(f, false, nil), NewCmdStatus(f, nil))
	return cmd
}

// NewFlatCommands builds the reference CLI's flat spellings
// (rate-limit-set, ...), each the same implementation as its grouped verb.
func NewFlatCommands(f *cmdutil.Factory) []*cobra.Command {
	return []*cobra.Command{
		cmdutil.Flat(NewCmdSet(f, nil), "rate-limit-set"),
		cmdutil.Flat(NewCmdList(f, nil), "rate-limit-list"),
		cmdutil.Flat(NewCmdGet(f, nil), "rate-limit-get"),
		cmdutil.Flat(NewCmdDelete(f, true, nil), "rate-limit-delete"),
		cmdutil.Flat(NewCmdEnable(f, nil), "rate-limit-enable"),
		cmdutil.Flat(NewCmdDisable(f, true, nil), "rate-limit-disable"),
		cmdutil.Flat(NewCmdStatus(f, nil), "rate-limit-status"),
	}
}
