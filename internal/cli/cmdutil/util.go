package cmdutil

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/internal/statediff"
)

// FieldChange is one field that differs between two versions of an object.
type FieldChange = statediff.Change

// Changes compares two objects field by field through their JSON form,
// leaving out the fields the server sets (applydoc.ServerFields); a nil
// before means "did not exist".
func Changes(before, after any) []FieldChange {
	return statediff.JSONFields(before, after, applydoc.ServerFields()...)
}

// FormatValue renders a JSON value for a change line.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "(none)"
	case string:
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// FormatChanges renders changes as "field: from -> to" parts.
func FormatChanges(cs []FieldChange) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s: %s -> %s", c.Field, FormatValue(c.From), FormatValue(c.To))
	}
	return strings.Join(parts, ", ")
}

// IDArg takes an object id from the single positional argument or from
// --id (the reference CLI's spelling), but not both.
func IDArg(args []string, flagID string) (string, error) {
	switch {
	case len(args) == 1 && flagID != "" && args[0] != flagID:
		return "", FlagErrorf("the id is given twice (%q and --id %q)", args[0], flagID)
	case len(args) == 1:
		return args[0], nil
	case flagID != "":
		return flagID, nil
	default:
		return "", FlagErrorf("an id is required: pass it as an argument or with --id")
	}
}

// RequireFlags fails, as a usage error, on the first of names that the
// command line does not set.
func RequireFlags(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		if !cmd.Flags().Changed(name) {
			return FlagErrorf("--%s is required", name)
		}
	}
	return nil
}

// NoArgs and friends wrap cobra's validators so their errors are usage
// errors (exit code 2). ExactArgs says what the command takes, from its
// usage line, where cobra's "accepts 1 arg(s), received 0" does not.
func ExactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == n {
			return nil
		}
		what := "arguments"
		if n == 1 {
			what = "argument"
		}
		return FlagErrorf("%s takes %d %s (got %d): %s", cmd.CommandPath(), n, what, len(args), cmd.UseLine())
	}
}

// MaximumNArgs is cobra.MaximumNArgs as a usage error.
func MaximumNArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.MaximumNArgs(n)(cmd, args); err != nil {
			return &FlagError{Err: err}
		}
		return nil
	}
}

// NoArgs is cobra.NoArgs as a usage error.
func NoArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return &FlagError{Err: err}
	}
	return nil
}

// Flat renames a grouped verb to the reference CLI's flat spelling
// ("rate-limit-set") and files it under the reference group of the help.
func Flat(cmd *cobra.Command, name string) *cobra.Command {
	use := name
	if _, rest, ok := strings.Cut(cmd.Use, " "); ok {
		use += " " + rest
	}
	cmd.Use = use
	cmd.Aliases = nil
	cmd.GroupID = "reference"
	cmd.Short += " (reference CLI spelling)"
	return cmd
}

// RequireSubcommands makes every command under root that only groups
// others (it has subcommands and no Run of its own) refuse an unknown
// subcommand as a usage error (exit 2) with cobra's suggestions, instead of
// printing its help and exiting 0: `rlctl rate-limit lsit` is a typo a
// script must not take for success. Without arguments such a command still
// prints its help.
func RequireSubcommands(root *cobra.Command) {
	if root.HasSubCommands() && !root.Runnable() {
		root.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return UnknownCommandError(cmd, args[0])
		}
		root.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	}
	for _, c := range root.Commands() {
		RequireSubcommands(c)
	}
}

// UnknownCommandError is the usage error for a subcommand cmd does not
// have, with the names it may have meant.
func UnknownCommandError(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return FlagErrorf("%s\n\nRun '%s --help' for usage", msg, cmd.CommandPath())
}

// NetworkSubject applies --network CIDR, the shorthand of --subject-type
// network --subject CIDR: with network set, it fills the two and refuses
// them given as well; without, it requires them as RequireFlags would.
func NetworkSubject(cmd *cobra.Command, network string, subjectType, subject *string) error {
	if !cmd.Flags().Changed("network") {
		return RequireFlags(cmd, "subject-type", "subject")
	}
	if cmd.Flags().Changed("subject-type") || cmd.Flags().Changed("subject") {
		return FlagErrorf("--network is --subject-type network --subject CIDR: give one or the other")
	}
	if strings.TrimSpace(network) == "" {
		return FlagErrorf("--network: must be a network in CIDR form, such as 10.1.0.0/16 or 2001:db8::/48")
	}
	*subjectType, *subject = "network", strings.TrimSpace(network)
	return nil
}
