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
// The Source polls the file (Options.Interval) and, when it changed and
// parses, serves the new state and tells its watchers (Change{All:
// true}). A change that does not parse, or a file gone missing, is logged
// and kept in Err; the last good state stays served, never an empty one.
//
// It reads with internal/applydoc, the decoder rlctl apply and rlapi's
// POST /api/apply use, so a file the gateway accepts is one rlctl apply
// accepts, and its problems are worded alike.
package filesource
