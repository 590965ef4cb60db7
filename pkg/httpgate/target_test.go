package httpgate_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rlctl/rlctl/pkg/httpgate"
)

func TestTargetFromURI(t *testing.T) {
	t.Parallel()
	cases := []struct {
		uri, targetType, name string
	}{
		{"/agent/booking-agent", "a2a_agent", "/booking-agent"},
		{"/agent/travel/planner/?q=1", "a2a_agent", "/travel/planner"},
		{"/mcpgw/mcp", "mcp_server", "mcpgw"},
		{"/mcpgw/sse", "mcp_server", "mcpgw"},
		{"/mcpgw/messages/?session_id=1", "mcp_server", "mcpgw"},
		{"/peer/x/mcp", "mcp_server", "peer/x"},
		{"/peer//x/./mcp#frag", "mcp_server", "peer/x"},
		{"/srv/mc%70", "mcp_server", "srv"},
		{"/a%2Fb/mcp", "mcp_server", "a/b"},
		{"/x/../srv/mcp", "mcp_server", "srv"},
		{"https://gw.example.com/srv/mcp?x", "mcp_server", "srv"},
		{"srv/mcp", "mcp_server", "srv"},
		{"/api/rate-limits", "", ""},
		{"/api/x/mcp", "", ""},
		{"/api", "", ""},
		{"/apis/mcp", "mcp_server", "apis"},
		{"/mcp", "", ""},
		{"/agent", "", ""},
		{"/agent/", "", ""},
		{"/", "", ""},
		{"", "", ""},
		{"/srv/mcp.json", "", ""},
		{"/srv/%zz/mcp", "mcp_server", "srv/%25zz"},
		// Every spelling of one path is that path.
		{"/SRVLIM/mcp", "mcp_server", "srvlim"},
		{"/srvlim/MCP", "mcp_server", "srvlim"},
		{"/srvlim/mcp%20", "mcp_server", "srvlim"},
		{"/srvlim/mcp;x", "mcp_server", "srvlim"},
		{"/srvlim;x/mcp", "mcp_server", "srvlim"},
		{"/srvlim\\mcp", "mcp_server", "srvlim"},
		{"/srvlim%5cmcp", "mcp_server", "srvlim"},
		{"/%20srvlim%09/mcp", "mcp_server", "srvlim"},
		{"/srvlim/mcp;jsessionid=1/", "mcp_server", "srvlim"},
		{"/srvlim/..;/srvlim/mcp", "mcp_server", "srvlim"},
		{"/agent/AGX", "a2a_agent", "/agx"},
		{"/AGENT/agx;v=2", "a2a_agent", "/agx"},
		{"/Peer/X/SSE", "mcp_server", "peer/x"},
		// Disguised control plane: classified as the path it normalizes
		// to (ClassifyURI reports it).
		{"/%61pi/srvlim/mcp", "mcp_server", "api/srvlim"},
		{"/API/rate-limits", "", ""},
		// What text cannot carry is written percent-encoded: distinct
		// paths stay distinct, and no NUL or invalid UTF-8 reaches a key.
		{"/x%00/mcp", "mcp_server", "x%00"},
		{"/srvx%FF/mcp", "mcp_server", "srvx%ff"},
		{"/srvx%fe/mcp", "mcp_server", "srvx%fe"},
		{"/a%25b/mcp", "mcp_server", "a%25b"},
		{"/a%2541/mcp", "mcp_server", "a%2541"},
		{"/caf%C3%A9/mcp", "mcp_server", "café"},
	}
	for _, c := range cases {
		tt, name := httpgate.TargetFromURI(c.uri)
		if tt != c.targetType || name != c.name {
			t.Errorf("TargetFromURI(%q) = %q, %q; want %q, %q", c.uri, tt, name, c.targetType, c.name)
		}
	}
}

func TestClassifyURIRefusesADisguisedControlPlane(t *testing.T) {
	t.Parallel()
	for _, uri := range []string{"/%61pi/srvlim/mcp", "/API/x", "/Api", "/api;x/srv/mcp", "//api/x", "/./api/x", "/x/../api/y", "\\api\\x", "/%2fapi/x"} {
		if _, _, err := httpgate.ClassifyURI(uri); !errors.Is(err, httpgate.ErrDisguisedControlPlane) {
			t.Errorf("ClassifyURI(%q): %v, want ErrDisguisedControlPlane", uri, err)
		}
	}
	for _, uri := range []string{"/api", "/api/", "/api/rate-limits?x", "/api/../srv/mcp", "/srv/api/mcp", "/apis/mcp", "http://h/api/x"} {
		if _, _, err := httpgate.ClassifyURI(uri); err != nil {
			t.Errorf("ClassifyURI(%q): %v", uri, err)
		}
	}
}

// FuzzTargetFromURI checks what the gateway relies on whatever a client
// sends: no panic, a name exactly when there is a type, and names in the
// shape definitions use: no outer slashes, no empty or dot segments.
func FuzzTargetFromURI(f *testing.F) {
	for _, s := range []string{"/agent/a", "/s/mcp", "/p/x/sse?y", "/api/x", "http://h/s/messages", "/%2e%2e/s/mcp", "//", "/agent//",
		"/x%00/mcp", "/srvx%FF/mcp", "/SRV;x/MCP%20", "/a\\b\\sse", "/%2525/mcp", "/\u0130/mcp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		tt, name := httpgate.TargetFromURI(uri)
		if !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
			t.Fatalf("%q: name %q is not valid UTF-8 without control characters", uri, name)
		}
		// Normalizing is idempotent: the canonical path of a target names
		// the same target (except where the canonical path is itself a
		// prefix the classifier reads first).
		var again string
		switch {
		case tt == "a2a_agent":
			again = "/agent" + name
		case tt == "mcp_server" && name != "api" && !strings.HasPrefix(name, "api/") && name != "agent" && !strings.HasPrefix(name, "agent/"):
			again = "/" + name + "/mcp"
		}
		if again != "" {
			if tt2, name2 := httpgate.TargetFromURI(again); tt2 != tt || name2 != name {
				t.Fatalf("%q: %s %q, but its canonical path %q gives %s %q", uri, tt, name, again, tt2, name2)
			}
		}
		switch tt {
		case "":
			if name != "" {
				t.Fatalf("%q: name %q without a type", uri, name)
			}
		case "mcp_server":
			if name == "" || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") {
				t.Fatalf("%q: server name %q", uri, name)
			}
			if strings.Contains(name, "//") || slices.Contains(strings.Split(name, "/"), "..") {
				t.Fatalf("%q: server name %q is not a clean path", uri, name)
			}
		case "a2a_agent":
			if len(name) < 2 || name[0] != '/' || strings.HasSuffix(name, "/") {
				t.Fatalf("%q: agent name %q", uri, name)
			}
		default:
			t.Fatalf("%q: type %q", uri, tt)
		}
	})
}
