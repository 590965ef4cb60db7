package enforce_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreLinksNoBackend: a gateway that imports pkg/enforce links no
// database driver, no migration tool, no validator and none of rlctl's
// internal packages; the
// backends (pkg/enforce/postgres) are imported only by who picks them.
func TestCoreLinksNoBackend(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/rlctl/rlctl/pkg/enforce").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/jackc/", "github.com/go-playground/", "github.com/Masterminds/",
			"github.com/rlctl/rlctl/internal/", "github.com/jackc/tern", "sprig", "github.com/spf13/cobra",
			"github.com/charmbracelet/"} {
			if strings.Contains(dep, banned) {
				t.Errorf("pkg/enforce links %s", dep)
			}
		}
	}
}

// TestCoreImportsNoObserver: the record of violations and escalation are
// observers of the core's decisions (observer.go), in packages of their
// own that import the core; the core links neither, so a gateway that
// wants neither links neither.
func TestCoreImportsNoObserver(t *testing.T) {
	t.Parallel()
	const module = "github.com/rlctl/rlctl/"
	out, err := exec.Command("go", "list", "-deps", module+"pkg/enforce").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, observer := range []string{module + "pkg/enforce/violations", module + "pkg/enforce/escalation"} {
			if dep == observer {
				t.Errorf("pkg/enforce links the observer %s", dep)
			}
		}
	}
}

// TestCoreHoldsNoProtocol: the protocols are adapters around the core
// (pkg/httpgate builds a Call from an HTTP request and renders the
// Decision as status, problem and headers; pkg/envoyrls does the same for
// Envoy's gRPC protocol), so pkg/enforce and its packages link neither,
// and the core itself does not import net/http: it decides, it does not
// answer requests.
func TestCoreHoldsNoProtocol(t *testing.T) {
	t.Parallel()
	const module = "github.com/rlctl/rlctl/"
	out, err := exec.Command("go", "list", "-deps", module+"pkg/enforce/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, adapter := range []string{module + "pkg/httpgate", module + "pkg/envoyrls"} {
			if dep == adapter || strings.HasPrefix(dep, adapter+"/") {
				t.Errorf("pkg/enforce or one of its packages links the adapter %s", dep)
			}
		}
	}
	out, err = exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, module+"pkg/enforce").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(string(out)) {
		if imp == "net/http" || strings.HasPrefix(imp, "net/http/") {
			t.Errorf("pkg/enforce imports %s", imp)
		}
	}
}

// TestCoreLinksNoThrottle: the failed-credential throttle
// (pkg/auththrottle) is a layer around the core, reaching it through
// enforce.Guard only: the core, and each counter store, link none of it.
func TestCoreLinksNoThrottle(t *testing.T) {
	t.Parallel()
	assertNotLinked(t, "pkg/auththrottle", "pkg/enforce", "pkg/enforce/memory", "pkg/enforce/postgres", "pkg/enforce/redis")
}

// TestCoreLinksNoFallback: the degraded mode (pkg/enforce/degrade) is an
// implementation of enforce.Fallback beside the core, which reaches it
// only through that seam: the core and the counter stores link none of
// it, so a gateway that wants no degraded mode links none.
func TestCoreLinksNoFallback(t *testing.T) {
	t.Parallel()
	assertNotLinked(t, "pkg/enforce/degrade", "pkg/enforce", "pkg/enforce/memory", "pkg/enforce/postgres", "pkg/enforce/redis", "pkg/enforce/lease")
}

// assertNotLinked fails t for each of pkgs (the module's) that links
// banned (the module's).
func assertNotLinked(t *testing.T, banned string, pkgs ...string) {
	t.Helper()
	const module = "github.com/rlctl/rlctl/"
	for _, pkg := range pkgs {
		out, err := exec.Command("go", "list", "-deps", module+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == module+banned {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
