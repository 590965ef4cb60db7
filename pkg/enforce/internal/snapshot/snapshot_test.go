package snapshot

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/source"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// A reload by ids patches the networks as it patches other memberships:
// a network notified and read is replaced, one notified and gone is
// dropped, others are kept.
func TestNetworkReloadByIDs(t *testing.T) {
	t.Parallel()
	src := &rowsSource{state: source.State{Memberships: []ratelimit.Membership{
		{SubjectType: ratelimit.SubjectNetwork, Subject: "10.0.0.0/8", Groups: []string{"a"}},
		{SubjectType: ratelimit.SubjectNetwork, Subject: "10.1.0.0/16", Groups: []string{"b"}},
		{SubjectType: ratelimit.SubjectUser, Subject: "alice", Groups: []string{"c"}},
	}}}
	now := time.Now()
	prev, _, err := Load[struct{}](context.Background(), src, nil, Changes{All: true}, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.state.Memberships = []ratelimit.Membership{
		{SubjectType: ratelimit.SubjectNetwork, Subject: "10.0.0.0/8", Groups: []string{ratelimit.GroupQuarantineCallers}},
		{SubjectType: ratelimit.SubjectUser, Subject: "alice", Groups: []string{"c"}},
	}
	var ch Changes
	ch.Add(source.Change{Table: source.TableMemberships, IDs: []string{"network:10.0.0.0/8", "network:10.1.0.0/16"}})
	next, _, err := Load(context.Background(), src, prev, ch, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, m, ok := next.Networks.Lookup(netip.MustParseAddr("10.1.2.3")); !ok || n.String() != "10.0.0.0/8" || !m.QuarantinedAt(now) {
		t.Errorf("after the patch 10.1.2.3 is in %v (%+v, %v), want the quarantined 10.0.0.0/8", n, m, ok)
	}
	if n, _, _ := prev.Networks.Lookup(netip.MustParseAddr("10.1.2.3")); n.String() != "10.1.0.0/16" {
		t.Errorf("the previous snapshot changed: 10.1.2.3 is in %v", n)
	}
	if m, ok := next.Members.Get("user:alice"); !ok || m.Groups[0] != "c" {
		t.Errorf("alice lost: %+v", m)
	}
	if _, ok := next.Members.Get("network:10.0.0.0/8"); ok {
		t.Error("a network is in the plan.Member index too")
	}
}

// rowsSource serves state whole and by ids.
type rowsSource struct{ state source.State }

var errNotImplemented = errors.New("not implemented")

func (s *rowsSource) Load(context.Context) (source.State, error) { return s.state, nil }
func (s *rowsSource) LoadTables(_ context.Context, req source.TablesRequest) (source.Rows, error) {
	return source.SelectRows(s.state, req), nil
}
func (s *rowsSource) Capabilities() source.SourceCapabilities { return source.SourceCapabilities{} }
func (s *rowsSource) LockOut(context.Context, source.Lockout) (bool, error) {
	return false, errNotImplemented
}
func (s *rowsSource) CountQuarantined(context.Context, time.Time) (int64, int64, error) {
	return 0, 0, errNotImplemented
}
func (s *rowsSource) Watch(ctx context.Context, ready func(), _ func(source.Change)) error {
	ready()
	<-ctx.Done()
	return ctx.Err()
}
