package ratelimit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestDefinitionJSONDefaultsToEnabled(t *testing.T) {
	t.Parallel()
	var d ratelimit.Definition
	if err := json.Unmarshal([]byte(`{"axis":"caller","entity_type":"group","name":"g","window_seconds":60}`), &d); err != nil {
		t.Fatal(err)
	}
	if !d.Enabled {
		t.Error("a definition without \"enabled\" decoded as disabled; the reference default is enabled")
	}
	if err := json.Unmarshal([]byte(`{"enabled":false}`), &d); err != nil || d.Enabled {
		t.Errorf("explicit enabled=false decoded as %v (err %v)", d.Enabled, err)
	}
}

func TestUnknownFieldsAreRefused(t *testing.T) {
	t.Parallel()
	var d ratelimit.Definition
	err := json.Unmarshal([]byte(`{"axis":"caller","user_max_request":5}`), &d)
	if err == nil || !strings.Contains(err.Error(), `unknown field "user_max_request"`) {
		t.Errorf("definition with a typo: err = %v, want unknown field user_max_request", err)
	}
	var m ratelimit.Membership
	err = json.Unmarshal([]byte(`{"subject_type":"user","group":["a"]}`), &m)
	if err == nil || !strings.Contains(err.Error(), `unknown field "group"`) {
		t.Errorf("membership with a typo: err = %v, want unknown field group", err)
	}
}

func TestDefinitionIDRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		axis, entity, name string
		window             int
	}{
		{"caller", "group", "devs", 60},
		{"target", "mcp_tool", "srv/x:search:v2", 1},
		{"target", "a2a_agent", "/a:b/c", 86400},
	}
	for _, c := range cases {
		id := ratelimit.DefinitionID(c.axis, c.entity, c.name, c.window)
		axis, entity, name, window, err := ratelimit.ParseDefinitionID(id)
		if err != nil || axis != c.axis || entity != c.entity || name != c.name || window != c.window {
			t.Errorf("ParseDefinitionID(%q) = %q %q %q %d %v", id, axis, entity, name, window, err)
		}
	}
	for _, bad := range []string{"", "caller", "caller:group", "caller:group:x", "caller:group:x:060", "caller:group:x:-1", "caller:group:x:abc"} {
		if _, _, _, _, err := ratelimit.ParseDefinitionID(bad); err == nil {
			t.Errorf("ParseDefinitionID(%q) accepted a malformed id", bad)
		}
	}
}
