package validate

import (
	"strings"
	"testing"
)

func TestTokenName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    string
		message string // empty when accepted
	}{
		{name: "every allowed character", in: "ci@build.prod_v2-a", want: "ci@build.prod_v2-a"},
		{name: "trimmed", in: "  deploy-bot ", want: "deploy-bot"},
		{name: "single character", in: "x", want: "x"},
		{name: "exactly 64 bytes", in: strings.Repeat("t", 64), want: strings.Repeat("t", 64)},
		{name: "empty", in: " ", message: "name: must not be empty"},
		{name: "65 bytes", in: strings.Repeat("t", 65), message: "name: must be at most 64 bytes (got 65)"},
		{name: "space", in: "deploy bot", message: `name: must contain only ASCII letters, digits, '.', '_', '-' and '@' (got "deploy bot")`},
		{name: "colon", in: "ci:prod", message: `name: must contain only ASCII letters, digits, '.', '_', '-' and '@' (got "ci:prod")`},
		{name: "dot segment", in: "..", message: `name: must start with a letter or digit (got "..")`},
		{name: "leading dash", in: "-x", message: `name: must start with a letter or digit (got "-x")`},
		{name: "non-ASCII letter", in: "zoë", message: `name: must contain only ASCII letters, digits, '.', '_', '-' and '@' (got "zoë")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := TokenName(tt.in)
			if tt.message != "" {
				wantProblem(t, err, "name", tt.message)
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("TokenName(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestRole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		role    string
		message string // empty when accepted
	}{
		{role: "admin"},
		{role: "viewer"},
		{role: "enforcer"},
		{role: "", message: `role: must be one of admin, viewer, enforcer (got "")`},
		{role: "Admin", message: `role: must be one of admin, viewer, enforcer (got "Admin")`},
		{role: "root", message: `role: must be one of admin, viewer, enforcer (got "root")`},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			t.Parallel()
			err := Role(tt.role)
			if tt.message == "" {
				if err != nil {
					t.Errorf("Role(%q) = %v, want nil", tt.role, err)
				}
				return
			}
			wantProblem(t, err, "role", tt.message)
		})
	}
}
