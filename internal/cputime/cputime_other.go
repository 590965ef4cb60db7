//go:build !unix

package cputime

import "time"

// Process is unknown here: 0 (callers report no CPU figure).
func Process() time.Duration { return 0 }
