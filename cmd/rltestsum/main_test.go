package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The files in testdata are recorded `go test -json` runs (Go 1.26) of
// small packages: passes (a test and a subtest that pass), skips (a
// skipped test, a test whose subtests all skip, one where one of two
// skips), fails (a failed subtest), panics (a test that panics) and
// buildfail (a test file that does not compile).
func recorded(t *testing.T, names ...string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile("testdata/" + n + ".jsonl")
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

func summarize(t *testing.T, input string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := run(strings.NewReader(input), &out)
	return out.String(), code
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input []string
		code  int
		// want are lines the output holds, in this order; absent
		// must not be in it.
		want   []string
		absent []string
	}{{
		name:   "all pass",
		input:  []string{"passes"},
		want:   []string{"ok  \texample.com/passes\t", "2 tests passed", "0 tests skipped"},
		absent: []string{"=== RUN", "--- PASS", "PASS\n", "failed"},
	}, {
		name:  "skips are named",
		input: []string{"skips"},
		want: []string{
			"ok  \texample.com/skips\t",
			"skipped: example.com/skips.TestSkipped: x_test.go:7: REDIS_URL is unset",
			"3 tests passed",
			"4 tests skipped: example.com/skips.TestSkipped, " +
				"example.com/skips.TestAllSubtestsSkipped (passed with all 2 subtests skipped), " +
				"example.com/skips.TestSomeSubtestsSkipped/skips",
		},
		// A test that passed with every subtest skipped does not
		// count as passed, nor are its subtests listed one by one.
		absent: []string{"TestAllSubtestsSkipped/standalone", "TestSomeSubtestsSkipped,", "--- SKIP"},
	}, {
		name:  "a failed subtest prints as go test prints it",
		input: []string{"fails"},
		code:  1,
		want: []string{
			"--- FAIL: TestFails (0.00s)\n    --- FAIL: TestFails/bad (0.00s)\n        x_test.go:9: got 3, want 4\n",
			"FAIL\texample.com/fails\t",
			"2 tests passed",
			"1 test failed: example.com/fails.TestFails/bad",
			"0 tests skipped",
		},
		absent: []string{"=== RUN", "TestFails/ok"},
	}, {
		name:  "a panic",
		input: []string{"panics"},
		code:  1,
		want:  []string{"--- FAIL: TestPanics", "panic: assignment to entry in nil map", "1 test failed: example.com/panics.TestPanics"},
	}, {
		name:  "a build failure",
		input: []string{"buildfail"},
		code:  1,
		want:  []string{"./x_test.go:5:33: undefined: undefined", "FAIL\texample.com/buildfail [build failed]", "1 test failed: example.com/buildfail [build failed]"},
	}, {
		name:  "a failure among passes and skips",
		input: []string{"passes", "skips", "fails"},
		code:  1,
		want:  []string{"ok  \texample.com/passes", "ok  \texample.com/skips", "FAIL\texample.com/fails", "7 tests passed", "1 test failed: example.com/fails.TestFails/bad", "4 tests skipped: example.com/skips.TestSkipped,"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := summarize(t, recorded(t, tc.input...))
			if code != tc.code {
				t.Errorf("exit status %d, want %d; output:\n%s", code, tc.code, out)
			}
			rest := out
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (after the lines before it); output:\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			for _, a := range tc.absent {
				if strings.Contains(out, a) {
					t.Errorf("output holds %q; output:\n%s", a, out)
				}
			}
			if l := lastLine(out); !strings.HasSuffix(l, " skipped") && !strings.Contains(l, " skipped: ") {
				t.Errorf("last line %q: want the count of skipped tests", l)
			}
		})
	}
}

// A run cut off before a package's result (go test killed, say) fails:
// the packages it did not finish were not tested.
func TestSummaryCutOff(t *testing.T) {
	lines := strings.SplitAfter(recorded(t, "passes"), "\n")
	out, code := summarize(t, strings.Join(lines[:len(lines)/2], ""))
	if code != 1 || !strings.Contains(out, "FAIL\texample.com/passes\t(no result") {
		t.Errorf("cut-off input: exit status %d, output:\n%s\nwant 1 and a FAIL line for the package", code, out)
	}
	if out, code := summarize(t, ""); code != 1 || !strings.Contains(out, "no go test -json events") {
		t.Errorf("empty input: exit status %d, output:\n%s\nwant 1 and a message", code, out)
	}
}

// Lines that are not events (go's own messages) pass through unchanged.
func TestSummaryPassesOtherLines(t *testing.T) {
	out, code := summarize(t, "go: downloading example.com/x v1.0.0\n"+recorded(t, "passes"))
	if code != 0 || !strings.HasPrefix(out, "go: downloading example.com/x v1.0.0\n") {
		t.Errorf("exit status %d, output:\n%s\nwant 0 and the go line first", code, out)
	}
}
