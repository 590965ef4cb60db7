package validate

import (
	"errors"
	"strings"
	"testing"
)

func ptr(n int) *int { return &n }

// problemsOf returns the field errors in err, failing the test unless err is
// an *Error, and checks what every message promises: it starts with its field
// name and carries none of validator's default text.
func problemsOf(t *testing.T, err error) []FieldError {
	t.Helper()
	var verr *Error
	if !errors.As(err, &verr) {
		t.Fatalf("got error %v (%T), want *validate.Error", err, err)
	}
	if len(verr.Errors) == 0 {
		t.Fatal("got *validate.Error with no field errors")
	}
	for _, fe := range verr.Errors {
		if !strings.HasPrefix(fe.Message, fe.Field) {
			t.Errorf("message %q does not start with its field %q", fe.Message, fe.Field)
		}
		if strings.Contains(fe.Message, "Error:Field") || strings.Contains(fe.Message, "Key: ") {
			t.Errorf("message %q leaks validator's default text", fe.Message)
		}
	}
	return verr.Errors
}

// wantProblem fails unless err reports field with exactly message.
func wantProblem(t *testing.T, err error, field, message string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", message)
	}
	for _, fe := range problemsOf(t, err) {
		if fe.Field == field && fe.Message == message {
			return
		}
	}
	t.Errorf("got %q\nwant field %s with message %q", err, field, message)
}
