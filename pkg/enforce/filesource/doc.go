// Package filesource is an enforce.Source that reads the definitions,
// memberships and administrators from a file in the format of rlctl apply
// and rlctl export (YAML or JSON, several YAML documents merged), so a
// gateway can enforce with no rlapi and no database
// (examples/filegateway).
//
// The file is the whole state: what it does not list does not exist
// (the quarantine sentinels excepted: they are added, enabled, unless
// listed). It is read strictly and checked by the same rules rlapi
// applies (internal/validate): a problem names the document and field.
// The Source polls the file (Options.Interval) and, when it changed, held
// still for a poll, and parses, serves the new state and tells its
// watchers (Change{All: true}). A change that does not parse, or a file
// gone missing, is logged once and kept in Err; the last good state stays
// served, never an empty one.
//
// # Replacing the file
//
// Replace the file atomically: write the new state to a temporary file in
// the same directory (the same file system), then rename it over the old
// one (mv, os.Rename, what editors and configuration managers do). A
// reader then sees the old file or the new one, never a part of either. A
// file written in place can be seen half-written, and a half-written
// file cut at a line boundary parses. So a reload, not the first load, is
// refused when it looks cut short:
//
//   - it leaves a quarantine group (quarantine-callers,
//     quarantine-targets) that had members with none: a cut before the
//     memberships would lift an incident's quarantine;
//   - it holds fewer than (1 - Options.MaxShrink) of the definitions and
//     memberships before it (default 0.5: fewer than half; the sentinels
//     are not counted).
//
// Such a refusal is one WARN line naming the file and why, Err, and a
// count in rlctl_filesource_refused_total{reason="quarantine"|"shrink"}.
// When the change is meant, end the file with the line
// "# rlctl: allow-shrink" (AllowShrinkMarker; it must be the last line,
// which a cut drops), or set Options.AllowShrink, or restart: the first
// load has no state to compare with.
//
// # What is read
//
// The file must be a regular file, or a symlink to one, of at most
// MaxFileSize (32 MiB). It is opened without blocking (O_NONBLOCK) and
// checked with fstat before anything is read, and read through a limit:
// a FIFO, a device (a symlink to /dev/zero), a directory or a socket is
// refused with an error saying what it is, as is a larger file, and the
// last good state stays. Polls run in their own goroutine; Load and
// Watch wait for one only as long as their context, so shutdown never
// waits on a read.
//
// It reads with internal/applydoc, the decoder rlctl apply and rlapi's
// POST /api/apply use, so a file the gateway accepts is one rlctl apply
// accepts, and its problems are worded alike.
package filesource
