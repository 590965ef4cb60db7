package client

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The hand-written request is byte for byte json.Marshal's.
func TestAppendCheckRequestMatchesEncodingJSON(t *testing.T) {
	reqs := []CheckRequest{
		{},
		{Username: "alice", TargetType: "mcp_server", TargetName: "github"},
		{IsAdmin: true},
		{Cost: -3},
		{Username: "a", ClientID: "b", IsAdmin: true, TargetType: "mcp_server", TargetName: "s", Tool: "t", Cost: 15,
			ClientIP: "2001:db8::1", Team: "acme", Method: "GET", Path: "/v1/x?y=1&z=<2>", Kind: "resource"},
		{Username: "zoë", Tool: "say \"hi\"\\", Path: "\x00\u2028\xff", Team: "a&b"},
	}
	for i, r := range reqs {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendCheckRequest(nil, &r); string(got) != string(want) {
			t.Errorf("request %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// Every answer the fast path takes, encoding/json decodes to the same
// CheckResult; every answer it does not know, it leaves to encoding/json.
func TestCheckCodecMatchesEncodingJSON(t *testing.T) {
	fast := []string{
		`{}`,
		// What rlapi writes (internal/api's appendCheckResult), newline included.
		`{"allowed":true,"reason":"allowed","limit":100,"remaining":99,"reset":1772409660,"retry_after":0,"gates":[` +
			`{"definition_id":"target:mcp_server:srv:60","axis":"target","entity_type":"mcp_server","window_seconds":60,` +
			`"limit":100,"count":1,"remaining":99,"reset":1772409660,"shadow":false,"matched_by":"everyone"},` +
			`{"definition_id":"route:r:1","axis":"route","entity_type":"route","window_seconds":1,"limit":5,"count":6,` +
			`"remaining":-1,"reset":-5,"shadow":true,"matched":"/v1/*","dimension":"ip"}]}` + "\n",
		`{"allowed":false,"reason":"quarantined","limit":0,"remaining":0,"reset":0,"retry_after":0,"gates":[],"quarantine_scope":"caller"}`,
		`{"allowed":false,"reason":"locked-out","retry_after":30,"gates":null,"lockout_remaining":30}`,
		" { \"allowed\" : true , \"gates\" : [ { } , { \"count\" : -0 } ] } \r\n",
		`{"reason":"first","reason":"last","gates":[{"axis":"a","axis":"b"}]}`, // the last wins, as in encoding/json
		`{"limit":999999999999999999,"remaining":-999999999999999999}`,
	}
	for _, body := range fast {
		var got CheckResult
		if !decodeCheckResult([]byte(body), &got) {
			t.Errorf("fast path refused %s", body)
			continue
		}
		var want CheckResult
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Errorf("encoding/json refused %s: %v", body, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n fast %+v\n json %+v", body, got, want)
		}
	}
	slow := []string{
		``, `null`, `[]`, `{`, `{"allowed":true`, `{"allowed":true,}`, `{"allowed":true} {}`, `{"allowed":true}x`,
		`{"Allowed":true}`,            // encoding/json matches names case-insensitively
		`{"reason":"thr\u006fttled"}`, // escapes
		`{"reason":"zoë"}`,            // non-ASCII
		`{"served_by":"rlapi-2"}`,     // a field a newer server may add
		`{"limit":1.0}`, `{"limit":1e3}`, `{"limit":"1"}`, `{"limit":01}`, `{"limit":-}`, `{"limit":- 1}`,
		`{"limit":9999999999999999999}`, // past 18 digits
		`{"allowed":null}`, `{"allowed":1}`, `{"reason":null}`, `{"gates":{}}`, `{"gates":[1]}`, `{"gates":[{},]}`,
		`{"gates":[{"window_seconds":-60}]}`, `{"gates":[{"window_seconds":1234567890}]}`, `{"gates":[{"extra":1}]}`,
		`{"gates":[{"shadow":true}`,
		// encoding/json decodes a second array into the first one's
		// elements: [{Axis:"a", Limit:1}], not [{Limit:1}].
		`{"gates":[{"axis":"a"}],"gates":[{"limit":1}]}`, `{"gates":null,"gates":[]}`,
	}
	for _, body := range slow {
		var res CheckResult
		if decodeCheckResult([]byte(body), &res) {
			t.Errorf("fast path took %q (%+v): it must leave it to encoding/json", body, res)
		}
	}
}

// FuzzDecodeCheckResult: whatever the fast path takes, encoding/json
// takes too, to the same CheckResult.
func FuzzDecodeCheckResult(f *testing.F) {
	for _, s := range []string{`{}`, `{"allowed":true,"reason":"allowed","limit":3,"gates":[{"axis":"target","count":-1}]}`,
		`{"gates":null}`, `{"gates":[]}`, `{"reason":"a","reason":"b"}`, `{"gates":[{"axis":"a"}],"gates":[{"limit":1}]}`, ` { "retry_after" : 0 } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got CheckResult
		if !decodeCheckResult(body, &got) {
			return
		}
		var want CheckResult
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("fast path took %q, encoding/json refused it: %v", body, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n fast %+v\n json %+v", body, got, want)
		}
	})
}

// FuzzAppendCheckRequest: the hand-written request is json.Marshal's for
// any strings.
func FuzzAppendCheckRequest(f *testing.F) {
	f.Add("alice", "", "mcp_server", "srv", "", int64(0), false)
	f.Add("", "bot", "a2a_agent", "<x>&\"y\"", "zoë\x00", int64(-7), true)
	f.Fuzz(func(t *testing.T, user, clientID, targetType, targetName, tool string, cost int64, admin bool) {
		r := CheckRequest{Username: user, ClientID: clientID, TargetType: targetType, TargetName: targetName,
			Tool: tool, Cost: cost, IsAdmin: admin, Path: tool + user, Team: targetName}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendCheckRequest(nil, &r); string(got) != string(want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}
