package cmdutil

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rlctl/rlctl/internal/validate"
)

// enumAnnotation holds, on a flag, the values it takes.
const enumAnnotation = "rlctl_enum"

// EnumFlag declares that cmd's flag name takes one of allowed: completion
// offers them (unless cmd registered a completion of its own for the flag
// first, as rate-limit set does for --entity-type by --axis) and CheckEnums refuses any other value before anything is
// sent, with the message rlapi gives (internal/validate), so a typo fails
// the same way with rlapi up or down. An empty value passes where the
// flag's default is empty: it is "not given" for filters, and a required
// flag is checked as such.
func EnumFlag(cmd *cobra.Command, name string, allowed ...string) {
	fl := cmd.Flags().Lookup(name)
	if fl == nil {
		fl = cmd.PersistentFlags().Lookup(name)
	}
	if fl == nil {
		panic(fmt.Sprintf("cmdutil: EnumFlag: %s has no flag --%s", cmd.CommandPath(), name))
	}
	if fl.Annotations == nil {
		fl.Annotations = map[string][]string{}
	}
	fl.Annotations[enumAnnotation] = allowed
	_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(allowed, cobra.ShellCompDirectiveNoFileComp))
}

// EnumValues returns the values an enum flag takes, or nil for another
// flag.
func EnumValues(fl *pflag.Flag) []string { return fl.Annotations[enumAnnotation] }

// CheckEnums checks every enum flag given on cmd's command line (each
// element of a list flag); the root runs it before any command.
func CheckEnums(cmd *cobra.Command) error {
	var msgs []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		allowed := EnumValues(fl)
		if allowed == nil {
			return
		}
		values := []string{fl.Value.String()}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			if v = strings.TrimSpace(v); v != "" || fl.DefValue != "" {
				if err := validate.OneOf(flagName(fl), v, allowed); err != nil {
					msgs = append(msgs, err.Error())
					return
				}
			}
		}
	})
	return problems(msgs)
}

// flagName is how messages name a flag: -o for the one-letter flag the
// help shows first, --name otherwise.
func flagName(fl *pflag.Flag) string {
	if fl.Shorthand != "" && fl.Name == "output" {
		return "-" + fl.Shorthand
	}
	return "--" + fl.Name
}

// NothingSent is the usage error of a command line refused before any
// request: err's message, then "nothing was sent".
func NothingSent(err error) error {
	return &FlagError{Err: fmt.Errorf("%w; nothing was sent", err)}
}

// FieldFlags rewrites a validation error of the object a command builds
// from its flags so that each message names the flag instead of the JSON
// field ("--window-seconds: must be ..." for "window_seconds: must be
// ..."), and returns it as a usage error: the command checks with the
// server's own rules (internal/validate) before it sends anything. flags
// maps the fields whose flag is not the field's name with '-' for '_'
// ("kinds" is --kind); a field with no flag of cmd keeps its name.
func FieldFlags(cmd *cobra.Command, err error, flags map[string]string) error {
	var ve *validate.Error
	if !errors.As(err, &ve) {
		return NothingSent(err)
	}
	msgs := make([]string, len(ve.Errors))
	for i, fe := range ve.Errors {
		msgs[i] = fe.Message
		base, index, _ := strings.Cut(fe.Field, "[")
		name, ok := flags[base]
		if !ok {
			name = strings.ReplaceAll(base, "_", "-")
		}
		if cmd.Flags().Lookup(name) == nil || !strings.HasPrefix(fe.Message, fe.Field) {
			continue
		}
		if index != "" {
			index = "[" + index
		}
		msgs[i] = "--" + name + index + fe.Message[len(fe.Field):]
	}
	return problems(msgs)
}

// SubjectFlags is FieldFlags' map for a command whose subject may come
// from --network: a problem of the subject is then one of --network.
func SubjectFlags(cmd *cobra.Command) map[string]string {
	if cmd.Flags().Changed("network") {
		return map[string]string{"subject": "network", "subject_type": "network"}
	}
	return nil
}

// problems is the usage error listing msgs, or nil for none.
func problems(msgs []string) error {
	switch len(msgs) {
	case 0:
		return nil
	case 1:
		return NothingSent(errors.New(msgs[0]))
	}
	return FlagErrorf("%d problems with the command line; nothing was sent:\n  %s", len(msgs), strings.Join(msgs, "\n  "))
}

// FlagParseError rewrites a flag that could not be parsed so the message
// names the flag and the rule, not the parser: "--window-seconds: must
// be a whole number of seconds such as 60 (got "1m")" where pflag says
// `invalid argument "1m" for "--window-seconds" flag: strconv.ParseInt:
// parsing "1m": invalid syntax`. Other errors (an unknown flag, a missing
// value) keep pflag's words, which already say what is wrong. The root
// installs it with SetFlagErrorFunc, so every command gets it.
func FlagParseError(cmd *cobra.Command, err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return &FlagError{Err: fmt.Errorf("%w\nSee '%s --help'", err, cmd.CommandPath())}
	}
	fl, value := ive.GetFlag(), ive.GetValue()
	name := "--" + fl.Name
	var rule string
	switch typ := fl.Value.Type(); {
	case strings.HasPrefix(typ, "int") || strings.HasPrefix(typ, "uint"):
		rule = "must be a whole number such as 100"
		switch {
		case strings.HasSuffix(fl.Name, "-seconds"):
			rule = "must be a whole number of seconds such as 60"
		case strings.HasSuffix(fl.Name, "-version"):
			rule = "must be a whole number, the version shown by get -o wide"
		}
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			rule += ", and not that large"
		}
	case typ == "bool":
		rule = "takes no value, or =true or =false"
	default:
		rule = ive.Unwrap().Error()
		return &FlagError{Err: fmt.Errorf("%s: %s", name, rule)}
	}
	return &FlagError{Err: fmt.Errorf("%s: %s (got %q)", name, rule, value)}
}
