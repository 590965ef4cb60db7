package repo

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/rlctl/rlctl"

// pkgInfo is what `go list -json` says about one package.
type pkgInfo struct {
	ImportPath   string
	Standard     bool
	DepOnly      bool
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// graph is every package ./... builds, with its dependencies.
type graph map[string]*pkgInfo

// rule is one arrow that must not exist: no package that from selects may
// depend, directly or through others, on a package that forbid matches.
type rule struct {
	name   string // short, for -run
	want   string // the rule, as the failure states it
	from   func(path string) bool
	forbid func(p *pkgInfo) bool
	skip   string // non-empty: the rule is written but not yet enforced
	// direct: only the package's own imports count, not what they
	// import in turn.
	direct bool
}

// under matches path and the packages below it (module-relative).
func under(rel ...string) func(string) bool {
	return func(path string) bool {
		for _, r := range rel {
			full := module + "/" + r
			if path == full || strings.HasPrefix(path, full+"/") {
				return true
			}
		}
		return false
	}
}

// exactly matches the named packages only (module-relative).
func exactly(rel ...string) func(string) bool {
	return func(path string) bool {
		for _, r := range rel {
			if path == module+"/"+r {
				return true
			}
		}
		return false
	}
}

// prefixed matches import paths equal to or below any of the prefixes.
func prefixed(prefixes ...string) func(*pkgInfo) bool {
	return func(p *pkgInfo) bool {
		for _, pre := range prefixes {
			if p.ImportPath == pre || strings.HasPrefix(p.ImportPath, pre+"/") {
				return true
			}
		}
		return false
	}
}

func inModule(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// cliShared are the packages under internal/cli that hold no command: the
// dashboard may use them.
var cliShared = []string{"internal/cli/cmdutil", "internal/cli/iostreams", "internal/cli/printer", "internal/cli/config"}

// rules are the arrows the house style forbids (docs/design.md,
// "Dependency rules"). Test imports do not count: they are about what a binary
// links.
var rules = []rule{
	{
		name: "client-stdlib-only",
		want: "pkg/client imports only the standard library (and the module's own packages that do)",
		from: under("pkg/client"),
		forbid: func(p *pkgInfo) bool {
			return !p.Standard && !inModule(p.ImportPath)
		},
	},
	{
		name: "wire-data-only",
		want: "pkg/wire, the API's JSON envelopes that rlapi and pkg/client share, imports only the standard library and pkg/ratelimit",
		from: under("pkg/wire"),
		forbid: func(p *pkgInfo) bool {
			return !p.Standard && p.ImportPath != module+"/pkg/ratelimit"
		},
	},
	{
		name: "cli-no-store",
		want: "the CLI and the dashboard never link internal/store",
		from: func(path string) bool {
			// clitest starts a real rlapi for tests; rlctl does not link it.
			return (under("internal/cli", "internal/dash", "cmd/rlctl", "cmd/rlctl-gen")(path)) && !under("internal/cli/clitest")(path)
		},
		forbid: prefixed(module + "/internal/store"),
	},
	{
		name:   "store-no-http",
		want:   "internal/store does not import net/http",
		from:   under("internal/store"),
		forbid: prefixed("net/http"),
	},
	{
		name:   "store-no-migrations",
		want:   "internal/store links no migration code (tern, sprig, migrations: see internal/migrate)",
		from:   under("internal/store"),
		forbid: prefixed("github.com/jackc/tern", "github.com/Masterminds/sprig", module+"/migrations", module+"/internal/migrate"),
	},
	{
		name: "dash-no-commands",
		want: "the dashboard imports no CLI command package (shared code goes in cmdutil, printer, iostreams or config)",
		from: under("internal/dash"),
		forbid: func(p *pkgInfo) bool {
			if !under("internal/cli")(p.ImportPath) {
				return false
			}
			return !slices.ContainsFunc(cliShared, func(s string) bool { return exactly(s)(p.ImportPath) })
		},
	},
	{
		name: "enforce-core",
		want: "the core of pkg/enforce links no store, server, CLI or validator code (pgx, tern, sprig, validator, cobra, bubbletea, internal/api, internal/store, internal/validate)",
		from: exactly("pkg/enforce"),
		forbid: prefixed(
			"github.com/jackc", // pgx, tern
			"github.com/Masterminds/sprig",
			"github.com/go-playground", // validator
			"github.com/spf13/cobra",
			"github.com/charmbracelet/bubbletea",
			module+"/internal/api",
			module+"/internal/store",
			module+"/internal/validate",
		),
	},
	{
		name:   "enforce-core-no-observers",
		want:   "the core of pkg/enforce imports no observer of its decisions (pkg/enforce/violations, pkg/enforce/escalation): they implement enforce.Observer and are wired by who builds the Enforcer",
		from:   exactly("pkg/enforce"),
		forbid: prefixed(module+"/pkg/enforce/violations", module+"/pkg/enforce/escalation"),
	},
	{
		name:   "enforce-core-no-lease",
		want:   "the core of pkg/enforce does not import the lease layer (pkg/enforce/lease): leases wrap the counter store, the core knows nothing of them",
		from:   exactly("pkg/enforce"),
		forbid: prefixed(module + "/pkg/enforce/lease"),
	},
	{
		name:   "enforce-core-no-counteradmin",
		want:   "the core of pkg/enforce does not import pkg/enforce/counteradmin: listing and resetting counters is for the counters API, not for a decision",
		from:   exactly("pkg/enforce"),
		forbid: prefixed(module + "/pkg/enforce/counteradmin"),
	},
	{
		name:   "counterkey-below-core",
		want:   "pkg/enforce/counterkey and pkg/enforce/algorithm import no pkg/enforce core: the key type and the algorithms sit below the core and every store, so a new kind of key or algorithm is a change there alone",
		from:   under("pkg/enforce/counterkey", "pkg/enforce/algorithm"),
		forbid: func(p *pkgInfo) bool { return p.ImportPath == module+"/pkg/enforce" },
	},
	{
		name:   "plan-below-core",
		want:   "pkg/enforce/plan, which limits apply to a call, imports no pkg/enforce core: the core builds gates through it, so it cannot lean on the core in turn",
		from:   under("pkg/enforce/plan"),
		forbid: func(p *pkgInfo) bool { return p.ImportPath == module+"/pkg/enforce" },
	},
	{
		name:   "core-parts-below-core",
		want:   "pkg/enforce/source and pkg/enforce/counterstore (the seams) and the core's own parts (pkg/enforce/internal/...: the snapshot, the event log, the tallies) import no pkg/enforce core: the core is built from them, so they cannot lean on it in turn",
		from:   under("pkg/enforce/source", "pkg/enforce/counterstore", "pkg/enforce/internal"),
		forbid: func(p *pkgInfo) bool { return p.ImportPath == module+"/pkg/enforce" },
	},
	{
		name:   "enforce-no-grpc",
		want:   "pkg/enforce and its packages link no gRPC or Envoy code (grpc, go-control-plane, pkg/envoyrls): the Envoy protocol is an adapter over them",
		from:   under("pkg/enforce"),
		forbid: prefixed("google.golang.org/grpc", "github.com/envoyproxy", module+"/pkg/envoyrls"),
	},
	{
		name: "enforce-no-auththrottle",
		want: "the core and the counter stores link no failed-credential throttle (pkg/auththrottle): it is a layer around them, reaching the core through enforce.Guard only",
		from: func(path string) bool {
			// The conformance suite runs the throttle over every store.
			return under("pkg/enforce")(path) && !under("pkg/enforce/enforcetest")(path)
		},
		forbid: prefixed(module + "/pkg/auththrottle"),
	},
	{
		name:   "auththrottle-no-adapter",
		want:   "pkg/auththrottle links no protocol adapter and no rlapi code (pkg/httpgate, pkg/envoyrls, internal/...): a gateway links it beside the core",
		from:   under("pkg/auththrottle"),
		forbid: prefixed(module+"/pkg/httpgate", module+"/pkg/envoyrls", module+"/internal"),
	},
	{
		name:   "api-no-backend",
		want:   "internal/api links no counter store backend (pkg/enforce/postgres, pkg/enforce/redis, rueidis): cmd/rlapi builds them and hands them in",
		from:   under("internal/api"),
		forbid: prefixed(module+"/pkg/enforce/postgres", module+"/pkg/enforce/redis", "github.com/redis"),
	},
	{
		name:   "api-no-pgx",
		want:   "internal/api imports no pgx (pgxpool, pgconn...): it reaches the database through internal/store only",
		from:   under("internal/api"),
		forbid: prefixed("github.com/jackc"),
		direct: true,
	},
	{
		name:   "envoyrls-embeddable",
		want:   "pkg/envoyrls links no rlapi code (internal/...): a Go program embeds it with an *enforce.Enforcer alone",
		from:   under("pkg/envoyrls"),
		forbid: prefixed(module + "/internal"),
	},
}

// TestDependencyRules fails when an import arrow the house style forbids
// exists, naming the chain of imports that makes it.
func TestDependencyRules(t *testing.T) {
	g := loadGraph(t)
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			if r.skip != "" {
				t.Skip(r.skip)
			}
			matched := false
			for _, p := range g.sorted() {
				if !inModule(p) || g[p].DepOnly || !r.from(p) {
					continue
				}
				matched = true
				if r.direct {
					for _, imp := range g[p].Imports {
						if info := g[imp]; info != nil && r.forbid(info) {
							t.Errorf("%s: %s imports %s", r.want, p, imp)
						}
					}
					continue
				}
				if chain := g.path(p, r.forbid); chain != nil {
					t.Errorf("%s: %s imports %s\n\tvia %s", r.want, p, chain[len(chain)-1], strings.Join(chain, " -> "))
				}
			}
			if !matched {
				t.Errorf("%s: the rule applies to no package: was one renamed?", r.want)
			}
		})
	}
}

// TestNothingImportsCmd: the binaries sit at the top; no package (nor any
// test) imports one of them.
func TestNothingImportsCmd(t *testing.T) {
	g := loadGraph(t)
	cmd := prefixed(module + "/cmd")
	for _, p := range g.sorted() {
		info := g[p]
		if !inModule(p) {
			continue
		}
		for _, imp := range slices.Concat(info.Imports, info.TestImports, info.XTestImports) {
			if cmd(&pkgInfo{ImportPath: imp}) && imp != p {
				t.Errorf("%s imports %s: nothing imports cmd/", p, imp)
			}
		}
	}
}

// TestRuleCheckerFindsAChain checks the checker on a made-up graph: an arrow
// through another package is found and reported with its chain.
func TestRuleCheckerFindsAChain(t *testing.T) {
	g := graph{
		module + "/internal/dash":             {ImportPath: module + "/internal/dash", Imports: []string{"fmt", module + "/internal/cli/cmdutil"}},
		module + "/internal/cli/cmdutil":      {ImportPath: module + "/internal/cli/cmdutil", Imports: []string{module + "/internal/cli/ratelimitcmd"}},
		module + "/internal/cli/ratelimitcmd": {ImportPath: module + "/internal/cli/ratelimitcmd", Imports: []string{"fmt"}},
		"fmt":                                 {ImportPath: "fmt", Standard: true},
	}
	var dashRule rule
	for _, r := range rules {
		if r.name == "dash-no-commands" {
			dashRule = r
		}
	}
	chain := g.path(module+"/internal/dash", dashRule.forbid)
	want := []string{module + "/internal/dash", module + "/internal/cli/cmdutil", module + "/internal/cli/ratelimitcmd"}
	if !slices.Equal(chain, want) {
		t.Errorf("chain = %v, want %v", chain, want)
	}
	g[module+"/internal/cli/cmdutil"].Imports = nil
	if chain := g.path(module+"/internal/dash", dashRule.forbid); chain != nil {
		t.Errorf("chain = %v, want none", chain)
	}
}

// path returns the shortest import chain from start to a package forbid
// matches (start first), or nil when there is none.
func (g graph) path(start string, forbid func(*pkgInfo) bool) []string {
	parent := map[string]string{start: ""}
	queue := []string{start}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		info := g[cur]
		if info == nil {
			continue
		}
		if cur != start && forbid(info) {
			var chain []string
			for p := cur; p != ""; p = parent[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, imp := range info.Imports {
			if _, seen := parent[imp]; !seen {
				parent[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return nil
}

func (g graph) sorted() []string {
	paths := make([]string, 0, len(g))
	for p := range g {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}

// loadGraph runs `go list -deps -json ./...` at the module's root.
func loadGraph(t *testing.T) graph {
	t.Helper()
	root := moduleRoot(t)
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,DepOnly,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	g := graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkgInfo
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		g[p.ImportPath] = &p
	}
	if g[module+"/pkg/client"] == nil {
		t.Fatalf("go list in %s did not list %s/pkg/client", root, module)
	}
	return g
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		t.Fatal("not inside the module")
	}
	return filepath.Dir(gomod)
}
