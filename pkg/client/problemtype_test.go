package client

import (
	"errors"
	"testing"
)

// The server's domain refusals, by problem type and status, are the SDK's
// sentinels; the status's sentinel still holds.
func TestProblemTypesAreSentinels(t *testing.T) {
	t.Parallel()
	all := []error{ErrAdminQuarantine, ErrQuarantinedAdmin, ErrAdminCheckFailed, ErrRefused, ErrRoleForbidden,
		ErrForbidden, ErrConflict, ErrUnavailable}
	tests := []struct {
		status int
		kind   string // "" sends no type at all
		want   []error
	}{
		{403, "admin-quarantine", []error{ErrAdminQuarantine, ErrRefused, ErrForbidden}},
		{409, "quarantined", []error{ErrQuarantinedAdmin, ErrConflict}},
		{503, "admin-check-failed", []error{ErrAdminCheckFailed, ErrUnavailable}},
		{403, "forbidden", []error{ErrRoleForbidden, ErrForbidden}},
		{403, "", []error{ErrRoleForbidden, ErrForbidden}},
		// A refusal this SDK does not know yet is still a refusal.
		{403, "disguised-control-plane", []error{ErrRefused, ErrForbidden}},
		// Types mean a domain error only with the status they come with:
		// a quarantined call on /api/validate is a 403, no admin grant.
		{403, "quarantined", []error{ErrRefused, ErrForbidden}},
		{409, "conflict", []error{ErrConflict}},
	}
	for _, tt := range tests {
		e := &APIError{StatusCode: tt.status, Detail: "x"}
		if tt.kind != "" {
			e.Type = ProblemTypeBase + tt.kind
		}
		for _, s := range all {
			want := false
			for _, w := range tt.want {
				want = want || w == s
			}
			if got := errors.Is(e, s); got != want {
				t.Errorf("%d %q: errors.Is(%v) = %v, want %v", tt.status, tt.kind, s, got, want)
			}
		}
	}
}
