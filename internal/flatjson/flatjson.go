// Package flatjson reads and writes the plain JSON of rlctl's hottest
// exchange, POST /api/check, without encoding/json's reflection, which was
// a third of that request's CPU on each side of the connection.
//
// It is a fast path, not a JSON implementation: a Scanner accepts only
// what it can read exactly as encoding/json would (strings of printable
// ASCII without escapes, integers, booleans, null) and reports anything
// else as not ok, so that its callers fall back to encoding/json, whose
// errors name the field. Callers own the shape (which names, in which
// order); each keeps a test that holds its fast path to encoding/json.
package flatjson

import "encoding/json"

// Scanner reads a JSON text from its start.
type Scanner struct {
	b []byte
	i int
}

// NewScanner starts a Scanner at the beginning of b.
func NewScanner(b []byte) Scanner { return Scanner{b: b} }

// Space skips whitespace.
func (s *Scanner) Space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Byte skips whitespace and then c, and says whether c was there (when it
// was not, only the whitespace is consumed).
func (s *Scanner) Byte(c byte) bool {
	s.Space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// End says whether only whitespace is left.
func (s *Scanner) End() bool {
	s.Space()
	return s.i == len(s.b)
}

// Name reads an object member's name and its colon.
func (s *Scanner) Name() (string, bool) {
	name, ok := s.String()
	return name, ok && s.Byte(':')
}

// String reads a string of printable ASCII without escapes (anything else
// is not ok: encoding/json's to decode).
func (s *Scanner) String() (string, bool) {
	if !s.Byte('"') {
		return "", false
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			v := string(s.b[start:s.i])
			s.i++
			return v, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", false
		}
		s.i++
	}
	return "", false
}

// Bool reads true or false.
func (s *Scanner) Bool() (bool, bool) {
	s.Space()
	rest := s.b[s.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		s.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		s.i += 5
		return false, true
	}
	return false, false
}

// Null reads null if it is next.
func (s *Scanner) Null() bool {
	s.Space()
	if rest := s.b[s.i:]; len(rest) >= 4 && string(rest[:4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// Uint reads 0 or a positive integer of at most maxDigits digits (at most
// 18, so that it fits an int64); a sign, a fraction or an exponent is not
// ok.
func (s *Scanner) Uint(maxDigits int) (int64, bool) {
	s.Space()
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	digits := s.b[start:s.i]
	if len(digits) == 0 || len(digits) > min(maxDigits, 18) || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	var n int64
	for _, d := range digits {
		n = n*10 + int64(d-'0')
	}
	return n, true
}

// Int reads an integer of at most 18 digits, negative or not.
func (s *Scanner) Int() (int64, bool) {
	s.Space()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
		if s.i == len(s.b) || s.b[s.i] < '0' || s.b[s.i] > '9' {
			return 0, false // "-" alone, or "- 1"
		}
	}
	n, ok := s.Uint(18)
	if neg {
		n = -n
	}
	return n, ok
}

// AppendString appends v quoted as encoding/json quotes it (HTML
// characters escaped): directly when it is printable ASCII with nothing
// to escape, else through encoding/json.
func AppendString(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(v)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, v...)
	return append(b, '"')
}
