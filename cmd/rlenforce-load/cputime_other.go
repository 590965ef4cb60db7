//go:build !unix

package main

import "time"

// processCPU is unknown here: the -cpu table's proc column reads 0.
func processCPU() time.Duration { return 0 }
