//go:build unix

package filesource_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/filesource"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

// returns runs f and fails the test if it has not returned in a while:
// the bound is for a hang only, far above what f takes.
func returns(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s never returned", what)
	}
}

// TestSpecialFilesRefused: a state file replaced by something that is not
// a regular file (a FIFO with no writer, a symlink to /dev/zero, a
// directory, a socket) or by a file over MaxFileSize is refused with an
// error saying what it is, without blocking and without reading it
// whole; the previous state stays in force, a regular file put back
// loads, and the Enforcer running on the Source closes.
func TestSpecialFilesRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, want string
		make       func(t *testing.T, path string)
	}{
		{"fifo", "a named pipe (FIFO)", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink to /dev/zero", "a character device (/dev/zero)", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"directory", "a directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"socket", "a socket", func(t *testing.T, path string) {
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
		}},
		{"over the size bound", "a state file is at most 33554432 bytes (32 MiB)", func(t *testing.T, path string) {
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// Sparse: 32 MiB and one byte of size, no disk written.
			if err := f.Truncate(filesource.MaxFileSize + 1); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			// A short path: a unix socket's name is at most 108 bytes.
			dir, err := os.MkdirTemp("", "fs")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			path := filepath.Join(dir, "s.yaml")
			write(t, path, stateFile("5"))
			src, err := filesource.New(path, filesource.Options{Interval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			e, err := enforce.New(ctx, enforce.Options{Counters: memory.New(), Source: src})
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			t.Cleanup(func() {
				if !closed {
					returns(t, "Enforcer.Close", e.Close)
				}
			})

			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			tc.make(t, path)
			var st enforce.State
			returns(t, "Load", func() { st, err = src.Load(ctx) })
			if err != nil {
				t.Fatalf("Load: %v, want the last good state", err)
			}
			if got := limitOf(t, st); got != 5 {
				t.Errorf("limit %d, want the last good 5", got)
			}
			if err := src.Err(); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Err() = %v, want it to name %s and say %q", err, path, tc.want)
			}

			// A regular file put back (through a symlink, which is fine)
			// loads: the poller is not stuck on what came before.
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			real := filepath.Join(dir, "real.yaml")
			write(t, real, stateFile("7"))
			if err := os.Symlink(real, path); err != nil {
				t.Fatal(err)
			}
			returns(t, "Load", func() {
				// A change is read at the look after the one that saw it,
				// and a Load joins a poll already under way (which may
				// have looked before the file came back), so it can take
				// a few Loads; a poller stuck on what came before never
				// gets there.
				for range 50 {
					if st, err = src.Load(ctx); err != nil || (limitOf(t, st) == 7 && src.Err() == nil) {
						return
					}
				}
			})
			if err != nil || limitOf(t, st) != 7 || src.Err() != nil {
				t.Errorf("after a regular file came back: limit %d, Load %v, Err %v; want 7 and no errors", limitOf(t, st), err, src.Err())
			}
			returns(t, "Enforcer.Close", e.Close)
			closed = true
		})
	}
}
