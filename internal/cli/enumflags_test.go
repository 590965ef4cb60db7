package cli_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rlctl/rlctl/internal/cli"
	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
)

// noServer is an rlapi URL nothing listens on (port 1): a command line
// that sent anything there would fail with exit 1 (connection refused),
// not 2.
const noServer = "http://127.0.0.1:1"

// argsOf are the positional arguments a command needs before its flags
// are checked (cobra checks them first).
var argsOf = map[string][]string{
	"rlctl simulate": {"trace.csv"},
}

// TestEnumFlagsRefusedLocally walks every command's enum flags
// (cmdutil.EnumFlag) and gives each a bad value with no rlapi running:
// each is refused with exit 2, the rule as the server words it, and
// "nothing was sent".
func TestEnumFlagsRefusedLocally(t *testing.T) {
	t.Parallel()
	root := cli.NewCmdRoot(clitest.Factory())
	type enumFlag struct {
		path    []string // the command line up to the flag
		name    string
		allowed []string
	}
	var found []enumFlag
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		visit := func(fl *pflag.Flag) {
			if v := cmdutil.EnumValues(fl); v != nil {
				path := strings.Fields(c.CommandPath())[1:]
				found = append(found, enumFlag{path, fl.Name, v})
			}
		}
		c.LocalNonPersistentFlags().VisitAll(visit)
		c.PersistentFlags().VisitAll(visit)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)

	// The enum flags named in the CLI reference must all be among them.
	seen := map[string]bool{}
	for _, f := range found {
		seen[strings.Join(f.path, " ")+" --"+f.name] = true
	}
	for _, want := range []string{
		" --output",
		"rate-limit set --axis", "rate-limit set --entity-type", "rate-limit set --algorithm", "rate-limit set --per",
		"rate-limit set --lease", "rate-limit set --mode", "rate-limit set --counts-toward-lockout",
		"rate-limit-set --axis", "rate-limit list --axis", "rate-limit list --entity-type", "rate-limit status --entity-type",
		"member set --subject-type", "member list --subject-type", "quarantine add --subject-type", "quarantine remove --subject-type",
		"admin add --subject-type", "admin remove --subject-type", "token create --role",
		"events list --kind", "events list --severity", "events follow --kind", "apply --dry-run", "export --format",
		"simulate --format", "simulate --algorithms",
	} {
		if !seen[strings.TrimPrefix(want, " ")] && !seen[want] {
			t.Errorf("%q is not declared an enum flag (cmdutil.EnumFlag)", want)
		}
	}

	r := clitest.New(t)
	for _, f := range found {
		args := append(append([]string{"--server", noServer}, f.path...), argsOf["rlctl "+strings.Join(f.path, " ")]...)
		args = append(args, "--"+f.name+"=bogus")
		name := "--" + f.name
		if f.name == "output" {
			args = []string{"--server", noServer, "rate-limit", "list", "-o", "bogus"}
			name = "-o"
		}
		want := fmt.Sprintf("Error: %s: must be one of %s (got \"bogus\"); nothing was sent\n", name, strings.Join(f.allowed, ", "))
		res := r.Run(args...)
		if res.Code != cmdutil.ExitUsage || res.ErrOut != want {
			t.Errorf("rlctl %s: exit %d, stderr %q\nwant exit 2, %q", strings.Join(args, " "), res.Code, res.ErrOut, want)
		}
	}
}

// TestSetRefusedLocally: rate-limit set and member set check the whole
// object with the server's rules before any request, quarantine add and
// remove the subject, token create the name, naming the flags.
func TestSetRefusedLocally(t *testing.T) {
	t.Parallel()
	target := []string{"--server", noServer, "rate-limit", "set", "--axis", "target", "--entity-type", "mcp_tool", "--name", "gh:x", "--window-seconds", "60", "--max-requests", "5"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{append(slices.Clone(target), "--kind", "tool,gadget"), `--kind[1]: must be one of tool, prompt, resource, completion (got "gadget")`},
		{append(slices.Clone(target), "--tool-scope", "planet"), `--tool-scope: must be one of global, tool, principal, principal_tool (got "planet")`},
		{append(slices.Clone(target), "--method", "GET"), `--method: allowed only on target route definitions`},
		{[]string{"--server", noServer, "rate-limit", "set", "--axis", "target", "--entity-type", "group", "--name", "g", "--window-seconds", "60", "--max-requests", "5"},
			`--entity-type: must be one of mcp_server, a2a_agent, mcp_tool, a2a_skill, server_group, descriptor, route on the target axis (got "group")`},
		{[]string{"--server", noServer, "rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "g", "--window-seconds", "0", "--user-max-requests", "5"},
			`--window-seconds: must be between 1 and 86400 (got 0)`},
		{[]string{"--server", noServer, "member", "set", "--subject-type", "user", "--subject", "alice", "--groups", "quarantine-targets"},
			`--groups[0]: quarantine-targets holds servers and agents`},
		{[]string{"--server", noServer, "quarantine", "add", "--network", "10.1.0.1/16", "--yes"},
			`--network: has host bits set: the network is 10.1.0.0/16 (got "10.1.0.1/16")`},
		{[]string{"--server", noServer, "rate-limit-quarantine-remove", "--subject-type", "user", "--subject", " "},
			`--subject: must not be empty`},
		{[]string{"--server", noServer, "token", "create", "--name", "ci deploy", "--role", "admin"},
			`--name: must contain only ASCII letters, digits, '.', '_', '-' and '@' (got "ci deploy")`},
	} {
		res := clitest.New(t).Run(tt.args...)
		if res.Code != cmdutil.ExitUsage || !strings.Contains(res.ErrOut, tt.want) || !strings.Contains(res.ErrOut, "nothing was sent") {
			t.Errorf("rlctl %s: exit %d, stderr %q\nwant exit 2 and %q", strings.Join(tt.args, " "), res.Code, res.ErrOut, tt.want)
		}
	}
}

// TestApplyFileRefusedLocally: apply and diff check the files with the
// server's rules before any request (exit 2, naming the file and the
// field), with simulate's words for the same file.
func TestApplyFileRefusedLocally(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := dir + "/bad.yaml"
	if err := os.WriteFile(file, []byte("definitions:\n- {axis: target, entity_type: mcp_server, name: kb, window_seconds: 60, max_requests: 10, algorithm: leaky_bucket}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rule := `definitions[0].algorithm: must be one of fixed_window, sliding_window, token_bucket (got "leaky_bucket")`
	r := clitest.New(t)
	for _, args := range [][]string{{"apply", "-f", file}, {"diff", "-f", file}, {"apply", "-f", file, "--dry-run=client"}} {
		res := r.Run(append([]string{"--server", noServer}, args...)...)
		if want := "Error: " + file + ": " + rule + "; nothing was sent\n"; res.Code != cmdutil.ExitUsage || res.ErrOut != want {
			t.Errorf("rlctl %s: exit %d, stderr %q\nwant exit 2, %q", strings.Join(args, " "), res.Code, res.ErrOut, want)
		}
	}
	if err := os.WriteFile(dir+"/t.csv", []byte("ts,caller\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("simulate", "-f", file, dir+"/t.csv"); res.Code != cmdutil.ExitUsage || !strings.Contains(res.ErrOut, rule) {
		t.Errorf("simulate: exit %d, stderr %q; want exit 2 and %q", res.Code, res.ErrOut, rule)
	}
}
