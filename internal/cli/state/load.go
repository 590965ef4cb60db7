package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Stdin is the -f value that reads standard input.
const Stdin = "-"

// stdinName names standard input in messages.
const stdinName = "<stdin>"

// maxLoadProblems bounds how many problems a load error spells out.
const maxLoadProblems = 20

// source is where one object of a merged state came from.
type source struct {
	file  string // as the user named it; later YAML documents get " (document N)"
	index int    // its place in that file's list
}

func (s source) String(section string) string {
	return fmt.Sprintf("%s: %s[%d]", s.file, section, s.index)
}

// Loaded is the desired state read from one or more files, merged: a
// section present in any file is present, its objects concatenated in the
// order the files were read.
type Loaded struct {
	Doc   Document
	Files []string // every file read, in order

	// Where each object of Doc came from, index for index.
	defSrc, memSrc, adminSrc []source
}

// Load reads each path: a file (YAML or JSON by extension, else by its
// first character), a directory (its *.yaml, *.yml and *.json files in
// name order, not recursively) or Stdin. Problems in the files (syntax,
// unknown fields, a wrong header, duplicate ids) are collected across all
// of them and returned together as one *LoadError.
//
// Files over the apply's limit (applydoc.MaxBody), alone or together, are
// refused before any is read; standard input is read up to the limit.
func Load(paths []string, stdin io.Reader) (*Loaded, error) {
	l := &Loaded{}
	var probs []string
	expanded := map[string][]string{}
	var all []string
	for _, p := range paths {
		if p == Stdin {
			continue
		}
		files, err := expand(p)
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		expanded[p] = files
		all = append(all, files...)
	}
	if tooBig := checkSizes(all); len(tooBig) > 0 {
		return nil, &LoadError{Problems: tooBig}
	}
	var used int64
	for _, f := range all {
		if info, err := os.Stat(f); err == nil {
			used += info.Size()
		}
	}
	stdinRead := false
	for _, p := range paths {
		switch {
		case p == Stdin:
			if stdinRead {
				probs = append(probs, "-f -: standard input can be read only once")
				continue
			}
			stdinRead = true
			data, tooBig, err := readLimited(stdinName, stdin, used)
			if err != nil {
				probs = append(probs, fmt.Sprintf("%s: %v", stdinName, err))
				continue
			}
			if tooBig != "" {
				return nil, &LoadError{Problems: []string{tooBig}}
			}
			probs = append(probs, l.add(stdinName, data, applydoc.Sniff(data))...)
		default:
			for _, f := range expanded[p] {
				data, tooBig, err := readFile(f)
				if err != nil {
					probs = append(probs, err.Error())
					continue
				}
				if tooBig != "" {
					return nil, &LoadError{Problems: []string{tooBig}}
				}
				probs = append(probs, l.add(f, data, formatOf(f, data))...)
			}
		}
	}
	if len(probs) == 0 {
		probs = append(l.invalid(), l.duplicates()...)
	}
	if len(probs) == 0 && l.Doc.Definitions == nil && l.Doc.Memberships == nil && l.Doc.Admins == nil {
		probs = append(probs, fmt.Sprintf("%s: no definitions, memberships or admins section: nothing to apply", strings.Join(l.Files, ", ")))
	}
	if len(probs) > 0 {
		return nil, &LoadError{Problems: probs}
	}
	l.Doc.APIVersion, l.Doc.Kind = APIVersion, Kind
	return l, nil
}

// LoadError lists every problem found in the files. Nothing was sent.
type LoadError struct {
	Problems []string
}

func (e *LoadError) Error() string {
	if len(e.Problems) == 1 {
		if strings.Contains(e.Problems[0], "nothing was sent") {
			return e.Problems[0]
		}
		return e.Problems[0] + "; nothing was sent"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems in the files; nothing was sent:", len(e.Problems))
	for _, p := range e.Problems[:min(len(e.Problems), maxLoadProblems)] {
		b.WriteString("\n  " + p)
	}
	if n := len(e.Problems) - maxLoadProblems; n > 0 {
		fmt.Fprintf(&b, "\n  and %d more", n)
	}
	return b.String()
}

// expand turns a -f path into the files to read.
func expand(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p) // sorted by name
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no .yaml, .yml or .json files in the directory", p)
	}
	return files, nil
}

// formatOf picks a file's format by its extension, or by its content when
// the extension says nothing.
func formatOf(name string, data []byte) applydoc.Format {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return applydoc.FormatJSON
	case ".yaml", ".yml":
		return applydoc.FormatYAML
	}
	return applydoc.Sniff(data)
}

// add parses one file (applydoc.DecodeFile: every YAML document) and
// merges it into l, returning its problems, each naming the file (and the
// document, when the file holds more than one) and the field.
func (l *Loaded) add(name string, data []byte, f applydoc.Format) []string {
	l.Files = append(l.Files, name)
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // editors on Windows add one
	parts := applydoc.DecodeFile(data, f, applydoc.Options{})
	partName := func(i int) string {
		if len(parts) > 1 {
			return fmt.Sprintf("%s (document %d)", name, i+1)
		}
		return name
	}
	var probs []string
	for i, p := range parts {
		for _, fe := range p.Problems {
			probs = append(probs, partName(i)+": "+fe.Message)
		}
		if p.Err != nil {
			probs = append(probs, partName(i)+": "+fatalMessage(data, p.Err))
		}
	}
	if len(probs) == 0 {
		for i, p := range parts {
			l.merge(partName(i), p.Doc)
		}
	}
	return probs
}

// fatalMessage words what ended the reading of a document: its shape, or
// where its JSON broke.
func fatalMessage(data []byte, err error) string {
	var fe *applydoc.FatalError
	if errors.As(err, &fe) && fe.Err == nil {
		return fe.Message
	}
	return syntaxMessage(data, err)
}

// merge appends doc's present sections to l.
func (l *Loaded) merge(name string, doc applydoc.Document) {
	l.Doc.Definitions, l.defSrc = mergeSection(l.Doc.Definitions, l.defSrc, doc.Definitions, name)
	l.Doc.Memberships, l.memSrc = mergeSection(l.Doc.Memberships, l.memSrc, doc.Memberships, name)
	l.Doc.Admins, l.adminSrc = mergeSection(l.Doc.Admins, l.adminSrc, doc.Admins, name)
}

func mergeSection[T any](have []T, src []source, add []T, name string) ([]T, []source) {
	if add == nil {
		return have, src
	}
	if have == nil {
		have = []T{}
	}
	for i := range add {
		src = append(src, source{file: name, index: i})
	}
	return append(have, add...), src
}

// duplicates finds objects that name the same id, within a file or across
// files, comparing ids as the server will: after normalization
// ("/mcpgw/" is "mcpgw"). Objects the rules refuse are skipped: invalid
// reports them.
func (l *Loaded) duplicates() []string {
	var probs []string
	probs = append(probs, dupes("definitions", l.Doc.Definitions, l.defSrc, func(d ratelimit.Definition) (string, bool) {
		n, err := validate.Definition(d, validate.Floors{})
		return n.ID, err == nil
	})...)
	probs = append(probs, dupes("memberships", l.Doc.Memberships, l.memSrc, func(m ratelimit.Membership) (string, bool) {
		n, err := validate.Membership(m)
		return n.ID, err == nil
	})...)
	probs = append(probs, dupes("admins", l.Doc.Admins, l.adminSrc, func(a ratelimit.Admin) (string, bool) {
		n, err := validate.Admin(a)
		return n.Key(), err == nil
	})...)
	return probs
}

// invalid checks every object with the server's rules (internal/validate)
// but its floors, which are the server's configuration: an object the
// server would refuse on them is refused here, named by its file and
// place, before anything is sent. The floors are left to the server.
func (l *Loaded) invalid() []string {
	var probs []string
	for i, d := range l.Doc.Definitions {
		d.Scope = "" // read-only: derived from the name, as the server does
		_, err := validate.Definition(d, validate.Floors{})
		probs = append(probs, placed(l.defSrc[i], "definitions", err)...)
	}
	for i, m := range l.Doc.Memberships {
		_, err := validate.Membership(m)
		probs = append(probs, placed(l.memSrc[i], "memberships", err)...)
	}
	for i, a := range l.Doc.Admins {
		_, err := validate.Admin(a)
		probs = append(probs, placed(l.adminSrc[i], "admins", err)...)
	}
	return probs
}

// placed words err's problems, found in the object at src, as
// "a.yaml: definitions[3].algorithm: must be ...".
func placed(src source, section string, err error) []string {
	if err == nil {
		return nil
	}
	fes := validate.Under(fmt.Sprintf("%s[%d]", section, src.index), err)
	out := make([]string, len(fes))
	for i, fe := range fes {
		out[i] = src.file + ": " + fe.Message
	}
	return out
}

func dupes[T any](section string, items []T, src []source, id func(T) (string, bool)) []string {
	var probs []string
	first := make(map[string]int, len(items))
	for i, it := range items {
		k, ok := id(it)
		if !ok {
			continue
		}
		if j, dup := first[k]; dup {
			probs = append(probs, fmt.Sprintf("%s: duplicate id %q, also at %s", src[i].String(section), k, src[j].String(section)))
			continue
		}
		first[k] = i
	}
	return probs
}

// syntaxMessage words a JSON syntax error with its line and column. A
// json.Decoder's offsets count from where its current value began, so the
// place is found again by checking the whole document.
func syntaxMessage(data []byte, err error) string {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		var whole *json.SyntaxError
		if errors.As(json.Unmarshal(data, new(any)), &whole) {
			syntax = whole
		}
		// Offset counts the bytes read, the bad one included.
		at := max(min(int(syntax.Offset), len(data))-1, 0)
		line := 1 + bytes.Count(data[:at], []byte("\n"))
		col := at - bytes.LastIndexByte(data[:at], '\n')
		return fmt.Sprintf("line %d, column %d: %s", line, col, syntax.Error())
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of the document"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// place names where a field the server refused came from, for fields
// named by their place in the merged request ("definitions[12].x"):
// "a.yaml: definitions[3]" when the files were merged or the index moved,
// "a.yaml" when it is the only file. ok is false for other fields.
func (l *Loaded) place(field string) (string, bool) {
	section, rest, ok := strings.Cut(field, "[")
	if !ok {
		return "", false
	}
	end := strings.IndexByte(rest, ']')
	if end <= 0 {
		return "", false
	}
	var n int
	if _, err := fmt.Sscanf(rest[:end], "%d", &n); err != nil {
		return "", false
	}
	var src []source
	switch section {
	case "definitions":
		src = l.defSrc
	case "memberships":
		src = l.memSrc
	case "admins":
		src = l.adminSrc
	default:
		return "", false
	}
	if n < 0 || n >= len(src) {
		return "", false
	}
	s := src[n]
	if s.index == n && len(l.Files) == 1 {
		return s.file, true
	}
	return s.String(section), true
}

// annotate appends to a message about field (named by its place in the
// merged state) the file it came from: "(in a.yaml)" or "(a.yaml:
// definitions[3])".
func (l *Loaded) annotate(field, msg string) string {
	where, ok := l.place(field)
	if !ok {
		return msg
	}
	if !strings.Contains(where, ": ") {
		return msg + " (in " + where + ")"
	}
	return msg + " (" + where + ")"
}
