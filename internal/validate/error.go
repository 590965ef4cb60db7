package validate

import (
	"errors"
	"fmt"
	"strings"
)

// FieldError is one problem with one field.
type FieldError struct {
	// Field is the JSON name of the field at fault, with an index for list
	// elements: "user_max_requests", "members[2]", "groups[0]".
	Field string `json:"field"`
	// Message is complete on its own and begins with the field name, so it
	// can be shown without Field (as the CLI does) or next to it (as the API's
	// problem details do).
	Message string `json:"message"`
}

// Error reports every problem found in one value.
type Error struct {
	Errors []FieldError `json:"errors"`
}

// Error joins the messages; each already names its field.
func (e *Error) Error() string {
	messages := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		messages[i] = fe.Message
	}
	return strings.Join(messages, "; ")
}

// Under places the problems of err, found in one element of a list, under
// that element's path ("definitions[3]"): each field becomes
// "definitions[3].name" and each message begins with it. An err that is not
// an *Error becomes one problem of path itself.
func Under(path string, err error) []FieldError {
	var ve *Error
	if !errors.As(err, &ve) {
		return []FieldError{{Field: path, Message: path + ": " + err.Error()}}
	}
	out := make([]FieldError, len(ve.Errors))
	for i, fe := range ve.Errors {
		field, msg := path, fe.Message
		if fe.Field != "" {
			field = path + "." + fe.Field
		}
		if fe.Field != "" && strings.HasPrefix(msg, fe.Field) {
			msg = field + msg[len(fe.Field):]
		} else {
			msg = field + ": " + msg
		}
		out[i] = FieldError{Field: field, Message: msg}
	}
	return out
}

// problems collects FieldErrors so a check can report everything at once
// instead of stopping at the first mistake.
type problems []FieldError

func (p *problems) add(fe *FieldError) {
	if fe != nil {
		*p = append(*p, *fe)
	}
}

// err returns nil, not a nil *Error, when there is nothing to report, so
// callers can compare the result with nil.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &Error{Errors: p}
}

// fieldError builds a FieldError whose message is "<field>: <detail>".
func fieldError(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}
}

// single turns the result of one normalizer into the exported (value, error)
// form.
func single(value string, fe *FieldError) (string, error) {
	if fe != nil {
		return "", &Error{Errors: []FieldError{*fe}}
	}
	return value, nil
}
