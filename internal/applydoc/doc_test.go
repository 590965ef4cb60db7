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

// NewDocument names an algorithm only when it is not the default: an
// export of definitions that are all fixed windows is what it was before
// algorithms existed, and a token bucket keeps its algorithm and bursts.
func TestNewDocumentAlgorithm(t *testing.T) {
	t.Parallel()
	limit, burst := 5, 9
	doc := applydoc.NewDocument([]ratelimit.Definition{
		{Axis: "caller", EntityType: "group", Name: "a", WindowSeconds: 60, UserMaxRequests: &limit, Algorithm: ratelimit.AlgorithmFixedWindow},
		{Axis: "caller", EntityType: "group", Name: "b", WindowSeconds: 60, UserMaxRequests: &limit, Algorithm: ratelimit.AlgorithmTokenBucket, UserBurst: &burst},
		{Axis: "caller", EntityType: "group", Name: "c", WindowSeconds: 60, UserMaxRequests: &limit, Algorithm: ratelimit.AlgorithmSlidingWindow},
	}, nil, nil)
	var got []string
	for _, d := range doc.Definitions {
		raw, _ := json.Marshal(d)
		got = append(got, string(raw))
	}
	want := []string{
		`{"axis":"caller","entity_type":"group","name":"a","window_seconds":60,"user_max_requests":5,"fail_closed":false,"enabled":false}`,
		`{"axis":"caller","entity_type":"group","name":"b","window_seconds":60,"user_max_requests":5,"algorithm":"token_bucket","user_burst":9,"fail_closed":false,"enabled":false}`,
		`{"axis":"caller","entity_type":"group","name":"c","window_seconds":60,"user_max_requests":5,"algorithm":"sliding_window","fail_closed":false,"enabled":false}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("definitions:\n got %q\nwant %q", got, want)
	}
}
