package state_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/state"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// benchState is the size docs/api.md quotes for POST /api/apply: 10,000
// definitions and 100,000 memberships.
func benchState() state.Document {
	const defs, mems = 10_000, 100_000
	d := state.Document{APIVersion: state.APIVersion, Kind: state.Kind,
		Definitions: make([]ratelimit.Definition, 0, defs), Memberships: make([]ratelimit.Membership, 0, mems)}
	for i := range defs {
		switch i % 4 {
		case 0, 1:
			d.Definitions = append(d.Definitions, ratelimit.Definition{Axis: "caller", EntityType: "group", Name: fmt.Sprintf("team-%05d", i),
				WindowSeconds: 60, UserMaxRequests: ptr(100 + i%50), AgentMaxRequests: ptr(50), Enabled: true, Description: "generated"})
		case 2:
			d.Definitions = append(d.Definitions, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: fmt.Sprintf("srv-%05d", i),
				WindowSeconds: 60, MaxRequests: ptr(1000), Enabled: true})
		default:
			d.Definitions = append(d.Definitions, ratelimit.Definition{Axis: "caller_target", EntityType: "group", Name: fmt.Sprintf("team-%05d", i-3),
				WindowSeconds: 3600, UserMaxRequests: ptr(500), AgentMaxRequests: ptr(200), Enabled: true})
		}
	}
	for i := range mems {
		m := ratelimit.Membership{SubjectType: "user", Subject: fmt.Sprintf("user-%06d", i),
			Groups: []string{fmt.Sprintf("team-%05d", (i%5000)/2*4), fmt.Sprintf("team-%05d", (i%5000)/2*4+1)}}
		if i%1000 == 0 {
			m.Groups = append(m.Groups, ratelimit.GroupQuarantineCallers)
			m.QuarantineReason = "generated"
		}
		d.Memberships = append(d.Memberships, m)
	}
	return d
}

func writeBenchFiles(b *testing.B) map[string]string {
	b.Helper()
	doc := benchState()
	dir := b.TempDir()
	files := map[string]string{}
	for ext, write := range map[string]func(*bytes.Buffer) error{
		"yaml": func(w *bytes.Buffer) error { return doc.WriteYAML(w) },
		"json": func(w *bytes.Buffer) error { return doc.WriteJSON(w) },
	} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			b.Fatal(err)
		}
		files[ext] = filepath.Join(dir, "state."+ext)
		if err := os.WriteFile(files[ext], buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: %.1f MiB", files[ext], float64(buf.Len())/(1<<20))
	}
	return files
}

// BenchmarkApplyCLI runs `rlctl apply -f FILE` of 10,000 definitions and
// 100,000 memberships through cli.Run against a real rlapi: into an empty
// server (target < 15 s), then again as a no-op (target < 5 s). load is
// the reading and checking of the file alone.
//
//	DATABASE_URL=$(scripts/devdb.sh url) go test -run '^$' -bench BenchmarkApplyCLI -benchtime 3x ./internal/cli/state/
func BenchmarkApplyCLI(b *testing.B) {
	files := writeBenchFiles(b)
	total := fmt.Sprintf("unchanged %d\n", 110_000)
	for _, ext := range []string{"yaml", "json"} {
		file := files[ext]
		b.Run("load/"+ext, func(b *testing.B) {
			for b.Loop() {
				if _, err := state.Load([]string{file}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("empty/"+ext, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				r := clitest.Start(b)
				b.StartTimer()
				res := r.Run("apply", "-f", file)
				if res.Code != 0 || !strings.HasSuffix(res.Out, "created 110000, updated 0, deleted 0, unchanged 0\n") {
					b.Fatalf("apply: exit %d, %s", res.Code, tail(res.Out+res.ErrOut))
				}
			}
		})
		b.Run("noop/"+ext, func(b *testing.B) {
			r := clitest.Start(b)
			r.Must("apply", "-f", file)
			for b.Loop() {
				if got := r.Must("apply", "-f", file); got != "created 0, updated 0, deleted 0, "+total {
					b.Fatalf("re-apply: %s", tail(got))
				}
			}
		})
	}
}

func tail(s string) string { return s[max(0, len(s)-300):] }
