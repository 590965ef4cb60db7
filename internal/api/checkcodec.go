package api

import (
	"strconv"

	"github.com/rlctl/rlctl/internal/flatjson"
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
	p := flatjson.NewScanner(body)
	if !p.Byte('{') {
		return c, false
	}
	if p.Byte('}') {
		return c, p.End()
	}
	for {
		name, ok := p.Name()
		if !ok {
			return c, false
		}
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
			if c.IsAdmin, ok = p.Bool(); !ok {
				return c, false
			}
		case "cost":
			// A cost of more than 15 digits, negative or not an integer
			// is the slow path's to refuse or convert.
			if c.Cost, ok = p.Uint(15); !ok {
				return c, false
			}
		default:
			return c, false
		}
		if s != nil {
			if *s, ok = p.String(); !ok {
				return c, false
			}
		}
		if p.Byte('}') {
			return c, p.End()
		}
		if !p.Byte(',') {
			return c, false
		}
	}
}

// appendCheckResult appends res as json.Encoder.Encode writes it,
// newline included.
func appendCheckResult(b []byte, res *checkResult) []byte {
	b = append(b, `{"allowed":`...)
	b = strconv.AppendBool(b, res.Allowed)
	b = append(b, `,"reason":`...)
	b = flatjson.AppendString(b, res.Reason)
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
		b = flatjson.AppendString(b, res.QuarantineScope)
	}
	if res.LockoutRemaining != 0 {
		b = append(b, `,"lockout_remaining":`...)
		b = strconv.AppendInt(b, res.LockoutRemaining, 10)
	}
	return append(b, "}\n"...)
}

func appendCheckGate(b []byte, g *checkGate) []byte {
	b = append(b, `{"definition_id":`...)
	b = flatjson.AppendString(b, g.DefinitionID)
	b = append(b, `,"axis":`...)
	b = flatjson.AppendString(b, g.Axis)
	b = append(b, `,"entity_type":`...)
	b = flatjson.AppendString(b, g.EntityType)
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
			b = flatjson.AppendString(b, f.v)
		}
	}
	return append(b, '}')
}
