package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"

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
func Load(paths []string, stdin io.Reader) (*Loaded, error) {
	l := &Loaded{}
	var probs []string
	stdinRead := false
	for _, p := range paths {
		switch {
		case p == Stdin:
			if stdinRead {
				probs = append(probs, "-f -: standard input can be read only once")
				continue
			}
			stdinRead = true
			data, err := io.ReadAll(stdin)
			if err != nil {
				probs = append(probs, fmt.Sprintf("%s: %v", stdinName, err))
				continue
			}
			probs = append(probs, l.add(stdinName, data, sniff(data))...)
		default:
			files, err := expand(p)
			if err != nil {
				probs = append(probs, err.Error())
				continue
			}
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					probs = append(probs, err.Error())
					continue
				}
				probs = append(probs, l.add(f, data, formatOf(f, data))...)
			}
		}
	}
	if len(probs) == 0 {
		probs = l.duplicates()
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
		return e.Problems[0]
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

type format int

const (
	formatYAML format = iota
	formatJSON
)

// formatOf picks a file's format by its extension, or by its content when
// the extension says nothing.
func formatOf(name string, data []byte) format {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		return formatJSON
	case ".yaml", ".yml":
		return formatYAML
	}
	return sniff(data)
}

// sniff calls JSON what starts with '{' (after white space), YAML the rest
// (JSON is YAML too, but the JSON decoder gives better messages).
func sniff(data []byte) format {
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		return formatJSON
	}
	return formatYAML
}

// add parses one file and merges it into l, returning its problems.
func (l *Loaded) add(name string, data []byte, f format) []string {
	l.Files = append(l.Files, name)
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // editors on Windows add one
	if f == formatJSON {
		doc, probs := decodeDocument(name, data)
		if len(probs) == 0 {
			l.merge(name, doc)
		}
		return probs
	}
	var probs []string
	docs := splitYAML(data)
	parts := make([]Document, 0, len(docs))
	for i, y := range docs {
		part := name
		if len(docs) > 1 {
			part = fmt.Sprintf("%s (document %d)", name, i+1)
		}
		j, err := yaml.YAMLToJSONStrict(y)
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: %s", part, strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")))
			continue
		}
		doc, p := decodeDocument(part, j)
		probs = append(probs, p...)
		parts = append(parts, doc)
	}
	if len(probs) == 0 {
		for i, doc := range parts {
			part := name
			if len(docs) > 1 {
				part = fmt.Sprintf("%s (document %d)", name, i+1)
			}
			l.merge(part, doc)
		}
	}
	return probs
}

// splitYAML splits a YAML stream into its documents at "---" and "..."
// lines (document markers always start a line). Empty documents are
// dropped; a stream with none gives one empty document.
func splitYAML(data []byte) [][]byte {
	var (
		docs [][]byte
		cur  bytes.Buffer
	)
	flush := func() {
		if len(bytes.TrimSpace(stripComments(cur.Bytes()))) > 0 {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for line := range bytes.Lines(data) {
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case bytes.Equal(trimmed, []byte("---")) || bytes.HasPrefix(trimmed, []byte("--- ")) || bytes.HasPrefix(trimmed, []byte("---\t")):
			flush()
			cur.Write(bytes.TrimPrefix(line, []byte("---")))
		case bytes.Equal(bytes.TrimRight(trimmed, " \t"), []byte("...")):
			flush()
		default:
			cur.Write(line)
		}
	}
	flush()
	if len(docs) == 0 {
		docs = append(docs, nil)
	}
	return docs
}

// stripComments drops whole-line comments, to tell an empty document from
// one with content.
func stripComments(b []byte) []byte {
	var out []byte
	for line := range bytes.Lines(b) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
		}
	}
	return out
}

// merge appends doc's present sections to l.
func (l *Loaded) merge(name string, doc Document) {
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
// ("/mcpgw/" is "mcpgw"). Objects the rules refuse are left to the server,
// which reports them with its own floors.
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

// decodeDocument reads one JSON state document strictly: a known header,
// known sections, and objects without unknown fields. Every problem is
// returned, each naming the file and the field ("a.yaml:
// definitions[3].user_max_request: unknown field").
func decodeDocument(name string, data []byte) (Document, []string) {
	var (
		doc   Document
		probs []string
	)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	fatal := func(err error) (Document, []string) {
		return Document{}, append(probs, name+": "+syntaxMessage(data, err))
	}
	tok, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return doc, nil // an empty file: no sections
	case err != nil:
		return fatal(err)
	case tok == nil:
		return doc, nil // an empty YAML document
	case tok != json.Delim('{'):
		return Document{}, []string{fmt.Sprintf("%s: must be a mapping with apiVersion, kind, definitions, memberships and admins, not %s", name, kindOf(tok))}
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fatal(err)
		}
		key, _ := tok.(string)
		if seen[key] {
			probs = append(probs, fmt.Sprintf("%s: %s: given twice", name, key))
		}
		seen[key] = true
		switch key {
		case "apiVersion", "kind":
			var v any
			if err := dec.Decode(&v); err != nil {
				return fatal(err)
			}
			want := map[string]string{"apiVersion": APIVersion, "kind": Kind}[key]
			if s, ok := v.(string); !ok || s != want {
				probs = append(probs, fmt.Sprintf("%s: %s: must be %q, not %s", name, key, want, quoteValue(v)))
			}
		case "definitions":
			doc.Definitions, err = decodeSection[ratelimit.Definition](dec, name, key, &probs)
		case "memberships":
			doc.Memberships, err = decodeSection[ratelimit.Membership](dec, name, key, &probs)
		case "admins":
			doc.Admins, err = decodeSection[ratelimit.Admin](dec, name, key, &probs)
		default:
			probs = append(probs, fmt.Sprintf("%s: %s: unknown field (a state document has apiVersion, kind, definitions, memberships and admins)", name, key))
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return fatal(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fatal(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return fatal(err)
		}
		return Document{}, append(probs, name+": more than one JSON value")
	}
	return doc, probs
}

// decodeSection reads null (absent: nil) or a list of T, one element at a
// time, recording each element that does not decode and going on. The
// error it returns means the stream cannot be read on.
func decodeSection[T any](dec *json.Decoder, name, key string, probs *[]string) ([]T, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, nil
	}
	if tok != json.Delim('[') {
		*probs = append(*probs, fmt.Sprintf("%s: %s: must be a list (or null to leave it alone), not %s", name, key, kindOf(tok)))
		if d, ok := tok.(json.Delim); ok && d == '{' {
			return nil, skipObject(dec)
		}
		return nil, nil
	}
	items := []T{}
	for i := 0; dec.More(); i++ {
		var v T
		if err := dec.Decode(&v); err != nil {
			if isStreamError(err) {
				return nil, err
			}
			*probs = append(*probs, fmt.Sprintf("%s: %s", name, elementMessage(fmt.Sprintf("%s[%d]", key, i), err)))
		}
		items = append(items, v)
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return nil, err
	}
	return items, nil
}

// skipObject reads the rest of an object whose '{' was read.
func skipObject(dec *json.Decoder) error {
	for dec.More() {
		if _, err := dec.Token(); err != nil { // the key
			return err
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

func isStreamError(err error) bool {
	var syntax *json.SyntaxError
	return errors.As(err, &syntax) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// elementMessage words a failure to decode the element at path, naming the
// field: "definitions[3].window_seconds: must be a number, not string".
func elementMessage(path string, err error) string {
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		field := path
		if typeErr.Field != "" {
			field += "." + typeErr.Field
		}
		want := "an object"
		if typeErr.Field != "" {
			want = goKind(typeErr.Type)
		}
		return fmt.Sprintf("%s: must be %s, not %s", field, want, typeErr.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return path + "." + strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`) + ": unknown field"
	default:
		return path + ": " + strings.TrimPrefix(err.Error(), "json: ")
	}
}

// goKind names what JSON a Go type takes.
func goKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		if t == reflect.TypeFor[json.Number]() {
			return "a number"
		}
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct:
		if t.PkgPath() == "time" {
			return "a time (RFC 3339)"
		}
		return "an object"
	}
	return "an object"
}

func kindOf(tok json.Token) string {
	switch t := tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		if t == '[' {
			return "a list"
		}
		return "a mapping"
	}
	return fmt.Sprint(tok)
}

func quoteValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	b, _ := json.Marshal(v)
	return string(b)
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
