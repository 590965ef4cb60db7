//go:build unix

package main

import "syscall"

// openFileLimit is the process's limit on open files (the soft limit, which
// Go raises to the hard one at start), or 0 when unknown.
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}
