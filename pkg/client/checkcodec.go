package client

import (
	"strconv"

	"github.com/rlctl/rlctl/internal/flatjson"
)

// Check is the call a gateway makes for every request it serves, so its
// body and answer skip encoding/json's reflection, which was most of the
// SDK's CPU per decision. Both fast paths give exactly what encoding/json
// gives; an answer they do not know (an escape, a name this version does
// not know, a float) is decoded by encoding/json instead.
// TestCheckCodecMatchesEncodingJSON and FuzzDecodeCheckResult hold the two
// paths together.

// appendCheckRequest appends r as json.Marshal writes it.
func appendCheckRequest(b []byte, r *CheckRequest) []byte {
	b = append(b, '{')
	n := len(b)
	// name starts a member: a comma first unless it is the first.
	name := func(name string) {
		if len(b) > n {
			b = append(b, ',')
		}
		b = append(b, name...)
	}
	str := func(n, v string) {
		if v != "" {
			name(n)
			b = flatjson.AppendString(b, v)
		}
	}
	str(`"username":`, r.Username)
	str(`"client_id":`, r.ClientID)
	if r.IsAdmin {
		name(`"is_admin":true`)
	}
	str(`"target_type":`, r.TargetType)
	str(`"target_name":`, r.TargetName)
	str(`"tool":`, r.Tool)
	if r.Cost != 0 {
		name(`"cost":`)
		b = strconv.AppendInt(b, r.Cost, 10)
	}
	str(`"client_ip":`, r.ClientIP)
	str(`"team":`, r.Team)
	str(`"method":`, r.Method)
	str(`"path":`, r.Path)
	str(`"kind":`, r.Kind)
	return append(b, '}')
}

// decodeCheckResult parses body into res if it is a CheckResult of known
// names and plain values; ok is false for anything else, and res is then
// to be decoded again from its zero value.
func decodeCheckResult(body []byte, res *CheckResult) (ok bool) {
	p := flatjson.NewScanner(body)
	if !p.Byte('{') {
		return false
	}
	if p.Byte('}') {
		return p.End()
	}
	gates := false
	for {
		name, ok := p.Name()
		if !ok {
			return false
		}
		switch name {
		case "allowed":
			res.Allowed, ok = p.Bool()
		case "reason":
			res.Reason, ok = p.String()
		case "limit":
			res.Limit, ok = p.Int()
		case "remaining":
			res.Remaining, ok = p.Int()
		case "reset":
			res.Reset, ok = p.Int()
		case "retry_after":
			res.RetryAfter, ok = p.Int()
		case "quarantine_scope":
			res.QuarantineScope, ok = p.String()
		case "lockout_remaining":
			res.LockoutRemaining, ok = p.Int()
		case "gates":
			// A second array is decoded by encoding/json into the first
			// one's elements, fields of both mixed: its to decode.
			if gates {
				return false
			}
			gates = true
			res.Gates, ok = decodeCheckGates(&p)
		default:
			return false
		}
		if !ok {
			return false
		}
		if p.Byte('}') {
			return p.End()
		}
		if !p.Byte(',') {
			return false
		}
	}
}

// decodeCheckGates reads null or an array of gates.
func decodeCheckGates(p *flatjson.Scanner) ([]CheckGate, bool) {
	if p.Null() {
		return nil, true
	}
	if !p.Byte('[') {
		return nil, false
	}
	gates := make([]CheckGate, 0, 4)
	if p.Byte(']') {
		return gates, true
	}
	for {
		var g CheckGate
		if !decodeCheckGate(p, &g) {
			return nil, false
		}
		gates = append(gates, g)
		if p.Byte(']') {
			return gates, true
		}
		if !p.Byte(',') {
			return nil, false
		}
	}
}

func decodeCheckGate(p *flatjson.Scanner, g *CheckGate) bool {
	if !p.Byte('{') {
		return false
	}
	if p.Byte('}') {
		return true
	}
	for {
		name, ok := p.Name()
		if !ok {
			return false
		}
		switch name {
		case "definition_id":
			g.DefinitionID, ok = p.String()
		case "axis":
			g.Axis, ok = p.String()
		case "entity_type":
			g.EntityType, ok = p.String()
		case "window_seconds":
			var w int64
			// int is 32 bits on some platforms; a window that does not
			// fit 9 digits is encoding/json's to refuse or convert.
			w, ok = p.Uint(9)
			g.WindowSeconds = int(w)
		case "limit":
			g.Limit, ok = p.Int()
		case "count":
			g.Count, ok = p.Int()
		case "remaining":
			g.Remaining, ok = p.Int()
		case "reset":
			g.Reset, ok = p.Int()
		case "shadow":
			g.Shadow, ok = p.Bool()
		case "matched_by":
			g.MatchedBy, ok = p.String()
		case "matched":
			g.Matched, ok = p.String()
		case "dimension":
			g.Dimension, ok = p.String()
		default:
			return false
		}
		if !ok {
			return false
		}
		if p.Byte('}') {
			return true
		}
		if !p.Byte(',') {
			return false
		}
	}
}
