package ratelimit_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestSubjectErrorsAreTheirSentinel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err       error
		is, isNot error
		msg       string
	}{
		{ratelimit.AdminQuarantineError("user", "root", 0), ratelimit.ErrAdminQuarantine, ratelimit.ErrQuarantinedAdmin,
			"user:root: administrators cannot be quarantined"},
		{ratelimit.AdminQuarantineError("user", "root", 2), ratelimit.ErrAdminQuarantine, ratelimit.ErrConflict,
			"user:root: administrators cannot be quarantined (and 2 more)"},
		{ratelimit.QuarantinedAdminError("client", "bot"), ratelimit.ErrQuarantinedAdmin, ratelimit.ErrAdminQuarantine,
			"client:bot: a quarantined subject cannot be made an administrator"},
	}
	for _, tt := range tests {
		wrapped := fmt.Errorf("put admin: %w", tt.err)
		if !errors.Is(wrapped, tt.is) || errors.Is(wrapped, tt.isNot) {
			t.Errorf("%v: errors.Is(%v) = %v, errors.Is(%v) = %v", tt.err, tt.is, errors.Is(wrapped, tt.is), tt.isNot, errors.Is(wrapped, tt.isNot))
		}
		if tt.err.Error() != tt.msg {
			t.Errorf("Error() = %q, want %q", tt.err.Error(), tt.msg)
		}
	}
}
