// Package repo holds no code: its tests hold rules over the repository as a
// whole, so that `make test` (what CI runs) fails on a wrong import arrow
// (deps_test.go) or on a large file committed by mistake (size_test.go).
package repo
