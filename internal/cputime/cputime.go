// Package cputime reads the CPU time the process has used: what a
// benchmark or load program on a busy machine can still measure honestly
// per decision, since it does not count what other processes run.
package cputime
