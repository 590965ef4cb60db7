package enforce

import (
	"fmt"
	"testing"
)

// TestMemberIndexCopiesOnWrite: a patched index sees the patch; the index
// it was made from (still read by decisions in flight) does not change.
func TestMemberIndexCopiesOnWrite(t *testing.T) {
	t.Parallel()
	old := newMemberIndex()
	for i := range 1000 {
		old.put(fmt.Sprintf("user:u%d", i), member{groups: []string{"g"}})
	}
	quarantined := member{groups: []string{"quarantine-callers"}, quarantined: true}
	next := old.with(map[string]*member{"user:u1": &quarantined, "user:u2": nil, "user:new": &quarantined})
	for _, c := range []struct {
		idx         memberIndex
		id          string
		present     bool
		quarantined bool
	}{
		{old, "user:u1", true, false}, {old, "user:u2", true, false}, {old, "user:new", false, false},
		{next, "user:u1", true, true}, {next, "user:u2", false, false}, {next, "user:new", true, true},
		{next, "user:u3", true, false},
	} {
		m, ok := c.idx.get(c.id)
		if ok != c.present || m.quarantined != c.quarantined {
			t.Errorf("get(%q) = %+v, %v; want present %v, quarantined %v", c.id, m, ok, c.present, c.quarantined)
		}
	}
	if old.len() != 1000 || next.len() != 1000 {
		t.Errorf("len: old %d, next %d; want 1000 and 1000", old.len(), next.len())
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
