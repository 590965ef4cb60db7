package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// slowDecodeCall is decode's path for a Call: encoding/json, unknown
// fields refused, one value.
func slowDecodeCall(body []byte) (enforce.Call, error) {
	return decodeBody[enforce.Call](body, false)
}

// Every body the fast path takes, encoding/json decodes to the same Call;
// every body it does not know, it leaves to encoding/json (which then
// answers or refuses as it always did).
func TestCheckCodecMatchesEncodingJSON(t *testing.T) {
	fast := []string{
		`{}`,
		` {"username":"alice","target_type":"mcp_server","target_name":"github"} `,
		"{\n\t\"client_id\" : \"bot-1\" ,\r\n \"target_type\":\"a2a_agent\",\"target_name\":\"planner\"}",
		`{"username":"a","client_id":"b","is_admin":true,"target_type":"mcp_server","target_name":"s","tool":"t",` +
			`"cost":15,"client_ip":"2001:db8::1","team":"acme","method":"GET","path":"/v1/x?y=1","kind":"resource"}`,
		`{"is_admin":false,"cost":0}`,
		`{"username":"first","username":"last"}`, // the last wins, as in encoding/json
		`{"cost":999999999999999}`,
	}
	for _, body := range fast {
		got, ok := decodeCallFast([]byte(body))
		if !ok {
			t.Errorf("fast path refused %s", body)
			continue
		}
		want, err := slowDecodeCall([]byte(body))
		if err != nil {
			t.Errorf("encoding/json refused %s: %v", body, err)
			continue
		}
		if got != want {
			t.Errorf("%s:\n fast %+v\n json %+v", body, got, want)
		}
	}
	slow := []string{
		``, ` `, `[]`, `null`, `{`, `{"username":"alice"`, `{"username":"alice",}`,
		`{"Username":"alice"}`,      // encoding/json matches names case-insensitively
		`{"username":"al\"ice"}`,    // escapes
		`{"username":"al\u0069ce"}`, // escapes
		`{"username":"zoë"}`,        // non-ASCII
		"{\"username\":\"a\x01\"}",  // a control character
		`{"username":null}`, `{"username":1}`, `{"cost":"1"}`, `{"is_admin":"true"}`, `{"is_admin":1}`,
		`{"cost":-1}`, `{"cost":1.5}`, `{"cost":1e3}`, `{"cost":01}`, `{"cost":1000000000000000000000}`,
		`{"descriptors":{}}`, `{"unknown":"x"}`, `{"username":"alice"} {}`, `{"username":"alice"}x`,
		`{"username":{"a":1}}`, `{"cost":1,}`,
	}
	for _, body := range slow {
		if c, ok := decodeCallFast([]byte(body)); ok {
			t.Errorf("fast path took %q (%+v): it must leave it to encoding/json", body, c)
		}
	}
}

// FuzzDecodeCallFast: whatever the fast path takes, encoding/json takes
// too, to the same Call.
func FuzzDecodeCallFast(f *testing.F) {
	for _, s := range []string{`{}`, `{"username":"alice","cost":3,"is_admin":true}`, `{"username":"a","username":"b"}`,
		`{"target_type":"mcp_server","target_name":"s","path":"/x"}`, `{"cost":0}`, ` { } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := decodeCallFast(body)
		if !ok {
			return
		}
		want, err := slowDecodeCall(body)
		if err != nil {
			t.Fatalf("fast path took %q, encoding/json refused it: %v", body, err)
		}
		if got != want {
			t.Fatalf("%q:\n fast %+v\n json %+v", body, got, want)
		}
	})
}

// The hand-written answer is byte for byte json.Encoder's.
func TestAppendCheckResultMatchesEncodingJSON(t *testing.T) {
	results := []checkResult{
		{},
		{Allowed: true, Reason: "allowed", Limit: 10, Remaining: 9, Reset: 1767225600, Gates: []checkGate{}},
		{Allowed: false, Reason: "throttled", Limit: 5, Remaining: 0, Reset: 1, RetryAfter: 12, Gates: []checkGate{
			{DefinitionID: "target:mcp_server:github:60", Axis: "target", EntityType: "mcp_server", WindowSeconds: 60, Limit: 5, Count: 5, Reset: 1},
			{DefinitionID: "caller:group:<staff>&co:60", Axis: "caller", EntityType: "group", WindowSeconds: 60, Limit: -1, Count: -2,
				Remaining: -3, Shadow: true, MatchedBy: "user:zoë", Matched: `/v1/"*"\x`, Dimension: "ip"},
		}},
		{Reason: "quarantined", QuarantineScope: "caller", Gates: []checkGate{}},
		{Reason: "locked-out", RetryAfter: 30, LockoutRemaining: 30, Gates: []checkGate{{DefinitionID: "\u2028\x00"}}},
	}
	for i, res := range results {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(res); err != nil {
			t.Fatal(err)
		}
		if got := appendCheckResult(nil, &res); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("result %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
}
