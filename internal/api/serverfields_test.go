package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
)

// A dry run's changes leave out every field the server sets
// (applydoc.ServerFields): granting an administrator reports its subject
// and note, not the created_by the server stamps (rlctl's change lines
// already left it out; the two lists disagreed).
func TestDryRunChangesLeaveOutServerFields(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	a := send(t, http.DefaultClient, env.URL, call{method: "PUT", path: "/api/rate-limit-admins/user:alice?dry_run=true",
		token: env.AdminToken, body: `{"note":"on call"}`})
	if a.status != http.StatusOK {
		t.Fatalf("dry run: %d %s", a.status, a.body)
	}
	changes, _ := a.json(t)["changes"].([]any)
	var fields []string
	for _, c := range changes {
		fields = append(fields, c.(map[string]any)["field"].(string))
	}
	if got := strings.Join(fields, ","); got != "note,subject,subject_type" {
		t.Errorf("changes name %q, want note,subject,subject_type", got)
	}
}
