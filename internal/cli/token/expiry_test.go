package token_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
)

// rlctl passes --expires-in to the server, which bounds it at ten years:
// beyond that the command fails naming the field, and nothing is created.
func TestCreateRefusesAnExpiryBeyondTenYears(t *testing.T) {
	h := clitest.StartParallel(t)
	r := h.Run("token", "create", "--name", "forever", "--role", "viewer", "--expires-in", "87601h")
	if r.Code == 0 || !strings.Contains(r.ErrOut, "expires_in_seconds") || !strings.Contains(r.ErrOut, "10 years") {
		t.Errorf("--expires-in 87601h: exit %d, stderr %q; want a failure naming expires_in_seconds and its bound", r.Code, r.ErrOut)
	}
	if strings.Contains(h.Must("token", "list"), "forever") {
		t.Error("the refused token was created")
	}
	h.Must("token", "create", "--name", "decade", "--role", "viewer", "--expires-in", "87600h")
}
