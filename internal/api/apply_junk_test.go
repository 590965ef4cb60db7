package api_test

import (
	"fmt"
	"strings"
	"testing"
)

// junkApply is {"definitions":[1,1,...]} with n elements, 2n+17 bytes.
func junkApply(n int) string {
	return `{"definitions":[` + strings.TrimSuffix(strings.Repeat("1,", n), ",") + `]}`
}

// An apply of junk lists the first 100 problems and counts the rest; it
// used to keep (and answer) an error per element: 95 MB for a 2 MB body,
// after peaking the server at 928 MB.
func TestApplyOfJunkListsAtMost100Problems(t *testing.T) {
	t.Parallel()
	_, env := newClient(t)
	badDef := `{"axis":"caller","entity_type":"group","name":"g%d","window_seconds":0,"user_max_requests":50}`
	var invalid []string
	for i := range 250 {
		invalid = append(invalid, fmt.Sprintf(badDef, i))
	}
	cases := []struct {
		name, body string
		total      int
	}{
		{"a million elements of the wrong type (2 MB)", junkApply(1_000_000), 1_000_000},
		{"250 definitions that fail validation", `{"definitions":[` + strings.Join(invalid, ",") + `]}`, 250},
		{"problems of every section", `{"memberships":[` + strings.TrimSuffix(strings.Repeat(`{"subject":1},`, 150), ",") +
			`],"admins":[` + strings.TrimSuffix(strings.Repeat(`7,`, 30), ",") + `]}`, 180},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, out := postApply(t, env, "", c.body)
			if status != 400 {
				t.Fatalf("status %d, want 400", status)
			}
			errs, _ := out["errors"].([]any)
			if len(errs) != 100 {
				t.Errorf("%d errors listed, want the first 100", len(errs))
			}
			if got := out["errors_omitted"]; got != float64(c.total-100) {
				t.Errorf("errors_omitted %v, want %d", got, c.total-100)
			}
			detail, _ := out["detail"].(string)
			if !strings.HasPrefix(detail, fmt.Sprintf("%d problems; nothing was applied: ", c.total)) ||
				!strings.Contains(detail, fmt.Sprintf("; and %d more (errors lists the first 100)", c.total-10)) {
				t.Errorf("detail %q does not count the problems", detail)
			}
			if len(errs) > 0 {
				first := errs[0].(map[string]any)["field"].(string)
				if !strings.HasSuffix(first, "[0]") && !strings.Contains(first, "[0].") {
					t.Errorf("first error names %q, want the first element", first)
				}
			}
		})
	}
	if n := auditCount(t, env); n != 0 {
		t.Errorf("%d audit rows after refused applies", n)
	}
}
