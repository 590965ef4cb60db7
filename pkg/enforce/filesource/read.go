package filesource

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MaxFileSize bounds the state file: 32 MiB (about 100,000 definitions),
// the bound rlapi's POST /api/apply puts on a body. A larger file is
// refused, and it is read through a limit, so a file that grows while it
// is read costs at most this much memory.
const MaxFileSize = 32 << 20

// openState opens path for reading without blocking and checks it is a
// regular file of at most MaxFileSize bytes. A symlink is followed (a
// symlink to a regular file is fine); a FIFO, a device (a symlink to
// /dev/zero), a directory or a socket is refused, naming what it is.
// O_NONBLOCK keeps open(2) of a FIFO with no writer from waiting for one;
// the stat before it refuses a socket, which open(2) cannot open, with
// the same words.
func openState(path string) (*os.File, fs.FileInfo, error) {
	if info, err := os.Stat(path); err != nil {
		return nil, nil, err
	} else if err := regular(path, info); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	// Checked again on what was opened: the path may have been replaced
	// since the stat.
	info, err := f.Stat()
	if err == nil {
		err = regular(path, info)
	}
	if err == nil && info.Size() > MaxFileSize {
		err = tooLarge(path, fmt.Sprintf("%d bytes", info.Size()))
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// readState reads what openState opened, through a limit of MaxFileSize.
func readState(path string, f *os.File) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, tooLarge(path, "more than that")
	}
	return data, nil
}

func tooLarge(path, size string) error {
	return fmt.Errorf("%s: %s: a state file is at most %d bytes (32 MiB)", path, size, MaxFileSize)
}

// regular refuses what is not a regular file, naming what it is and, for
// a symlink, where it leads.
func regular(path string, info fs.FileInfo) error {
	if info.Mode().IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch m := info.Mode(); {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	}
	if target, err := filepath.EvalSymlinks(path); err == nil && target != filepath.Clean(path) {
		what += " (" + target + ")"
	}
	return fmt.Errorf("%s: %s: a state file must be a regular file (or a symlink to one)", path, what)
}
