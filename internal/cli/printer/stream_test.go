package printer

import (
	"strings"
	"testing"
)

// TestAppendStream: a following command's rows come out one JSON line, one
// YAML document or one name each; a table format is left to the caller.
func TestAppendStream(t *testing.T) {
	type row struct {
		ID int `json:"id"`
	}
	rows := []row{{1}, {2}}
	name := func(r row) string { return "thing/" + string(rune('0'+r.ID)) }
	for _, tc := range []struct {
		format string
		want   string
	}{
		{JSON, "{\"id\":1}\n{\"id\":2}\n"},
		{YAML, "---\nid: 1\n---\nid: 2\n"},
		{Name, "thing/1\nthing/2\n"},
	} {
		var b strings.Builder
		ok, err := AppendStream(&b, tc.format, rows, name)
		if err != nil || !ok || b.String() != tc.want {
			t.Errorf("%s: %v %v %q, want %q", tc.format, ok, err, b.String(), tc.want)
		}
	}
	var b strings.Builder
	if ok, err := AppendStream(&b, Table, rows, name); ok || err != nil || b.Len() != 0 {
		t.Errorf("table: %v %v %q, want it left to the caller", ok, err, b.String())
	}
}
