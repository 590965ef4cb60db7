//go:build unix

package enforce_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used (user and system, every
// thread): what a benchmark on a busy machine can still measure honestly.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
