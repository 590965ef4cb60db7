package api

import (
	"encoding/json"
	"strconv"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// POST /api/check is the hottest request rlapi serves, and encoding/json's
// reflection was a third of its handler's CPU. Its body and answer are
// flat, so both have a hand-written fast path here, used only where it
// gives byte for byte what encoding/json gives: anything the fast path
// does not know (an escape, a non-ASCII byte, an unknown or differently
// cased name, null, a nested value, trailing data) falls back to decode,
// whose errors name the field. TestCheckCodecMatchesEncodingJSON and
// FuzzDecodeCallFast hold the two paths together.

// decodeCallFast parses body as a Call if it is a flat JSON object of
// Call's wire names with plain values; ok is false for anything else.
func decodeCallFast(body []byte) (c enforce.Call, ok bool) {
	p := fastParser{b: body}
	p.ws()
	if !p.eat('{') {
		return c, false
	}
	p.ws()
	if p.eat('}') {
		return c, p.end()
	}
	for {
		p.ws()
		name, ok := p.str()
		if !ok {
			return c, false
		}
		p.ws()
		if !p.eat(':') {
			return c, false
		}
		p.ws()
		var s *string
		switch name {
		case "username":
			s = &c.Username
		case "client_id":
			s = &c.ClientID
		case "target_type":
			s = &c.TargetType
		case "target_name":
			s = &c.TargetName
		case "tool":
			s = &c.Tool
		case "client_ip":
			s = &c.ClientIP
		case "team":
			s = &c.Team
		case "method":
			s = &c.Method
		case "path":
			s = &c.Path
		case "kind":
			s = &c.Kind
		case "is_admin":
			if c.IsAdmin, ok = p.boolean(); !ok {
				return c, false
			}
		case "cost":
			if c.Cost, ok = p.smallInt(); !ok {
				return c, false
			}
		default:
			return c, false
		}
		if s != nil {
			if *s, ok = p.str(); !ok {
				return c, false
			}
		}
		p.ws()
		if p.eat('}') {
			return c, p.end()
		}
		if !p.eat(',') {
			return c, false
		}
	}
}

type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end says whether only whitespace is left.
func (p *fastParser) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// str reads a string of printable ASCII without escapes.
func (p *fastParser) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", false
		}
		p.i++
	}
	return "", false
}

func (p *fastParser) boolean() (bool, bool) {
	rest := p.b[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

// smallInt reads 0 or a positive integer of at most 15 digits (a cost
// out of that range, negative or not an integer is the slow path's to
// refuse or convert).
func (p *fastParser) smallInt() (int64, bool) {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	digits := p.b[start:p.i]
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return 0, false
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(digits), 10, 64)
	return n, err == nil
}

// appendCheckResult appends res as json.Encoder.Encode writes it,
// newline included.
func appendCheckResult(b []byte, res *checkResult) []byte {
	b = append(b, `{"allowed":`...)
	b = strconv.AppendBool(b, res.Allowed)
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, res.Reason)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, res.Limit, 10)
	b = append(b, `,"remaining":`...)
	b = strconv.AppendInt(b, res.Remaining, 10)
	b = append(b, `,"reset":`...)
	b = strconv.AppendInt(b, res.Reset, 10)
	b = append(b, `,"retry_after":`...)
	b = strconv.AppendInt(b, res.RetryAfter, 10)
	b = append(b, `,"gates":`...)
	if res.Gates == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range res.Gates {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCheckGate(b, &res.Gates[i])
		}
		b = append(b, ']')
	}
	if res.QuarantineScope != "" {
		b = append(b, `,"quarantine_scope":`...)
		b = appendJSONString(b, res.QuarantineScope)
	}
	if res.LockoutRemaining != 0 {
		b = append(b, `,"lockout_remaining":`...)
		b = strconv.AppendInt(b, res.LockoutRemaining, 10)
	}
	return append(b, "}\n"...)
}

func appendCheckGate(b []byte, g *checkGate) []byte {
	b = append(b, `{"definition_id":`...)
	b = appendJSONString(b, g.DefinitionID)
	b = append(b, `,"axis":`...)
	b = appendJSONString(b, g.Axis)
	b = append(b, `,"entity_type":`...)
	b = appendJSONString(b, g.EntityType)
	b = append(b, `,"window_seconds":`...)
	b = strconv.AppendInt(b, int64(g.WindowSeconds), 10)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, g.Limit, 10)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, g.Count, 10)
	b = append(b, `,"remaining":`...)
	b = strconv.AppendInt(b, g.Remaining, 10)
	b = append(b, `,"reset":`...)
	b = strconv.AppendInt(b, g.Reset, 10)
	b = append(b, `,"shadow":`...)
	b = strconv.AppendBool(b, g.Shadow)
	for _, f := range [...]struct{ name, v string }{{`,"matched_by":`, g.MatchedBy}, {`,"matched":`, g.Matched}, {`,"dimension":`, g.Dimension}} {
		if f.v != "" {
			b = append(b, f.name...)
			b = appendJSONString(b, f.v)
		}
	}
	return append(b, '}')
}

// appendJSONString appends s quoted as encoding/json quotes it (HTML
// characters escaped): directly when it is printable ASCII with nothing
// to escape, else through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
