package main

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// After a spike is freed, rlapi hands the idle heap back to the system
// instead of keeping its peak.
func TestReturnIdleMemoryAfterASpike(t *testing.T) {
	// Not parallel: the heap is the process's.
	spike := make([][]byte, 256)
	for i := range spike {
		spike[i] = make([]byte, 1<<20)
		spike[i][0] = 1
	}
	runtime.KeepAlive(spike)
	spike = nil
	runtime.GC()
	if !returnIdleMemory() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		t.Fatalf("256 MB freed: the heap holds %d MB (next goal %d MB) and was not returned", (m.HeapSys-m.HeapReleased)>>20, m.NextGC>>20)
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if held := m.HeapSys - m.HeapReleased; held > 2*m.NextGC+idleFloor {
		t.Errorf("after returning: the heap holds %d MB, want at most %d MB", held>>20, (2*m.NextGC+idleFloor)>>20)
	}
	if returnIdleMemory() {
		t.Error("returned again with nothing idle")
	}
}

func TestMemoryLimitFromTheCgroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, v string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	v2, unlimited, v1none := write("v2", "1073741824\n"), write("max", "max\n"), write("v1", "9223372036854771712\n")
	for _, c := range []struct {
		name  string
		vars  map[string]string
		files []string
		want  int64
		ok    bool
	}{
		{"a cgroup v2 limit", nil, []string{v2}, 1073741824 / 10 * 9, true},
		{"GOMEMLIMIT is the operator's", map[string]string{"GOMEMLIMIT": "2GiB"}, []string{v2}, 0, false},
		{"no limit", nil, []string{unlimited}, 0, false},
		{"v1's no limit", nil, []string{v1none}, 0, false},
		{"no cgroup file, then v2", nil, []string{filepath.Join(dir, "none"), v2}, 1073741824 / 10 * 9, true},
		{"no file", nil, []string{filepath.Join(dir, "none")}, 0, false},
	} {
		got, ok := memoryLimit(env(c.vars), c.files)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
