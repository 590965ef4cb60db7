package plan

import (
	"fmt"
	"testing"
)

// TestMemberIndexCopiesOnWrite: a patched index sees the patch; the index
// it was made from (still read by decisions in flight) does not change.
func TestMemberIndexCopiesOnWrite(t *testing.T) {
	t.Parallel()
	old := NewMembers()
	for i := range 1000 {
		old.Put(fmt.Sprintf("user:u%d", i), Member{Groups: []string{"g"}})
	}
	quarantined := Member{Groups: []string{"quarantine-callers"}, Quarantined: true}
	next := old.With(map[string]*Member{"user:u1": &quarantined, "user:u2": nil, "user:new": &quarantined})
	for _, c := range []struct {
		idx         Members
		id          string
		present     bool
		quarantined bool
	}{
		{old, "user:u1", true, false}, {old, "user:u2", true, false}, {old, "user:new", false, false},
		{next, "user:u1", true, true}, {next, "user:u2", false, false}, {next, "user:new", true, true},
		{next, "user:u3", true, false},
	} {
		m, ok := c.idx.Get(c.id)
		if ok != c.present || m.Quarantined != c.quarantined {
			t.Errorf("Get(%q) = %+v, %v; want present %v, quarantined %v", c.id, m, ok, c.present, c.quarantined)
		}
	}
	if old.Len() != 1000 || next.Len() != 1000 {
		t.Errorf("len: old %d, next %d; want 1000 and 1000", old.Len(), next.Len())
	}
	shared, empty := 0, 0
	for i := range old.shards {
		switch {
		case len(old.shards[i]) == 0:
			empty++ // nothing to share; how many depends on the hash seed
		case fmt.Sprintf("%p", old.shards[i]) == fmt.Sprintf("%p", next.shards[i]):
			shared++
		}
	}
	if shared < memberShards-empty-3 { // at most three shards copied
		t.Errorf("only %d of %d non-empty shards shared after a change of three members", shared, memberShards-empty)
	}
}
