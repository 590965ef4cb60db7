package cli_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
)

// TestFlagErrorsNameTheFlagAndTheRule: a value a flag cannot hold and a
// server URL rlctl cannot use are refused (exit 2, nothing sent) naming
// the flag (or the variable) and the rule, not the parser.
func TestFlagErrorsNameTheFlagAndTheRule(t *testing.T) {
	t.Parallel()
	set := []string{"--server", noServer, "rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "g", "--user-max-requests", "30"}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"seconds", nil, append(set[:len(set):len(set)], "--window-seconds", "1m"),
			`Error: --window-seconds: must be a whole number of seconds such as 60 (got "1m")`},
		{"a number", nil, []string{"--server", noServer, "audit", "list", "--limit", "ten"},
			`Error: --limit: must be a whole number such as 100 (got "ten")`},
		{"too large", nil, append(set[:len(set):len(set)], "--window-seconds", "99999999999999999999"),
			`Error: --window-seconds: must be a whole number of seconds such as 60, and not that large (got "99999999999999999999")`},
		{"a version", nil, append(set[:len(set):len(set)], "--window-seconds", "60", "--if-version", "v2"),
			`Error: --if-version: must be a whole number, the version shown by get -o wide (got "v2")`},
		{"a bool", nil, append(set[:len(set):len(set)], "--window-seconds", "60", "--disabled=maybe"),
			`Error: --disabled: takes no value, or =true or =false (got "maybe")`},
		{"a duration", nil, []string{"--server", noServer, "--timeout", "5x", "rate-limit", "list"},
			`Error: --timeout: "5x" is not a duration such as 30m, 2h, 7d or 1d12h`},
		{"no scheme", nil, []string{"--server", "127.0.0.1:8080", "rate-limit", "list"},
			`Error: --server 127.0.0.1:8080: needs a scheme: http://127.0.0.1:8080 (or https://)`},
		{"a host name, no scheme", nil, []string{"--server", "localhost:8080", "rate-limit", "list"},
			`Error: --server localhost:8080: needs a scheme: http://localhost:8080 (or https://)`},
		{"another scheme", nil, []string{"--server", "ftp://rlapi", "rate-limit", "list"},
			`Error: --server ftp://rlapi: scheme must be http or https`},
		{"from the environment", map[string]string{"RLCTL_SERVER": "rlapi.internal:8080"}, []string{"rate-limit", "list"},
			`Error: RLCTL_SERVER rlapi.internal:8080: needs a scheme: http://rlapi.internal:8080 (or https://)`},
	}
	for _, tc := range cases {
		res := clitest.New(t).RunWith(clitest.Opts{Env: tc.env}, tc.args...)
		if res.Code != cmdutil.ExitUsage || strings.TrimSpace(res.ErrOut) != tc.want {
			t.Errorf("%s: rlctl %s: exit %d, stderr %q\nwant exit 2, %q", tc.name, strings.Join(tc.args, " "), res.Code, res.ErrOut, tc.want)
		}
	}
}
