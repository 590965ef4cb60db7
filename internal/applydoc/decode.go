package applydoc

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Mode says which form of the document is read.
type Mode int

const (
	// ModeRequest reads POST /api/apply's body: a JSON object of the three
	// sections plus prune and dry_run. A body of the wrong shape (not an
	// object, an unknown or repeated field, a section that is not an
	// array) ends decoding with a *FatalError; problems inside the
	// sections are listed in request order (definitions, memberships,
	// admins, each by index).
	ModeRequest Mode = iota
	// ModeDocument reads a state file (JSON, or YAML through DecodeYAML):
	// the sections under an optional apiVersion and kind. Every problem is
	// listed, and reading goes on wherever the input can be read on; an
	// empty input, or null, has no sections.
	ModeDocument
)

// Options tune Decode.
type Options struct {
	Mode Mode
	// Validate normalizes each object with the rules of internal/validate
	// (definitions with Floors) and finds objects that repeat an id, as
	// the per-object endpoints do; without it objects are kept as decoded.
	Validate bool
	Floors   validate.Floors
	// MaxProblems bounds the problems kept: past it they are only counted,
	// so that what a body of junk costs is bounded whatever its size. 0
	// keeps them all.
	MaxProblems int
}

// Result is what Decode read.
type Result struct {
	Doc           Document
	Prune, DryRun bool // ModeRequest only

	// Problems are the first MaxProblems problems, each naming its place
	// ("definitions[3].colour"); Total counts them all. Once there is one,
	// objects are no longer kept: Doc is of no use, only the problems are.
	Problems []validate.FieldError
	Total    int
}

// FatalError ends decoding. Err is set when the input cannot be read on:
// malformed JSON (a *json.SyntaxError), a truncated input
// (io.ErrUnexpectedEOF) or the reader's own error (a body over its limit).
// Otherwise the input has the wrong shape, said by Message, which names
// Field when there is one ("definitions: given twice").
type FatalError struct {
	Field   string
	Message string
	Err     error
}

func (e *FatalError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Message
}

func (e *FatalError) Unwrap() error { return e.Err }

// Decode reads one JSON document from r, strictly: only the fields the
// mode knows, objects without unknown fields, each problem named by its
// place. It reads r as a stream, one object at a time, so the raw input is
// never held whole. The error, a *FatalError, means the input could not be
// read to its end; the problems found before it are in the Result.
func Decode(r io.Reader, opts Options) (Result, error) {
	d := &decoder{dec: json.NewDecoder(r), opts: opts}
	d.dec.DisallowUnknownFields()
	err := d.document()
	if opts.Mode == ModeRequest {
		sortProblems(d.res.Problems)
	}
	return d.res, err
}

type decoder struct {
	dec  *json.Decoder
	opts Options
	res  Result
}

func (d *decoder) request() bool { return d.opts.Mode == ModeRequest }

func (d *decoder) full() bool {
	return d.opts.MaxProblems > 0 && len(d.res.Problems) >= d.opts.MaxProblems
}

func (d *decoder) add(fes ...validate.FieldError) {
	for _, fe := range fes {
		d.res.Total++
		if !d.full() {
			d.res.Problems = append(d.res.Problems, fe)
		}
	}
}

func stream(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return &FatalError{Err: err}
}

func shape(field, msg string) error { return &FatalError{Field: field, Message: msg} }

// topLevel is a problem with the document's own fields: the end of a
// request, one problem among others for a document.
func (d *decoder) topLevel(field, msg string) error {
	if d.request() {
		return shape(field, msg)
	}
	d.add(validate.FieldError{Field: field, Message: msg})
	return nil
}

func (d *decoder) document() error {
	tok, err := d.dec.Token()
	switch {
	case errors.Is(err, io.EOF) && d.request():
		return shape("", "request body is empty; a JSON object is required")
	case errors.Is(err, io.EOF):
		return nil // an empty file: no sections
	case err != nil:
		return stream(err)
	case tok == nil && !d.request():
		return d.end() // an empty YAML document
	case tok != json.Delim('{') && d.request():
		return shape("", fmt.Sprintf("request body must be a JSON object, not %v", d.kindOf(tok)))
	case tok != json.Delim('{'):
		return shape("", fmt.Sprintf("must be a mapping with apiVersion, kind, definitions, memberships and admins, not %s", d.kindOf(tok)))
	}
	seen := map[string]bool{}
	for d.dec.More() {
		tok, err := d.dec.Token()
		if err != nil {
			return stream(err)
		}
		key, _ := tok.(string)
		if seen[key] {
			if err := d.topLevel(key, key+": given twice"); err != nil {
				return err
			}
		}
		seen[key] = true
		switch {
		case key == SectionDefinitions:
			d.res.Doc.Definitions, err = decodeSection(d, key, func(v ratelimit.Definition) (ratelimit.Definition, string, error) {
				v.Scope = "" // read-only: derived from the name
				v, err := validate.Definition(v, d.opts.Floors)
				return v, v.ID, err
			})
		case key == SectionMemberships:
			d.res.Doc.Memberships, err = decodeSection(d, key, func(v ratelimit.Membership) (ratelimit.Membership, string, error) {
				v, err := validate.Membership(v)
				return v, v.ID, err
			})
		case key == SectionAdmins:
			d.res.Doc.Admins, err = decodeSection(d, key, func(v ratelimit.Admin) (ratelimit.Admin, string, error) {
				v, err := validate.Admin(v)
				return v, v.Key(), err
			})
		case d.request() && key == "prune":
			err = d.flag(key, &d.res.Prune)
		case d.request() && key == "dry_run":
			err = d.flag(key, &d.res.DryRun)
		case !d.request() && (key == "apiVersion" || key == "kind"):
			err = d.header(key)
		case d.request():
			return shape(key, key+": unknown field")
		default:
			d.add(validate.FieldError{Field: key,
				Message: key + ": unknown field (a state document has apiVersion, kind, definitions, memberships and admins)"})
			var skip json.RawMessage
			if err := d.dec.Decode(&skip); err != nil {
				return stream(err)
			}
		}
		if err != nil {
			return err
		}
	}
	if _, err := d.dec.Token(); err != nil { // the closing brace
		return stream(err)
	}
	return d.end()
}

// end checks that nothing follows the document's value.
func (d *decoder) end() error {
	_, err := d.dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return stream(err)
	case d.request():
		return shape("", "request body holds more than one JSON value")
	}
	return shape("", "more than one JSON value")
}

// header reads apiVersion or kind, which must have their one value.
func (d *decoder) header(key string) error {
	var v any
	if err := d.dec.Decode(&v); err != nil {
		return stream(err)
	}
	want := map[string]string{"apiVersion": APIVersion, "kind": Kind}[key]
	if s, ok := v.(string); !ok || s != want {
		d.add(validate.FieldError{Field: key, Message: fmt.Sprintf("%s: must be %q, not %s", key, want, quoteValue(v))})
	} else if key == "apiVersion" {
		d.res.Doc.APIVersion = s
	} else {
		d.res.Doc.Kind = s
	}
	return nil
}

// flag reads prune or dry_run: true or false.
func (d *decoder) flag(key string, v *bool) error {
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		return stream(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		fe := d.elementError(err, key)
		return shape(fe.Field, fe.Message)
	}
	return nil
}

// decodeSection reads null (absent: nil) or an array of T, one element at
// a time, normalizing each with fn when the options ask (fn returns it
// normalized, with its id), and recording those that do not decode or
// validate, or repeat an id.
func decodeSection[T any](d *decoder, key string, fn func(T) (T, string, error)) ([]T, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return nil, stream(err)
	}
	if tok == nil {
		return nil, nil
	}
	if tok != json.Delim('[') {
		if d.request() {
			return nil, shape(key, fmt.Sprintf("%s: must be an array (or null to leave it alone), not %s", key, d.kindOf(tok)))
		}
		d.add(validate.FieldError{Field: key, Message: fmt.Sprintf("%s: must be a list (or null to leave it alone), not %s", key, d.kindOf(tok))})
		if tok == json.Delim('{') {
			return nil, d.skipObject()
		}
		return nil, nil
	}
	items := []T{}
	first := map[string]int{}
	for i := 0; d.dec.More(); i++ {
		v, err := decodeElement[T](d)
		var fatal *FatalError
		if errors.As(err, &fatal) {
			return nil, err
		}
		if err != nil && d.full() {
			d.res.Total++ // counted, not worded: nobody will read it
			continue
		}
		path := fmt.Sprintf("%s[%d]", key, i)
		if err != nil {
			d.add(d.elementError(err, path))
			continue
		}
		if d.opts.Validate {
			n, id, err := fn(v)
			if err != nil && d.full() {
				var ve *validate.Error
				if errors.As(err, &ve) && len(ve.Errors) > 0 {
					d.res.Total += len(ve.Errors)
				} else {
					d.res.Total++
				}
				continue
			}
			if err != nil {
				fes := validate.Under(path, err)
				if len(fes) == 0 { // never refuse an object without saying why
					fes = []validate.FieldError{{Field: path, Message: path + ": " + err.Error()}}
				}
				d.add(fes...)
				continue
			}
			if j, dup := first[id]; dup {
				d.add(validate.FieldError{Field: path, Message: fmt.Sprintf("%s: duplicate id %q, also at %s[%d]", path, id, key, j)})
				continue
			}
			first[id] = i
			v = n
		}
		if d.res.Total > 0 {
			// Refused: the object is not needed, only its id (for the
			// duplicates of later ones).
			continue
		}
		items = append(items, v)
	}
	if _, err := d.dec.Token(); err != nil { // the closing bracket
		return nil, stream(err)
	}
	return items, nil
}

// decodeElement reads the stream's next value as a T (an object). A value
// that is not an object is refused from its first byte, without the work
// (and garbage, some 2 KB) of the strict decoders: a body of a million
// numbers costs milliseconds, not seconds. A state file's null element is
// the empty object, as encoding/json reads it. The error is a *FatalError
// when the stream cannot be read on; otherwise it is the element's.
func decodeElement[T any](d *decoder) (T, error) {
	var (
		v   T
		raw json.RawMessage
	)
	if err := d.dec.Decode(&raw); err != nil {
		return v, stream(err)
	}
	if len(raw) > 0 && raw[0] != '{' && (d.request() || raw[0] != 'n') {
		return v, &json.UnmarshalTypeError{Value: rawKind(raw[0]), Type: reflect.TypeFor[T]()}
	}
	el := json.NewDecoder(bytes.NewReader(raw))
	el.DisallowUnknownFields()
	return v, el.Decode(&v)
}

// skipObject reads the rest of an object whose '{' was read.
func (d *decoder) skipObject() error {
	for d.dec.More() {
		if _, err := d.dec.Token(); err != nil { // the key
			return stream(err)
		}
		var skip json.RawMessage
		if err := d.dec.Decode(&skip); err != nil {
			return stream(err)
		}
	}
	if _, err := d.dec.Token(); err != nil {
		return stream(err)
	}
	return nil
}

// elementError words a failure to decode the value at path, naming the
// field: "definitions[3].window_seconds: must be a number, not string".
func (d *decoder) elementError(err error, path string) validate.FieldError {
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr):
		field := path
		if typeErr.Field != "" {
			field += "." + typeErr.Field
		}
		want := "an object"
		switch {
		case typeErr.Field == "" && typeErr.Type.Kind() == reflect.Bool:
			want = "true or false"
		case typeErr.Field != "" && d.request():
			want = JSONKind(typeErr.Type.Kind().String())
		case typeErr.Field != "":
			want = goKind(typeErr.Type)
		}
		return validate.FieldError{Field: field, Message: TypeMessage(field, want, typeErr.Value)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := path + "." + strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return validate.FieldError{Field: field, Message: field + ": unknown field"}
	default:
		return validate.FieldError{Field: path, Message: path + ": " + strings.TrimPrefix(err.Error(), "json: ")}
	}
}

// rawKind names a JSON value by its first byte, as encoding/json's type
// errors do.
func rawKind(b byte) string {
	switch b {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// JSONKind names what JSON a Go kind (reflect.Kind's name) takes, in a
// request's words ("a number", "an object"); rlapi's body decoder words
// its type errors with it too.
func JSONKind(goKind string) string {
	switch goKind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "ptr":
		return "a number"
	default:
		return "a " + goKind
	}
}

// TypeMessage words a JSON value of the wrong type at field: what the field
// takes (want; a whole number "of seconds" for a field that counts them) and
// what it got, a number by its digits ("not 1.5": encoding/json says
// "number 1.5", which read as "must be a number, not number 1.5"), anything
// else by its kind ("not string").
func TypeMessage(field, want, got string) string {
	if want == "a whole number" && strings.HasSuffix(field, "_seconds") {
		want += " of seconds"
	}
	if digits, ok := strings.CutPrefix(got, "number "); ok {
		got = digits
	}
	return fmt.Sprintf("%s: must be %s, not %s", field, want, got)
}

// goKind names what a Go type takes, in a state file's words.
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

// kindOf names a token: in a request's words (JSON), or a state file's
// (YAML: lists and mappings).
func (d *decoder) kindOf(tok json.Token) string {
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
		switch {
		case t == '[' && d.request():
			return "an array"
		case t == '[':
			return "a list"
		case d.request():
			return "an object"
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

// sortProblems puts problems in request order: definitions, memberships,
// admins, each by index.
func sortProblems(problems []validate.FieldError) {
	order := map[string]int{SectionDefinitions: 0, SectionMemberships: 1, SectionAdmins: 2}
	slices.SortStableFunc(problems, func(a, b validate.FieldError) int {
		sa, ia := problemPlace(a.Field)
		sb, ib := problemPlace(b.Field)
		return cmp.Or(cmp.Compare(order[sa], order[sb]), cmp.Compare(ia, ib))
	})
}

// problemPlace reads "definitions[12].x" as ("definitions", 12).
func problemPlace(field string) (string, int) {
	key, rest, ok := strings.Cut(field, "[")
	if !ok {
		return key, -1
	}
	n := 0
	for _, c := range rest {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return key, n
}
