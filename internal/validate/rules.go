package validate

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-playground/validator/v10"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Per-field rules in go-playground/validator syntax. They are built from the
// ratelimit constants so the allowlists cannot drift from the vocabulary.
const (
	axisRule = "oneof=" + ratelimit.AxisCaller + " " + ratelimit.AxisTarget + " " +
		ratelimit.AxisCallerTarget + " " + ratelimit.AxisQuarantine
	entityTypeRule = "oneof=" + ratelimit.EntityGroup + " " + ratelimit.EntityMCPServer + " " +
		ratelimit.EntityA2AAgent + " " + ratelimit.EntityMCPTool + " " + ratelimit.EntityA2ASkill + " " +
		ratelimit.EntityServerGroup + " " + ratelimit.EntityDescriptor
	windowRule = "between=1 86400" // one second up to a full day
	// limitRule caps limits at a billion so a counter can never overflow and
	// a typo of several extra zeros is caught.
	limitRule = "min=1,max=1000000000"
	modeRule  = "oneof=" + ratelimit.ModeEnforce + " " + ratelimit.ModeShadow
	// subjectTypeRule words the refusal of an unknown subject type
	// (normalizeSubject accepts each of them): the message lists every
	// type a membership, a quarantine or an apply takes.
	subjectTypeRule = "oneof=" + ratelimit.SubjectUser + " " + ratelimit.SubjectClient + " " +
		ratelimit.SubjectServer + " " + ratelimit.SubjectAgent + " " + ratelimit.SubjectNetwork + " " +
		ratelimit.SubjectTeam
	// Admins are callers that bypass caller limits; servers and agents are
	// targets and never call, so they cannot be admins.
	adminSubjectTypeRule = "oneof=" + ratelimit.SubjectUser + " " + ratelimit.SubjectClient
	roleRule             = "oneof=" + ratelimit.RoleAdmin + " " + ratelimit.RoleViewer + " " + ratelimit.RoleEnforcer
)

// rules is built once and shared: a validator.Validate caches parsed tags,
// is safe for concurrent use, and is never reconfigured after newRules.
var rules = sync.OnceValue(newRules)

func newRules() *validator.Validate {
	v := validator.New()
	// validator has min and max but no range tag, and "must be between 1 and
	// 86400" tells the user both bounds in one message.
	if err := v.RegisterValidation("between", between); err != nil {
		panic(fmt.Sprintf("validate: register between: %v", err))
	}
	return v
}

// between accepts an integer within the inclusive bounds given as "lo hi".
func between(fl validator.FieldLevel) bool {
	lo, hi := betweenBounds(fl.Param())
	n := fl.Field().Int()
	return n >= lo && n <= hi
}

// betweenBounds panics on a malformed parameter: the parameters are constants
// in this package, so a bad one is a programming error caught by any test.
func betweenBounds(param string) (lo, hi int64) {
	loText, hiText, _ := strings.Cut(param, " ")
	lo, errLo := strconv.ParseInt(loText, 10, 64)
	hi, errHi := strconv.ParseInt(hiText, 10, 64)
	if errLo != nil || errHi != nil {
		panic(fmt.Sprintf("validate: between wants \"lo hi\", got %q", param))
	}
	return lo, hi
}

// check applies one validator rule to value and, when it fails, returns our
// own message for field: validator's default text ("Key: Error:Field
// validation for failed on the oneof tag") names neither the JSON field nor
// the allowed values.
func check(field string, value any, rule string) *FieldError {
	err := rules().Var(value, rule)
	if err == nil {
		return nil
	}
	var failures validator.ValidationErrors
	if !errors.As(err, &failures) || len(failures) == 0 {
		return fieldError(field, "%v", err)
	}
	return fieldError(field, "%s", ruleMessage(failures[0]))
}

func ruleMessage(fe validator.FieldError) string {
	switch fe.Tag() {
	case "oneof":
		return fmt.Sprintf("must be one of %s (got %q)", strings.ReplaceAll(fe.Param(), " ", ", "), fe.Value())
	case "between":
		lo, hi := betweenBounds(fe.Param())
		return fmt.Sprintf("must be between %d and %d (got %v)", lo, hi, fe.Value())
	case "min":
		return fmt.Sprintf("must be >= %s (got %v)", fe.Param(), fe.Value())
	case "max":
		return fmt.Sprintf("must be <= %s (got %v)", fe.Param(), fe.Value())
	default:
		return fmt.Sprintf("fails the %s=%s rule (got %v)", fe.Tag(), fe.Param(), fe.Value())
	}
}

// Axes are the axes a definition takes, for filters that name one.
func Axes() []string { return strings.Fields(strings.TrimPrefix(axisRule, "oneof=")) }

// EntityTypes are the entity types some axis takes, for filters that
// name one.
func EntityTypes() []string {
	var out []string
	for _, axis := range Axes() {
		for _, t := range entityTypesOn(axis) {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// SubjectTypes are the subject types a membership takes, for filters that
// name one.
func SubjectTypes() []string { return strings.Fields(strings.TrimPrefix(subjectTypeRule, "oneof=")) }

// OneOf checks that value is one of allowed, with the message the API gives
// an unknown value of a field or query parameter: "<field>: must be one of
// a, b, c (got "x")". rlctl checks its enum flags with it before it sends
// anything, so the CLI and the server word the refusal alike.
func OneOf(field, value string, allowed []string) error {
	if slices.Contains(allowed, value) {
		return nil
	}
	return &Error{Errors: []FieldError{*fieldError(field, "must be one of %s (got %q)", strings.Join(allowed, ", "), value)}}
}
