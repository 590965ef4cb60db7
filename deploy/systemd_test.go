// Package deploy holds what a platform team deploys rlapi with: a systemd
// unit and its environment file, a container image recipe, Kubernetes
// manifests. Its tests check each against the tool that would use it, as
// far as this machine allows (systemd-analyze, buildah and the image's own
// files, Kubernetes' Go types).
package deploy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
)

// rlapiBin is cmd/rlapi, built once for the package's tests (TestMain).
var rlapiBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rlctl-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rlapiBin = filepath.Join(dir, "rlapi")
	if out, err := exec.Command("go", "build", "-o", rlapiBin, "../cmd/rlapi").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ../cmd/rlapi: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// installed writes the units into dir as an operator would install them,
// with the binary and the environment file at the paths given instead of
// /usr/local/bin/rlapi and /etc/rlapi/rlapi.env (systemd-analyze checks
// that the binary exists and is executable).
func installed(t *testing.T, dir, bin, envFile string) []string {
	t.Helper()
	var units []string
	for _, name := range []string{"rlapi.service", "rlapi-migrate.service"} {
		b, err := os.ReadFile(filepath.Join("systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(b), "/usr/local/bin/rlapi", bin)
		s = strings.ReplaceAll(s, "/etc/rlapi/rlapi.env", envFile)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, path)
	}
	return units
}

// TestSystemdUnitsVerify: systemd's own checker finds nothing to say about
// the units (it exits 0 even on unknown keys and values it cannot parse,
// so any line it prints fails the test), and the service's exposure
// (systemd-analyze security) stays at 2.0 or below, systemd's "OK" band.
func TestSystemdUnitsVerify(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Fatal("systemd-analyze is missing: scripts/testdeps.sh installs Debian's systemd package")
	}
	envFile, err := filepath.Abs(filepath.Join("systemd", "rlapi.env"))
	if err != nil {
		t.Fatal(err)
	}
	units := installed(t, t.TempDir(), rlapiBin, envFile)
	out, err := exec.Command("systemd-analyze", append([]string{"verify"}, units...)...).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// --threshold is in tenths of the exposure level systemd prints.
	out, err = exec.Command("systemd-analyze", "security", "--offline=true", "--threshold=20", units[0]).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 2.0 (%v):\n%s", err, out)
	}
	if m := regexp.MustCompile(`Overall exposure level for \S+: (\S+)`).FindSubmatch(out); m != nil {
		t.Logf("exposure level: %s", m[1])
	} else {
		t.Errorf("systemd-analyze security printed no exposure level:\n%s", out)
	}
}

// readEnvFile reads KEY=VALUE lines as systemd's EnvironmentFile= does
// for the simple form the example uses; commented-out settings (#KEY=…)
// are returned apart, so a test can check them too.
func readEnvFile(t *testing.T, path string) (set map[string]string, commented []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	set = map[string]string{}
	assign := regexp.MustCompile(`^#?([A-Z][A-Z0-9_]*)=(.*)$`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		m := assign.FindStringSubmatch(line)
		switch {
		case m == nil:
			if line != "" && !strings.HasPrefix(line, "#") {
				t.Errorf("%s: %q is neither a setting nor a comment", path, line)
			}
		case strings.HasPrefix(line, "#"):
			commented = append(commented, m[1])
		default:
			set[m[1]] = m[2]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return set, commented
}

// knownVariables are the environment variables `rlapi serve -h` names:
// every setting rlapi reads.
func knownVariables(t *testing.T) []string {
	t.Helper()
	help, _ := exec.Command(rlapiBin, "serve", "-h").CombinedOutput()
	known := regexp.MustCompile(`\b(RLAPI_[A-Z0-9_]+|DATABASE_URL)\b`).FindAllString(string(help), -1)
	if len(known) < 10 {
		t.Fatalf("rlapi serve -h names %d variables; want its whole flag list:\n%s", len(known), help)
	}
	return known
}

// TestEnvFileNamesRealSettings: every variable the example sets or shows
// commented out is one rlapi reads (named in `rlapi serve -h`), so an
// operator who uncomments a line gets the setting it says.
func TestEnvFileNamesRealSettings(t *testing.T) {
	known := knownVariables(t)
	set, commented := readEnvFile(t, filepath.Join("systemd", "rlapi.env"))
	for name := range set {
		commented = append(commented, name)
	}
	for _, name := range commented {
		if !slices.Contains(known, name) {
			t.Errorf("rlapi.env names %s, which rlapi serve -h does not list", name)
		}
	}
	if _, ok := set["DATABASE_URL"]; !ok {
		t.Error("rlapi.env does not set DATABASE_URL, the one setting rlapi cannot start without")
	}
}

// TestUnitCommandsRun runs what the units run, with the example's
// environment and nothing else (as systemd would: no inherited
// variables), on a fresh database: rlapi-migrate's command migrates it,
// rlapi's serves and is ready, and SIGTERM (systemd's stop) ends it with
// exit status 0.
func TestUnitCommandsRun(t *testing.T) {
	bin := rlapiBin
	set, _ := readEnvFile(t, filepath.Join("systemd", "rlapi.env"))
	set["DATABASE_URL"] = pgtest.NewDatabase(t)
	set["RLAPI_ADDR"] = "127.0.0.1:0"
	var env []string
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	command := func(unit string) []string {
		b, err := os.ReadFile(filepath.Join("systemd", unit))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^ExecStart=/usr/local/bin/rlapi (.+)$`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s has no ExecStart=/usr/local/bin/rlapi line", unit)
		}
		return strings.Fields(string(m[1]))
	}

	migrate := exec.Command(bin, command("rlapi-migrate.service")...)
	migrate.Env = env
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("rlapi-migrate.service's command: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	serve := exec.CommandContext(ctx, bin, command("rlapi.service")...)
	serve.Env = env
	var stderr bytes.Buffer
	serve.Stderr = &stderr
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var a string
			if _, err := fmt.Sscanf(sc.Text(), "rlapi listening on http://%s", &a); err == nil {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		resp, err := http.Get("http://" + a + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /readyz: %s, want 200", resp.Status)
		}
	case <-ctx.Done():
		t.Fatalf("rlapi.service's command never listened:\n%s", stderr.String())
	}
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := serve.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v, want exit status 0\n%s", err, stderr.String())
	}
}
