package statediff

import (
	"reflect"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func ptr[T any](v T) *T { return &v }

func TestDefinition(t *testing.T) {
	old := ratelimit.Definition{
		Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityServerGroup, Name: "fragile", WindowSeconds: 60,
		MaxRequests: ptr(100), Members: []string{"a", "b"}, Enabled: true, FailClosed: true, Mode: ratelimit.ModeShadow,
	}
	if got := Definition(old, old); len(got) != 0 {
		t.Errorf("unchanged: %v", got)
	}
	d := old
	d.MaxRequests, d.Members, d.Enabled, d.FailClosed, d.Mode = ptr(50), nil, false, false, ratelimit.ModeEnforce
	d.Description, d.UserMaxRequests, d.AgentMaxRequests = "new", ptr(7), ptr(3)
	want := []Change{
		{Field: "agent_max_requests", From: nil, To: 3},
		{Field: "description", From: nil, To: "new"},
		{Field: "enabled", From: true, To: false},
		{Field: "fail_closed", From: true, To: false},
		{Field: "max_requests", From: 100, To: 50},
		{Field: "members", From: []string{"a", "b"}, To: nil},
		{Field: "mode", From: ratelimit.ModeShadow, To: ratelimit.ModeEnforce},
		{Field: "user_max_requests", From: nil, To: 7},
	}
	if got := Definition(old, d); !reflect.DeepEqual(got, want) {
		t.Errorf("Definition:\n got %#v\nwant %#v", got, want)
	}
	// Equal values behind different pointers are no change.
	same := old
	same.MaxRequests = ptr(100)
	if got := Definition(old, same); len(got) != 0 {
		t.Errorf("equal pointers: %v", got)
	}
}

// The algorithm fields are compared as the server means them: no
// algorithm is a fixed window.
func TestDefinitionAlgorithm(t *testing.T) {
	old := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "devs", WindowSeconds: 60,
		UserMaxRequests: ptr(100), AgentMaxRequests: ptr(10), Algorithm: ratelimit.AlgorithmFixedWindow}
	unnamed := old
	unnamed.Algorithm = ""
	if got := Definition(old, unnamed); len(got) != 0 {
		t.Errorf("no algorithm against a stored fixed_window: %v", got)
	}
	if got := Definition(unnamed, old); len(got) != 0 {
		t.Errorf("fixed_window against a stored definition naming none: %v", got)
	}
	d := unnamed
	d.Algorithm, d.UserBurst, d.AgentBurst = ratelimit.AlgorithmTokenBucket, ptr(200), ptr(5)
	want := []Change{
		{Field: "agent_burst", From: nil, To: 5},
		{Field: "algorithm", From: ratelimit.AlgorithmFixedWindow, To: ratelimit.AlgorithmTokenBucket},
		{Field: "user_burst", From: nil, To: 200},
	}
	if got := Definition(unnamed, d); !reflect.DeepEqual(got, want) {
		t.Errorf("to a token bucket:\n got %#v\nwant %#v", got, want)
	}
	target := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "kb", WindowSeconds: 60,
		MaxRequests: ptr(10), Algorithm: ratelimit.AlgorithmTokenBucket, Burst: ptr(3)}
	more := target
	more.Burst = ptr(4)
	if got, want := Definition(target, more), []Change{{Field: "burst", From: 3, To: 4}}; !reflect.DeepEqual(got, want) {
		t.Errorf("burst change:\n got %#v\nwant %#v", got, want)
	}
}

func TestMembership(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	old := ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: "eve", Groups: []string{ratelimit.GroupQuarantineCallers},
		QuarantineReason: "spam", QuarantinedAt: &at}
	if got := Membership(old, old); len(got) != 0 {
		t.Errorf("unchanged: %v", got)
	}
	same := old
	same.QuarantinedAt = ptr(at.UTC()) // the same instant elsewhere
	if got := Membership(old, same); len(got) != 0 {
		t.Errorf("same instant: %v", got)
	}
	m := old
	m.Groups, m.QuarantineReason, m.QuarantinedAt = []string{"developers"}, "", nil
	m.QuarantineExpiresAt = ptr(at.Add(time.Hour))
	want := []Change{
		{Field: "groups", From: []string{ratelimit.GroupQuarantineCallers}, To: []string{"developers"}},
		{Field: "quarantine_expires_at", From: nil, To: at.Add(time.Hour).UTC()},
		{Field: "quarantine_reason", From: "spam", To: nil},
		{Field: "quarantined_at", From: at.UTC(), To: nil},
	}
	if got := Membership(old, m); !reflect.DeepEqual(got, want) {
		t.Errorf("Membership:\n got %#v\nwant %#v", got, want)
	}
}

func TestAdmin(t *testing.T) {
	old := ratelimit.Admin{SubjectType: ratelimit.SubjectUser, Subject: "root", Note: "break glass"}
	if got := Admin(old, old); len(got) != 0 {
		t.Errorf("unchanged: %v", got)
	}
	a := old
	a.Note = ""
	want := []Change{{Field: "note", From: "break glass", To: nil}}
	if got := Admin(old, a); !reflect.DeepEqual(got, want) {
		t.Errorf("Admin: got %#v, want %#v", got, want)
	}
}

func TestWithQuarantineFields(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.FixedZone("X", 7200))
	earlier := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	expires := now.Add(time.Hour)

	// Outside the quarantine groups: no metadata.
	plain := ratelimit.Membership{Groups: []string{"developers"}, QuarantineReason: "x", QuarantinedAt: &earlier, QuarantineExpiresAt: &expires}
	if got := WithQuarantineFields(plain, nil, now); got.QuarantineReason != "" || got.QuarantinedAt != nil || got.QuarantineExpiresAt != nil {
		t.Errorf("not quarantined: %+v", got)
	}
	// A new quarantine starts now, in UTC.
	q := ratelimit.Membership{Groups: []string{ratelimit.GroupQuarantineTargets}, QuarantineExpiresAt: &expires}
	if got := WithQuarantineFields(q, nil, now); got.QuarantinedAt == nil || !got.QuarantinedAt.Equal(now) || got.QuarantinedAt.Location() != time.UTC {
		t.Errorf("new quarantine starts at %v, want %v in UTC", got.QuarantinedAt, now)
	}
	// One already quarantined keeps its start.
	prev := ratelimit.Membership{Groups: []string{ratelimit.GroupQuarantineCallers}, QuarantinedAt: &earlier}
	q.Groups = []string{ratelimit.GroupQuarantineCallers}
	if got := WithQuarantineFields(q, &prev, now); got.QuarantinedAt == nil || !got.QuarantinedAt.Equal(earlier) {
		t.Errorf("kept start: %v, want %v", got.QuarantinedAt, earlier)
	}
	// StoredMembership cuts the times to microseconds.
	got := StoredMembership(q, nil, now)
	if got.QuarantinedAt.Nanosecond()%1000 != 0 || got.QuarantineExpiresAt.Nanosecond()%1000 != 0 {
		t.Errorf("StoredMembership kept nanoseconds: %v, %v", got.QuarantinedAt, got.QuarantineExpiresAt)
	}
	if !got.QuarantinedAt.Equal(now.Truncate(time.Microsecond)) {
		t.Errorf("StoredMembership start %v, want %v", got.QuarantinedAt, now.Truncate(time.Microsecond))
	}
	if got := StoredMembership(plain, nil, now); got.QuarantinedAt != nil || got.QuarantineExpiresAt != nil {
		t.Errorf("StoredMembership, not quarantined: %+v", got)
	}
}

func TestJSONFields(t *testing.T) {
	type obj struct {
		Name    string `json:"name"`
		Limit   *int   `json:"limit,omitempty"`
		Version int    `json:"version"`
	}
	before := &obj{Name: "a", Limit: ptr(1), Version: 1}
	after := obj{Name: "b", Version: 2}
	want := []Change{{Field: "limit", From: 1.0, To: nil}, {Field: "name", From: "a", To: "b"}}
	if got := JSONFields(before, after, "version"); !reflect.DeepEqual(got, want) {
		t.Errorf("JSONFields:\n got %#v\nwant %#v", got, want)
	}
	if got := JSONFields(before, before); len(got) != 0 {
		t.Errorf("unchanged: %v", got)
	}
	// A nil pointer is an object that does not exist.
	var none *obj
	want = []Change{{Field: "limit", From: nil, To: 1.0}, {Field: "name", From: nil, To: "a"}, {Field: "version", From: nil, To: 1.0}}
	if got := JSONFields(none, before); !reflect.DeepEqual(got, want) {
		t.Errorf("created:\n got %#v\nwant %#v", got, want)
	}
	if got := JSONFields(nil, nil); got != nil {
		t.Errorf("nothing: %v", got)
	}
}

// A route tier's team fields diff like its other dimensions.
func TestDefinitionRouteTeam(t *testing.T) {
	old := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityRoute, Name: "medium", WindowSeconds: 60,
		Paths: []string{"/tools/*"}, Algorithm: ratelimit.AlgorithmTokenBucket, UserMaxRequests: ptr(100)}
	d := old
	d.TeamMaxRequests, d.TeamBurst = ptr(100), ptr(120)
	want := []Change{{Field: "team_burst", From: nil, To: 120}, {Field: "team_max_requests", From: nil, To: 100}}
	if got := Definition(old, d); !reflect.DeepEqual(got, want) {
		t.Errorf("team fields:\n got %#v\nwant %#v", got, want)
	}
}

// A fail policy is a field of its own; closed is also fail_closed, so
// leaving closed changes both.
func TestDefinitionFailPolicy(t *testing.T) {
	old := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "billing", WindowSeconds: 60,
		MaxRequests: ptr(100), Enabled: true, FailPolicy: ratelimit.FailPolicyClosed, FailClosed: true}
	if got := Definition(old, old); len(got) != 0 {
		t.Errorf("unchanged: %v", got)
	}
	d := old
	d.FailPolicy, d.FailClosed = ratelimit.FailPolicyDegrade, false
	want := []Change{
		{Field: "fail_closed", From: true, To: false},
		{Field: "fail_policy", From: ratelimit.FailPolicyClosed, To: ratelimit.FailPolicyDegrade},
	}
	if got := Definition(old, d); !reflect.DeepEqual(got, want) {
		t.Errorf("closed to degrade:\n got %#v\nwant %#v", got, want)
	}
	d.FailPolicy = ""
	want = []Change{
		{Field: "fail_closed", From: true, To: false},
		{Field: "fail_policy", From: ratelimit.FailPolicyClosed, To: nil},
	}
	if got := Definition(old, d); !reflect.DeepEqual(got, want) {
		t.Errorf("closed to the enforcer's default:\n got %#v\nwant %#v", got, want)
	}
}
