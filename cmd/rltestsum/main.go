// Command rltestsum reads `go test -json` on stdin and prints what a plain
// `go test` prints (each package's ok or FAIL line, the output of every
// failed test, build errors), then closes with the count of tests that
// passed, failed and were skipped, naming the skipped ones. `make test`
// pipes go test through it, so a run that skipped tests says so in its
// last line instead of printing ok for every package.
//
// A test that passed although every one of its subtests was skipped
// tested nothing: it is reported as skipped, with its subtests counted.
//
// The exit status is 1 when a test, a package or a build failed (or the
// input held no test events at all), 0 otherwise: skips are reported, not
// failed, since a skip the tests cannot avoid on some machine (no usable
// open file limit, say) is no defect of the code under test.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}

// module is trimmed from package paths in the summary lines.
const module = "github.com/rlctl/rlctl/"

// event is one line of `go test -json` (cmd/test2json's TestEvent, plus
// the build events go test interleaves with them).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string
	// FailedBuild names the package whose build failed a test binary.
	FailedBuild string
}

// test is one test or subtest and what became of it.
type test struct {
	name     string
	action   string // pass, fail or skip; empty while it runs
	output   []string
	children []*test
}

type pkg struct {
	path  string
	tests map[string]*test
	top   []*test // top-level tests, in the order they started
	done  bool
}

type summary struct {
	out      io.Writer
	pkgs     map[string]*pkg
	order    []*pkg
	failed   bool
	events   int
	failures []string
}

func run(stdin io.Reader, stdout io.Writer) int {
	s := &summary{out: stdout, pkgs: map[string]*pkg{}}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event (go test's own messages, say): pass it on.
			fmt.Fprintf(stdout, "%s\n", line)
			continue
		}
		s.events++
		s.handle(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stdout, "rltestsum: read go test -json: %v\n", err)
		s.failed = true
	}
	return s.close()
}

func (s *summary) pkg(path string) *pkg {
	p := s.pkgs[path]
	if p == nil {
		p = &pkg{path: path, tests: map[string]*test{}}
		s.pkgs[path] = p
		s.order = append(s.order, p)
	}
	return p
}

// test finds or makes the test name of p, linked to its parent.
func (p *pkg) test(name string) *test {
	t := p.tests[name]
	if t != nil {
		return t
	}
	t = &test{name: name}
	p.tests[name] = t
	if i := strings.LastIndex(name, "/"); i >= 0 {
		parent := p.test(name[:i])
		parent.children = append(parent.children, t)
	} else {
		p.top = append(p.top, t)
	}
	return t
}

func (s *summary) handle(e event) {
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.out, e.Output)
		return
	case "build-fail":
		s.failed = true
		return
	}
	if e.Package == "" {
		return
	}
	p := s.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "output":
			// A plain go test prints no PASS line for a package
			// that passed, only its ok line.
			if e.Output != "PASS\n" {
				fmt.Fprint(s.out, e.Output)
			}
		case "pass", "skip":
			p.done = true
		case "fail":
			p.done = true
			s.failed = true
			before := len(s.failures)
			// A test binary that panicked or timed out leaves tests
			// without a result: their output says why.
			for _, t := range p.top {
				if t.action == "" {
					s.report(p, t)
				}
			}
			switch {
			case e.FailedBuild != "":
				s.failures = append(s.failures, strings.TrimPrefix(p.path, module)+" [build failed]")
			case len(s.failures) == before && !p.anyFailed():
				// TestMain failed, or the binary exited on its own.
				s.failures = append(s.failures, strings.TrimPrefix(p.path, module)+" (the package, outside any test)")
			}
		}
		return
	}
	t := p.test(e.Test)
	switch e.Action {
	case "output":
		t.output = append(t.output, e.Output)
	case "pass", "skip":
		t.action = e.Action
	case "fail":
		t.action = "fail"
		if !strings.Contains(t.name, "/") {
			s.report(p, t)
		}
	}
}

// report prints a failed top-level test as a plain go test would: each
// test's result line, then its messages, then its failed subtests
// indented below it, without the === framing lines that -json adds. The
// failed tests without failed subtests of their own go to the summary.
func (s *summary) report(p *pkg, t *test) {
	s.failed = true
	s.printFailed(p, t, "")
}

func (s *summary) printFailed(p *pkg, t *test, indent string) {
	if t.action == "" {
		t.action = "fail" // cut off by a panic or a timeout
	}
	var result, rest []string
	for _, o := range t.output {
		switch {
		case strings.HasPrefix(o, "=== "):
		case strings.HasPrefix(o, "--- "):
			result = append(result, o)
		default:
			rest = append(rest, o)
		}
	}
	for _, o := range append(result, rest...) {
		fmt.Fprint(s.out, indent+o)
	}
	leaf := true
	for _, c := range t.children {
		if c.action == "fail" || c.action == "" {
			leaf = false
			s.printFailed(p, c, indent+"    ")
		}
	}
	if leaf {
		s.failures = append(s.failures, name(p, t))
	}
}

func (p *pkg) anyFailed() bool {
	for _, t := range p.tests {
		if t.action == "fail" {
			return true
		}
	}
	return false
}

func name(p *pkg, t *test) string {
	return strings.TrimPrefix(p.path, module) + "." + t.name
}

// skipped reports whether t tested nothing: it was skipped, or it passed
// with subtests that all tested nothing.
func skipped(t *test) bool {
	if t.action == "skip" {
		return true
	}
	if t.action != "pass" || len(t.children) == 0 {
		return false
	}
	for _, c := range t.children {
		if !skipped(c) {
			return false
		}
	}
	return true
}

// leaves counts the tests under t that were skipped themselves.
func leaves(t *test) int {
	if len(t.children) == 0 || t.action == "skip" {
		return 1
	}
	n := 0
	for _, c := range t.children {
		n += leaves(c)
	}
	return n
}

// reason is the message a skipped test gave (its t.Skip line).
func reason(t *test) string {
	for i := len(t.output) - 1; i >= 0; i-- {
		o := strings.TrimSpace(t.output[i])
		if o == "" || strings.HasPrefix(o, "=== ") || strings.HasPrefix(o, "--- ") {
			continue
		}
		return o
	}
	return ""
}

// collect lists the skipped tests under t: the highest one of a tree that
// tested nothing, not each of its subtests.
func collect(p *pkg, t *test, list *[]string, reasons *[]string, count *int) {
	if skipped(t) {
		n := name(p, t)
		if t.action == "pass" {
			k := leaves(t)
			*count += k
			n += fmt.Sprintf(" (passed with all %d subtests skipped)", k)
			// The reason of the first subtest stands for the rest.
			c := t
			for len(c.children) > 0 && c.action != "skip" {
				c = c.children[0]
			}
			*reasons = append(*reasons, n+": "+reason(c))
		} else {
			*count++
			*reasons = append(*reasons, n+": "+reason(t))
		}
		*list = append(*list, n)
		return
	}
	for _, c := range t.children {
		collect(p, c, list, reasons, count)
	}
}

func (s *summary) close() int {
	var list, reasons []string
	count, passed := 0, 0
	for _, p := range s.order {
		for _, t := range p.tests {
			if t.action == "pass" && !skipped(t) {
				passed++
			}
		}
		for _, t := range p.top {
			collect(p, t, &list, &reasons, &count)
		}
		if !p.done {
			// The input ended before the package's result: go test
			// was stopped, or its output cut.
			fmt.Fprintf(s.out, "FAIL\t%s\t(no result: go test stopped before the package ended)\n", p.path)
			s.failed = true
		}
	}
	if s.events == 0 {
		fmt.Fprintln(s.out, "rltestsum: no go test -json events on stdin")
		s.failed = true
	}
	fmt.Fprintln(s.out)
	for _, r := range reasons {
		fmt.Fprintf(s.out, "skipped: %s\n", r)
	}
	fmt.Fprintf(s.out, "%d %s passed\n", passed, plural(passed))
	if len(s.failures) > 0 {
		fmt.Fprintf(s.out, "%d %s failed: %s\n", len(s.failures), plural(len(s.failures)), strings.Join(s.failures, ", "))
	}
	if count == 0 {
		fmt.Fprintln(s.out, "0 tests skipped")
	} else {
		fmt.Fprintf(s.out, "%d %s skipped: %s\n", count, plural(count), strings.Join(list, ", "))
	}
	if s.failed {
		return 1
	}
	return 0
}

func plural(n int) string {
	if n == 1 {
		return "test"
	}
	return "tests"
}
