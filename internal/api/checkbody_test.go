package api

import (
	"net/http"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// POST /api/check's body is read by encoding/json into enforce.Call, as
// every other body is (decodeBody): whitespace anywhere, the last of a
// repeated name wins, names match case-insensitively; anything else is a
// 400 whose detail says what is wrong and, where there is one, names the
// field.
func TestCheckBodyDecoding(t *testing.T) {
	accepted := []struct {
		body string
		want enforce.Call
	}{
		{`{}`, enforce.Call{}},
		{"{\n\t\"client_id\" : \"bot-1\" ,\r\n \"target_type\":\"a2a_agent\",\"target_name\":\"planner\"} ",
			enforce.Call{ClientID: "bot-1", TargetType: "a2a_agent", TargetName: "planner"}},
		{`{"username":"a","client_id":"b","is_admin":true,"target_type":"mcp_server","target_name":"s","tool":"t",` +
			`"cost":15,"client_ip":"2001:db8::1","team":"acme","method":"GET","path":"/v1/x?y=1","kind":"resource"}`,
			enforce.Call{Username: "a", ClientID: "b", IsAdmin: true, TargetType: "mcp_server", TargetName: "s", Tool: "t",
				Cost: 15, ClientIP: "2001:db8::1", Team: "acme", Method: "GET", Path: "/v1/x?y=1", Kind: "resource"}},
		{`{"username":"first","username":"last"}`, enforce.Call{Username: "last"}},
		{`{"Username":"alice"}`, enforce.Call{Username: "alice"}},
		{`{"username":"al\u0069ce","tool":"zoë"}`, enforce.Call{Username: "alice", Tool: "zoë"}},
	}
	for _, tc := range accepted {
		got, err := decodeBody[enforce.Call]([]byte(tc.body), false)
		if err != nil {
			t.Errorf("%s refused: %v", tc.body, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.body, got, tc.want)
		}
	}

	refused := []struct {
		body, detail, field string // field: "" when the refusal names none
	}{
		{``, "request body is empty; a JSON object is required", ""},
		{`[]`, "request body must be a JSON object, not array", ""},
		{`{"username":"alice"`, "malformed JSON: unexpected end of input", ""},
		{`{"username":"alice"} {}`, "request body holds more than one JSON value", ""},
		{`{"unknown":"x"}`, "unknown: unknown field", "unknown"},
		{`{"descriptors":{}}`, "descriptors: unknown field", "descriptors"},
		{`{"username":1}`, "", "username"},
		{`{"cost":"1"}`, "", "cost"},
		{`{"cost":1.5}`, "", "cost"},
		{`{"cost":1e3}`, "cost: must be a whole number, not 1e3", "cost"},
		{`{"is_admin":"true"}`, "", "is_admin"},
	}
	for _, tc := range refused {
		_, err := decodeBody[enforce.Call]([]byte(tc.body), false)
		he, ok := err.(*httpError)
		if !ok || he.status != http.StatusBadRequest {
			t.Errorf("%q: err = %v, want a 400", tc.body, err)
			continue
		}
		if tc.detail != "" && he.detail != tc.detail {
			t.Errorf("%q: detail %q, want %q", tc.body, he.detail, tc.detail)
		}
		switch {
		case tc.field == "" && len(he.fields) != 0:
			t.Errorf("%q: names fields %+v, want none", tc.body, he.fields)
		case tc.field != "" && (len(he.fields) != 1 || he.fields[0].Field != tc.field):
			t.Errorf("%q: names fields %+v, want %s", tc.body, he.fields, tc.field)
		}
	}
}
