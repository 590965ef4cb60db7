//go:build !unix

package main

func openFileLimit() uint64 { return 0 }
