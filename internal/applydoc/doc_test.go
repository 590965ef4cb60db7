package applydoc_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// NewDocument leaves out every field of ServerFields: the one list and
// what export writes agree.
func TestNewDocumentLeavesOutServerFields(t *testing.T) {
	t.Parallel()
	now := time.Now()
	limit := 5
	doc := applydoc.NewDocument(
		[]ratelimit.Definition{{ID: "x", Version: 3, Axis: "caller", EntityType: "group", Name: "g", WindowSeconds: 60,
			UserMaxRequests: &limit, CreatedAt: &now, UpdatedAt: &now, UpdatedBy: "me"}},
		[]ratelimit.Membership{{ID: "user:a", Version: 2, SubjectType: "user", Subject: "a", Groups: []string{"g"}, CreatedAt: &now, UpdatedAt: &now}},
		[]ratelimit.Admin{{SubjectType: "user", Subject: "root", CreatedAt: &now, CreatedBy: "me"}})
	objects := []any{doc.Definitions[0], doc.Memberships[0], doc.Admins[0]}
	for _, o := range objects {
		raw, _ := json.Marshal(o)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		for k := range m {
			if slices.Contains(applydoc.ServerFields(), k) {
				t.Errorf("%T keeps the server's %s: %s", o, k, raw)
			}
		}
	}
}
