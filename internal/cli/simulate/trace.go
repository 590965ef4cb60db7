package simulate

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Trace formats (--format).
const (
	FormatCSV   = "csv"
	FormatJSONL = "jsonl"
)

// maxLine bounds one line of a JSON-lines trace (and one CSV record): the
// trace is streamed, so memory stays bounded whatever its length.
const maxLine = 64 << 10

// The columns of a trace, in the order a CSV without a header gives them.
var columns = []string{"timestamp", "caller", "target", "tool", "cost"}

// Row is one call of a trace.
type Row struct {
	Line int // 1-based line of the file it was read from
	Time time.Time
	Call enforce.Call
}

// RowError is a trace row that cannot be replayed: its file, line and
// field.
type RowError struct {
	File    string
	Line    int
	Field   string // empty for a problem with the line as a whole
	Message string
}

func (e *RowError) Error() string {
	where := fmt.Sprintf("%s:%d: ", e.File, e.Line)
	if e.Field != "" {
		where += e.Field + ": "
	}
	return where + e.Message
}

// traceReader streams the rows of a trace, checking each and that time
// never goes back.
type traceReader struct {
	name string
	next func() (raw rawRow, err error)
	last time.Time
	rows int
}

// rawRow is one row before it is checked: the text of each column.
type rawRow struct {
	line                               int
	timestamp, caller, target, tool    string
	cost                               string
	hasTimestamp, hasCaller, hasTarget bool
}

// sniff picks the format: by the file's extension, else by its first
// character that is not white space ('{' is JSON lines).
func sniff(name string, br *bufio.Reader) string {
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, ".csv"):
		return FormatCSV
	case strings.HasSuffix(lower, ".jsonl"), strings.HasSuffix(lower, ".ndjson"), strings.HasSuffix(lower, ".json"):
		return FormatJSONL
	}
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) < n || err != nil {
			return FormatCSV
		}
		switch c := b[n-1]; c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return FormatJSONL
		default:
			return FormatCSV
		}
	}
}

// newTraceReader reads r (named name in errors) as format, or as what
// sniff finds when format is empty.
func newTraceReader(r io.Reader, name, format string) *traceReader {
	br := bufio.NewReaderSize(r, maxLine)
	if format == "" {
		format = sniff(name, br)
	}
	t := &traceReader{name: name}
	if format == FormatJSONL {
		t.next = jsonLines(br, name)
	} else {
		t.next = csvRows(br, name)
	}
	return t
}

// Next returns the next row, io.EOF after the last, or a *RowError.
func (t *traceReader) Next() (Row, error) {
	raw, err := t.next()
	if err != nil {
		return Row{}, err
	}
	row, err := t.check(raw)
	if err != nil {
		return Row{}, err
	}
	t.last = row.Time
	t.rows++
	return row, nil
}

func (t *traceReader) fail(line int, field, format string, args ...any) error {
	return &RowError{File: t.name, Line: line, Field: field, Message: fmt.Sprintf(format, args...)}
}

// check turns a raw row into a call, naming the first field at fault.
func (t *traceReader) check(raw rawRow) (Row, error) {
	row := Row{Line: raw.line}
	for _, req := range []struct {
		name string
		has  bool
	}{{"timestamp", raw.hasTimestamp}, {"caller", raw.hasCaller}, {"target", raw.hasTarget}} {
		if !req.has {
			return row, t.fail(raw.line, req.name, "is required")
		}
	}
	ts, err := parseTimestamp(raw.timestamp)
	if err != nil {
		return row, t.fail(raw.line, "timestamp", "%v", err)
	}
	if t.rows > 0 && ts.Before(t.last) {
		return row, t.fail(raw.line, "timestamp", "%s is before the previous row's %s: a trace is replayed in order, sort it by time first",
			ts.Format(time.RFC3339Nano), t.last.Format(time.RFC3339Nano))
	}
	row.Time = ts

	kind, who, ok := strings.Cut(strings.TrimSpace(raw.caller), ":")
	who = strings.TrimSpace(who)
	switch {
	case !ok || who == "":
		return row, t.fail(raw.line, "caller", "must be user:<name> or agent:<client id> (got %q)", raw.caller)
	case kind == "user":
		row.Call.Username = who
	case kind == "agent" || kind == ratelimit.SubjectClient:
		row.Call.ClientID = who
	default:
		return row, t.fail(raw.line, "caller", "must be user:<name> or agent:<client id> (got %q)", raw.caller)
	}

	typ, name, ok := strings.Cut(strings.TrimSpace(raw.target), ":")
	if !ok || strings.TrimSpace(name) == "" {
		return row, t.fail(raw.line, "target", "must be mcp_server:<name> or a2a_agent:<path> (got %q)", raw.target)
	}
	row.Call.TargetType, row.Call.TargetName = typ, name
	row.Call.Tool = strings.TrimSpace(raw.tool)

	row.Call.Cost = 1
	if c := strings.TrimSpace(raw.cost); c != "" {
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n < 1 || n > enforce.MaxCost {
			return row, t.fail(raw.line, "cost", "must be a whole number from 1 to %d (got %q)", enforce.MaxCost, raw.cost)
		}
		row.Call.Cost = n
	}
	call, err := row.Call.Normalize()
	var ce *enforce.CallError
	if errors.As(err, &ce) {
		msg := ce.Fields[0].Message
		msg = strings.TrimPrefix(strings.TrimPrefix(msg, "target_type: "), "target_name: ")
		return row, t.fail(raw.line, "target", "%s", msg)
	}
	if err != nil {
		return row, t.fail(raw.line, "", "%v", err)
	}
	row.Call = call
	return row, nil
}

// The range of timestamps a trace may hold: the Unix epoch to a time
// well inside what nanoseconds since the epoch can hold in an int64 (the
// year 2262), which the counters' arithmetic needs.
var (
	minTime = time.Unix(0, 0).UTC()
	maxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// parseTimestamp reads RFC 3339 (fractions allowed) or Unix seconds with
// an optional fraction of up to nine digits, read exactly (no floating
// point), from 1970 to 2200.
func parseTimestamp(s string) (time.Time, error) {
	t, err := parseTime(s)
	if err == nil && (t.Before(minTime) || !t.Before(maxTime)) {
		return time.Time{}, fmt.Errorf("must be from 1970 to 2199 (got %q)", strings.TrimSpace(s))
	}
	return t, err
}

func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("must be RFC 3339 (2026-12-01T13:00:00.25Z) or Unix seconds (1796130000.25) (got %q)", s)
	if s == "" {
		return time.Time{}, bad
	}
	if strings.ContainsAny(s, "T-:") {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, bad
		}
		return ts.UTC(), nil
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || (dot && frac == "") || len(whole) > 12 || len(frac) > 9 || !digits(whole) || !digits(frac) {
		return time.Time{}, bad
	}
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return time.Time{}, bad
	}
	var ns int64
	if frac != "" {
		ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	return time.Unix(sec, ns).UTC(), nil
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// csvRows reads CSV: a header line naming the columns (any order; tool
// and cost optional) or, when the first record does not start with
// "timestamp", the columns timestamp,caller,target[,tool[,cost]]. Lines
// starting with # are comments.
func csvRows(r io.Reader, name string) func() (rawRow, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	var index map[string]int // column -> position
	return func() (rawRow, error) {
		for {
			rec, err := cr.Read()
			if errors.Is(err, io.EOF) {
				return rawRow{}, io.EOF
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return rawRow{}, &RowError{File: name, Line: pe.Line, Message: "not CSV: " + pe.Err.Error()}
			}
			if err != nil {
				return rawRow{}, fmt.Errorf("read %s: %w", name, err)
			}
			line, _ := cr.FieldPos(0)
			if index == nil {
				index = map[string]int{}
				if strings.EqualFold(strings.TrimSpace(rec[0]), "timestamp") {
					for i, h := range rec {
						col := strings.ToLower(strings.TrimSpace(h))
						if !contains(columns, col) {
							return rawRow{}, &RowError{File: name, Line: line,
								Message: fmt.Sprintf("header: unknown column %q (the columns are %s)", h, strings.Join(columns, ", "))}
						}
						if _, dup := index[col]; dup {
							return rawRow{}, &RowError{File: name, Line: line, Message: fmt.Sprintf("header: column %q appears twice", col)}
						}
						index[col] = i
					}
					continue
				}
				for i, c := range columns {
					index[c] = i
				}
			}
			if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
				continue // a blank line
			}
			if len(rec) > len(columns) || len(rec) > len(index) {
				return rawRow{}, &RowError{File: name, Line: line,
					Message: fmt.Sprintf("%d fields, more than the %d columns (%s)", len(rec), len(index), strings.Join(header(index), ","))}
			}
			raw := rawRow{line: line}
			get := func(col string) (string, bool) {
				i, ok := index[col]
				if !ok || i >= len(rec) {
					return "", false
				}
				return rec[i], true
			}
			raw.timestamp, raw.hasTimestamp = get("timestamp")
			raw.caller, raw.hasCaller = get("caller")
			raw.target, raw.hasTarget = get("target")
			raw.tool, _ = get("tool")
			raw.cost, _ = get("cost")
			return raw, nil
		}
	}
}

func header(index map[string]int) []string {
	out := make([]string, len(index))
	for c, i := range index {
		out[i] = c
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// jsonRow is one line of a JSON-lines trace.
type jsonRow struct {
	Timestamp json.RawMessage `json:"timestamp"`
	Caller    *string         `json:"caller"`
	Target    *string         `json:"target"`
	Tool      string          `json:"tool"`
	Cost      json.RawMessage `json:"cost"`
}

// jsonLines reads one JSON object per line; blank lines are skipped.
func jsonLines(br *bufio.Reader, name string) func() (rawRow, error) {
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	line := 0
	return func() (rawRow, error) {
		for sc.Scan() {
			line++
			b := bytes.TrimSpace(sc.Bytes())
			if len(b) == 0 {
				continue
			}
			fail := func(field, msg string) (rawRow, error) {
				return rawRow{}, &RowError{File: name, Line: line, Field: field, Message: msg}
			}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			var jr jsonRow
			if err := dec.Decode(&jr); err != nil {
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) && te.Field != "" {
					return fail(te.Field, fmt.Sprintf("must be a %s, not a JSON %s", te.Type, te.Value))
				}
				msg := strings.TrimPrefix(err.Error(), "json: ")
				if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
					return fail(strings.Trim(f, `"`), "unknown field (the fields are "+strings.Join(columns, ", ")+")")
				}
				return fail("", "not a JSON object: "+msg)
			}
			if dec.More() {
				return fail("", "more than one JSON value on the line")
			}
			raw := rawRow{line: line, tool: jr.Tool}
			var err error
			if raw.timestamp, raw.hasTimestamp, err = scalarText(jr.Timestamp); err != nil {
				return fail("timestamp", err.Error())
			}
			if raw.cost, _, err = scalarText(jr.Cost); err != nil {
				return fail("cost", err.Error())
			}
			if jr.Caller != nil {
				raw.caller, raw.hasCaller = *jr.Caller, true
			}
			if jr.Target != nil {
				raw.target, raw.hasTarget = *jr.Target, true
			}
			return raw, nil
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return rawRow{}, &RowError{File: name, Line: line + 1, Message: fmt.Sprintf("longer than %d bytes", maxLine)}
			}
			return rawRow{}, fmt.Errorf("read %s: %w", name, err)
		}
		return rawRow{}, io.EOF
	}
}

// scalarText is the text of a JSON string or number (null and absent are
// not set).
func scalarText(raw json.RawMessage) (text string, set bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false, err
		}
		return s, true, nil
	}
	if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
		return string(raw), true, nil
	}
	return "", false, fmt.Errorf("must be a string or a number (got %s)", raw)
}
