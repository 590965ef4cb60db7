package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// rlapi collects at GOGC=400 (defaultGOGC): the heap may grow to five times
// what is live. After a spike (a burst of large requests), the collector
// frees the memory but the runtime returns it to the system slowly, so the
// process kept its peak RSS for a long time (6.2 GB with 373 MB in use was
// measured). Two bounds keep it near what it uses:
//
//   - a soft memory limit, unless GOMEMLIMIT is set: 90% of the cgroup's
//     memory limit when there is one, so the collector works harder before
//     a container is killed rather than after;
//   - every idleCheckInterval, heap the runtime holds beyond twice the next
//     collection's goal and idleFloor (which the collector's own cycles
//     never reach: only a spike leaves that much) is handed back at once
//     (debug.FreeOSMemory: one collection).
const (
	idleCheckInterval = 30 * time.Second
	idleFloor         = 64 << 20
)

// cgroupMemoryFiles hold a container's memory limit: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memoryLimit is the soft memory limit serve sets: 90% of the first cgroup
// limit found in files, unless GOMEMLIMIT is set (the runtime has read it
// then, and it is the operator's). No limit ("max", or v1's huge
// sentinel) or no file: none.
func memoryLimit(getenv func(string) string, files []string) (int64, bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0, false // "max", or v1's "no limit"
		}
		return n / 10 * 9, true
	}
	return 0, false
}

// returnIdleMemory hands idle heap back to the system when the heap the
// runtime holds exceeds twice the next collection's goal plus idleFloor,
// and reports whether it did. In steady state the heap stays within its
// goal, so this runs only after a spike.
func returnIdleMemory() bool {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if held := m.HeapSys - m.HeapReleased; held <= 2*m.NextGC+idleFloor {
		return false
	}
	debug.FreeOSMemory()
	return true
}

// returnIdleMemoryUntil runs returnIdleMemory every idleCheckInterval until
// ctx ends.
func returnIdleMemoryUntil(ctx context.Context) {
	t := time.NewTicker(idleCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			returnIdleMemory()
		}
	}
}
