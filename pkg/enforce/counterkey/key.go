// Package counterkey is the one type of counter keys: a constructor per
// kind (the gates' counters, the failed-credential throttle's, escalation's
// violations), the string form the counter stores hold, and the parser
// that reads one back. A new kind of key is a change here; nothing outside
// assembles a key from strings.
package counterkey

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Kind is the first segment of a counter key: which gate it counts.
type Kind string

// The kinds of counter keys. The grammar (docs/design/counters.md, "Counter keys"):
//
//	c|<window>|<caller>                   caller bucket (enforce)
//	ct|<window>|<caller>|<target>         caller_target bucket (enforce)
//	s|<definition id>|<caller>            shadow caller definition
//	s|<definition id>|<caller>|<target>   shadow caller_target definition
//	t|<definition id>                     target definition
//	t|<definition id>|<server>            server_group definition, one per member
//	p|<definition id>|<subject>           per ip or per team caller definition
//	p|<definition id>|<subject>|<target>  the same on the caller_target axis
//	p|<definition id>                     shared caller definition
//	p|<definition id>|<target>            shared caller_target definition
//	af|<scope>|<window>|ip:<key>          failed credentials of an address
//	al|<scope>|ip:<key>                   failed-credential lockout of an address
//	v|<within>|<membership id>            violations of a caller (escalation)
//
// A descriptor's counter (Envoy's protocol) is a t key whose definition
// id is target:descriptor:<counter path>:<window> (Descriptor).
//
// A p key's <subject> is ip:<key> (per: ip) or team:<name> (per: team);
// neither holds '|', nor does the definition id (group names do not), so
// what follows the subject, or the id, is the target.
//
// <caller> is user:<name>, agent:<client id> or ip:<address> (an
// anonymous call's client address, IPv6 keyed by its prefix:
// ip:203.0.113.7, ip:2001:db8:1:2::/64), <target> is
// <target type>:<name> (mcp_server:mcpgw, a2a_agent:/booking). A counter
// of an algorithm other than the fixed window marks its kind: c.tb, t.sw
// (token bucket, sliding window), so that a definition whose algorithm
// changes starts on a counter of its new algorithm instead of reading the
// old one's, and a fixed window's key is byte for byte what it always was.
const (
	// KindCaller is the bucket the enforce caller definitions of one
	// window share, per caller: the most restrictive one's limit applies.
	KindCaller Kind = "c"
	// KindCallerTarget is the caller_target counterpart: one bucket per
	// caller, target and window.
	KindCallerTarget Kind = "ct"
	// KindShadow counts for one shadow caller or caller_target definition.
	KindShadow Kind = "s"
	// KindTarget counts for one target definition (and for a server_group
	// definition, one per member server).
	KindTarget Kind = "t"
	// KindPer counts for one caller or caller_target definition whose
	// buckets are not per caller (Definition.Per ip, team or shared): one
	// per client IP, per team, or one shared, each definition its own.
	KindPer Kind = "p"
	// KindAuthFailures counts the failed authentications of one client
	// address in one scope of the failed-credential throttle, over a
	// sliding window.
	KindAuthFailures Kind = "af"
	// KindAuthLockout is the failed-credential throttle's lockout of one
	// client address in one scope: a bucket of one token.
	KindAuthLockout Kind = "al"
	// KindViolation counts the violations of one caller (its membership
	// id) that escalation locks out on.
	KindViolation Kind = "v"
)

// CallerIP is the caller type of an anonymous call keyed by its client
// address: its counters' caller is ip:<key> (ip:203.0.113.7,
// ip:2001:db8:1:2::/64).
const CallerIP = "ip"

// CallerTeam is the subject type of a team's buckets in counter keys
// (team:<name>, definitions with per: team).
const CallerTeam = "team"

// Prefix is what every key of kind k starts with (its fixed-window form):
// what a store selects the kind's keys by.
func (k Kind) Prefix() string { return string(k) + "|" }

// marked reports whether keys of kind k carry an algorithm mark: the
// kinds of definitions' counters do; the failed-credential and violation
// kinds have one algorithm each and no mark.
func (k Kind) marked() bool {
	switch k {
	case KindAuthFailures, KindAuthLockout, KindViolation:
		return false
	}
	return true
}

// targetMarks are the target types a caller's part of a key ends before.
var targetMarks = []string{"|" + ratelimit.EntityMCPServer + ":", "|" + ratelimit.EntityA2AAgent + ":"}

// Key is what a counter key names. Its string form (String) is the
// key the counter stores hold; Parse reads one back. Stores treat the
// string as opaque: what they select counters by (caller, target,
// definition) travels beside it as its Parts (PartsOf), which the
// PostgreSQL store keeps in indexed columns, so a new kind of key is a
// change to this package alone.
//
// Which fields a key uses depends on its kind:
//
//	Kind              WindowSeconds     DefinitionID  Caller  Target                  Server
//	KindCaller        in the key        -             yes     -                       -
//	KindCallerTarget  in the key        -             yes     yes                     -
//	KindShadow        the definition's  yes           yes     caller_target axis only -
//	KindTarget        the definition's  yes           -       -                       server_group only
//
// The failed-credential and violation kinds use Scope (af and al keys),
// WindowSeconds (af: the throttle's window; v: the escalation's within)
// and Subject (af and al: ip:<key>; v: the caller's membership id); no
// counter selector picks them.
//
// Identities and target names may hold any bytes, '|' included. The only
// ambiguity that allows is where a caller's part ends and a target begins
// (ct keys and caller_target shadow keys): the target begins at the first
// "|mcp_server:" or "|a2a_agent:" after the caller's first byte, or, when
// there is none (a target type gateways do not send), at the last '|' that
// is followed by <type>:.
// Callers are named by the identity provider, targets by the request path
// a caller chooses, so the rule that reads the caller up to the first
// target type is the one a caller cannot steer: a call to a crafted path
// is still listed, and reset, under its caller. A caller identity that
// itself holds "|mcp_server:" (or "|a2a_agent:") has its caller_target
// buckets attributed to a shorter caller; counting is not affected, only
// which selector lists the bucket.
type Key struct {
	Kind Kind
	// Algorithm is the counter's algorithm; empty and algorithm.FixedWindow
	// are the same (no mark in the key).
	Algorithm algorithm.Name
	// WindowSeconds is the window: written in c and ct keys; for s and t
	// keys that of the definition id (Parse reads it from there,
	// String ignores it).
	WindowSeconds int
	// DefinitionID names the definition of s and t keys.
	DefinitionID string
	// Caller is user:<name>, agent:<client id> or ip:<address> (c, ct and
	// s keys).
	Caller string
	// Target is <target type>:<name> (ct keys, and s keys of caller_target
	// definitions).
	Target string
	// Server is the member server of a server_group definition's t key.
	Server string
	// Scope is the failed-credential throttle's scope (rlapi or gateway)
	// of af and al keys; it holds no '|'.
	Scope string
	// Subject is what af, al and v keys count: the client address as
	// ip:<key> (af, al), the caller's membership id (v).
	Subject string
}

// Caller is the caller bucket of a window.
func Caller(windowSeconds int, caller string) Key {
	return Key{Kind: KindCaller, WindowSeconds: windowSeconds, Caller: caller}
}

// CallerTarget is the caller_target bucket of a window.
func CallerTarget(windowSeconds int, caller, target string) Key {
	return Key{Kind: KindCallerTarget, WindowSeconds: windowSeconds, Caller: caller, Target: target}
}

// Shadow is a shadow definition's counter of a caller (target is
// empty for the caller axis).
func Shadow(d ratelimit.Definition, caller, target string) Key {
	return Key{Kind: KindShadow, Algorithm: OfDefinition(d), WindowSeconds: d.WindowSeconds, DefinitionID: d.ID, Caller: caller, Target: target}
}

// Per is the counter of a definition whose Per is ip, team or
// shared: subject is ip:<key> or team:<name> (empty for shared), target
// the call's target on the caller_target axis (else empty).
func Per(d ratelimit.Definition, subject, target string) Key {
	return Key{Kind: KindPer, Algorithm: OfDefinition(d), WindowSeconds: d.WindowSeconds, DefinitionID: d.ID, Caller: subject, Target: target}
}

// Target is a target definition's counter; server names the member
// server for a server_group definition, else it is empty.
func Target(d ratelimit.Definition, server string) Key {
	return Key{Kind: KindTarget, Algorithm: OfDefinition(d), WindowSeconds: d.WindowSeconds, DefinitionID: d.ID, Server: server}
}

// AuthFailures counts the failed authentications of the client
// address key (an IPv4 address, an IPv6 prefix: clientip.Key) in scope,
// over a sliding window of windowSeconds.
func AuthFailures(scope string, windowSeconds int, key string) Key {
	return Key{Kind: KindAuthFailures, Scope: scope, WindowSeconds: windowSeconds, Subject: CallerIP + ":" + key}
}

// AuthLockout is the failed-credential lockout of the client
// address key in scope.
func AuthLockout(scope, key string) Key {
	return Key{Kind: KindAuthLockout, Scope: scope, Subject: CallerIP + ":" + key}
}

// AuthFailuresPattern is what the keys of key's failed authentications
// in scope, of every window, start and end with: a store deletes them all
// when a lockout is lifted, whatever window counted them.
func AuthFailuresPattern(scope, key string) (prefix, suffix string) {
	return KindAuthFailures.Prefix() + scope + "|", "|" + CallerIP + ":" + key
}

// AuthAddress is the scope and client address key of an af or al key (ok
// false for any other kind).
func (k Key) AuthAddress() (scope, key string, ok bool) {
	if k.Kind != KindAuthFailures && k.Kind != KindAuthLockout {
		return "", "", false
	}
	key, ok = strings.CutPrefix(k.Subject, CallerIP+":")
	return k.Scope, key, ok && k.Scope != "" && key != ""
}

// AuthLockoutID names a client address key's failed-credential counters
// in scope in a change (the notice of a lifted lockout):
// <scope>|<address key>.
func AuthLockoutID(scope, key string) string { return scope + "|" + key }

// ParseAuthLockoutID reads an AuthLockoutID back (ok false for a string
// that is none).
func ParseAuthLockoutID(id string) (scope, key string, ok bool) {
	scope, key, ok = strings.Cut(id, "|")
	return scope, key, ok && scope != "" && key != ""
}

// Violation counts the violations of the caller whose membership
// id is subject (ratelimit.MembershipID), over a sliding window of
// withinSeconds.
func Violation(withinSeconds int, subject string) Key {
	return Key{Kind: KindViolation, WindowSeconds: withinSeconds, Subject: subject}
}

// Descriptor is the counter of an Envoy descriptor for a window of
// an algorithm (shared: its share_threshold patterns, else nil): a target
// counter of the definition id DefinitionID(target, descriptor,
// DescriptorCounterPath(domain, entries, shared), window).
func Descriptor(alg algorithm.Name, domain string, entries []ratelimit.DescriptorEntry, shared []string, window int) Key {
	k, _ := DescriptorWithString(alg, domain, entries, shared, window)
	return k
}

// descriptorPrefix starts the definition id of a descriptor's counter.
const descriptorPrefix = ratelimit.AxisTarget + ":" + ratelimit.EntityDescriptor + ":"

// DescriptorWithString is Descriptor and its String, built in one
// buffer (a decision builds one per descriptor gate): the key's
// definition id is a part of its string.
func DescriptorWithString(alg algorithm.Name, domain string, entries []ratelimit.DescriptorEntry, shared []string, window int) (Key, string) {
	alg = KeyAlgorithm(alg)
	mark := algorithmMarks[alg]
	n := len(KindTarget) + len(mark) + 1 + len(descriptorPrefix) + len(domain) + 1 + 20
	for _, e := range entries {
		n += 2 + len(e.Key) + len(e.Value)
	}
	b := make([]byte, 0, n)
	b = append(b, KindTarget...)
	b = append(b, mark...)
	b = append(b, '|')
	id := len(b)
	b = append(b, descriptorPrefix...)
	b = ratelimit.AppendDescriptorCounterPath(b, domain, entries, shared)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(window), 10)
	s := string(b)
	return Key{Kind: KindTarget, Algorithm: alg, WindowSeconds: window, DefinitionID: s[id:]}, s
}

// algorithmMarks are the marks the kind of a counter key carries for
// algorithms other than the fixed window.
var algorithmMarks = map[algorithm.Name]string{algorithm.TokenBucket: ".tb", algorithm.SlidingWindow: ".sw"}

// OfDefinition is d's algorithm as its counters' keys carry it: empty for
// the fixed window (a definition that names none is one).
func OfDefinition(d ratelimit.Definition) algorithm.Name {
	return KeyAlgorithm(algorithm.Name(d.AlgorithmOrDefault()))
}

// KeyAlgorithm is a's value in a Key: empty for the fixed window,
// as Parse reads it back.
func KeyAlgorithm(a algorithm.Name) algorithm.Name {
	if a == algorithm.FixedWindow {
		return ""
	}
	return a
}

// kindAlgorithm splits a key's first segment into its kind and algorithm.
func kindAlgorithm(seg string) (Kind, algorithm.Name, bool) {
	for a, m := range algorithmMarks {
		if k, ok := strings.CutSuffix(seg, m); ok {
			return Kind(k), a, true
		}
	}
	if strings.Contains(seg, ".") {
		return "", "", false
	}
	return Kind(seg), "", true
}

// String returns the key as the counter stores hold it. It allocates once.
func (k Key) String() string {
	var num [20]byte
	var window []byte
	n := len(k.Kind) + 1
	switch k.Kind {
	case KindAuthFailures, KindAuthLockout, KindViolation:
		return k.authString()
	case KindCaller, KindCallerTarget:
		window = strconv.AppendInt(num[:0], int64(k.WindowSeconds), 10)
		n += len(window) + 1 + len(k.Caller)
	default:
		n += len(k.DefinitionID)
		if k.Caller != "" {
			n += 1 + len(k.Caller)
		}
	}
	if k.Target != "" {
		n += 1 + len(k.Target)
	}
	if k.Server != "" {
		n += 1 + len(k.Server)
	}
	mark := algorithmMarks[k.Algorithm]
	n += len(mark)
	var b strings.Builder
	b.Grow(n)
	b.WriteString(string(k.Kind))
	b.WriteString(mark)
	b.WriteByte('|')
	if window != nil {
		b.Write(window)
		b.WriteByte('|')
		b.WriteString(k.Caller)
	} else {
		b.WriteString(k.DefinitionID)
		if k.Caller != "" {
			b.WriteByte('|')
			b.WriteString(k.Caller)
		}
	}
	if k.Target != "" {
		b.WriteByte('|')
		b.WriteString(k.Target)
	}
	if k.Server != "" {
		b.WriteByte('|')
		b.WriteString(k.Server)
	}
	return b.String()
}

// authString is String of the failed-credential and violation kinds:
// af|<scope>|<window>|<subject>, al|<scope>|<subject>, v|<within>|<subject>.
func (k Key) authString() string {
	var num [20]byte
	var window []byte
	n := len(k.Kind) + 1 + len(k.Subject)
	if k.Kind != KindAuthLockout {
		window = strconv.AppendInt(num[:0], int64(k.WindowSeconds), 10)
		n += len(window) + 1
	}
	if k.Kind != KindViolation {
		n += len(k.Scope) + 1
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(string(k.Kind))
	b.WriteByte('|')
	if k.Kind != KindViolation {
		b.WriteString(k.Scope)
		b.WriteByte('|')
	}
	if window != nil {
		b.Write(window)
		b.WriteByte('|')
	}
	b.WriteString(k.Subject)
	return b.String()
}

// OnTarget names the target the counter counts calls to, as
// <entity_type>:<name> (what `rlctl counters get --target` selects): a
// caller_target bucket's target, a target definition's entity, a
// server_group member as mcp_server:<server>. It is empty for keys that
// count no target (caller buckets and caller shadow counters).
func (k Key) OnTarget() string {
	switch k.Kind {
	case KindCallerTarget, KindShadow, KindPer:
		return k.Target
	case KindTarget:
		if k.Server != "" {
			return ratelimit.EntityMCPServer + ":" + k.Server
		}
		_, entity, name, _, err := ratelimit.ParseDefinitionID(k.DefinitionID)
		if err != nil {
			return ""
		}
		return entity + ":" + name
	}
	return ""
}

// Error is a string that is not a counter key.
type Error struct {
	Key    string
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("counter key %q: %s", e.Key, e.Reason)
}

// Parse reads a counter key (see Key for the grammar and
// the one ambiguity it resolves). For every key k a gateway builds,
// Parse(k.String()) gives k back; for every s it accepts,
// String gives s back. It refuses anything else with a *Error
// naming what is wrong.
func Parse(s string) (Key, error) {
	fail := func(format string, args ...any) (Key, error) {
		return Key{}, &Error{Key: s, Reason: fmt.Sprintf(format, args...)}
	}
	kind, rest, ok := strings.Cut(s, "|")
	if !ok {
		return fail("want <kind>|..., with kind c, ct, s or t, or p, af, al or v")
	}
	kd, algo, ok := kindAlgorithm(kind)
	if !ok || (algo != "" && !kd.marked()) {
		return fail("kind %q: want c, ct, s or t, marked .tb or .sw for a token bucket or sliding window, or p, af, al or v", kind)
	}
	k := Key{Kind: kd, Algorithm: algo}
	switch k.Kind {
	case KindAuthFailures, KindAuthLockout:
		scope, rest, ok := strings.Cut(rest, "|")
		if !ok || scope == "" {
			return fail("want %s|<scope>|...", kind)
		}
		k.Scope = scope
		if k.Kind == KindAuthFailures {
			w, after, ok := strings.Cut(rest, "|")
			if !ok {
				return fail("want af|<scope>|<window>|ip:<address>")
			}
			n, err := parseWindow(w)
			if err != nil {
				return fail("window %q: %v", w, err)
			}
			k.WindowSeconds, rest = n, after
		}
		if !strings.HasPrefix(rest, CallerIP+":") || len(rest) <= len(CallerIP)+1 {
			return fail("address %q: want ip:<address>", rest)
		}
		k.Subject = rest
		return k, nil
	case KindViolation:
		w, rest, ok := strings.Cut(rest, "|")
		if !ok {
			return fail("want v|<within>|<membership id>")
		}
		n, err := parseWindow(w)
		if err != nil {
			return fail("window %q: %v", w, err)
		}
		if typ, name, ok := strings.Cut(rest, ":"); !ok || typ == "" || name == "" {
			return fail("subject %q: want a membership id, <subject type>:<subject>", rest)
		}
		k.WindowSeconds, k.Subject = n, rest
		return k, nil
	case KindCaller, KindCallerTarget:
		w, rest, ok := strings.Cut(rest, "|")
		if !ok {
			return fail("want %s|<window>|<caller>...", kind)
		}
		n, err := parseWindow(w)
		if err != nil {
			return fail("window %q: %v", w, err)
		}
		k.WindowSeconds = n
		if k.Kind == KindCaller {
			if !isCaller(rest) {
				return fail("caller %q: want user:<name>, agent:<client id> or ip:<address>", rest)
			}
			k.Caller = rest
			return k, nil
		}
		if team, target, ok := strings.Cut(rest, "|"); ok && strings.HasPrefix(team, CallerTeam+":") {
			// A route tier's team bucket: ct|<window>|team:<name>|route:<tier>
			// (a team name never holds '|').
			if len(team) <= len(CallerTeam)+1 || !strings.HasPrefix(target, ratelimit.EntityRoute+":") || len(target) <= len(ratelimit.EntityRoute)+1 {
				return fail("team caller %q: want ct|<window>|team:<name>|route:<tier>", rest)
			}
			k.Caller, k.Target = team, target
			return k, nil
		}
		if k.Caller, k.Target, err = splitCallerTarget(rest); err != nil {
			return fail("%v", err)
		}
		return k, nil
	case KindShadow:
		id, rest, ok := strings.Cut(rest, "|")
		if !ok {
			return fail("want s|<definition id>|<caller>...")
		}
		axis, entity, _, w, err := ratelimit.ParseDefinitionID(id)
		if err != nil {
			return fail("%v", err)
		}
		if (axis != ratelimit.AxisCaller && axis != ratelimit.AxisCallerTarget) || (entity != ratelimit.EntityGroup && !ratelimit.IsSubjectEntity(entity)) {
			return fail("definition id %q: a shadow counter's definition is a caller or caller_target group, user, client or team definition", id)
		}
		k.DefinitionID, k.WindowSeconds = id, w
		if axis == ratelimit.AxisCaller {
			if !isCaller(rest) {
				return fail("caller %q: want user:<name>, agent:<client id> or ip:<address>", rest)
			}
			k.Caller = rest
			return k, nil
		}
		if k.Caller, k.Target, err = splitCallerTarget(rest); err != nil {
			return fail("%v", err)
		}
		return k, nil
	case KindPer:
		id, rest, more := strings.Cut(rest, "|")
		if more && rest == "" {
			return fail("nothing after the '|' that follows the definition id")
		}
		axis, entity, _, w, err := ratelimit.ParseDefinitionID(id)
		if err != nil {
			return fail("%v", err)
		}
		if (axis != ratelimit.AxisCaller && axis != ratelimit.AxisCallerTarget) || entity != ratelimit.EntityGroup {
			return fail("definition id %q: a p counter's definition is a caller or caller_target group definition", id)
		}
		k.DefinitionID, k.WindowSeconds = id, w
		if p := perSubjectPrefix(rest); p > 0 {
			subject, after, more := strings.Cut(rest, "|")
			if len(subject) <= p {
				return fail("subject %q: want ip:<key> or team:<name>", subject)
			}
			if more && after == "" {
				return fail("nothing after the '|' that follows %q", subject)
			}
			k.Caller, rest = subject, after
			if !more {
				rest = ""
				if axis == ratelimit.AxisCallerTarget {
					return fail("no target after %q: a caller_target definition's p counter names its target", subject)
				}
			}
		}
		switch {
		case axis == ratelimit.AxisCaller && rest != "":
			return fail("%q after the subject: a caller definition's p counter has no target", rest)
		case axis == ratelimit.AxisCallerTarget:
			if typ, _, ok := strings.Cut(rest, ":"); !ok || typ == "" {
				return fail("target %q: want <target type>:<name>", rest)
			}
			k.Target = rest
		}
		return k, nil
	case KindTarget:
		// A target definition id may contain '|' (server names may); a
		// server_group's is followed by |<server>, and group names never
		// contain '|'.
		id, server := rest, ""
		group := strings.HasPrefix(rest, ratelimit.AxisTarget+":"+ratelimit.EntityServerGroup+":")
		if group {
			if id, server, ok = strings.Cut(rest, "|"); !ok || server == "" {
				return fail("want t|<server_group definition id>|<server>")
			}
		}
		axis, _, _, w, err := ratelimit.ParseDefinitionID(id)
		if err != nil {
			return fail("%v", err)
		}
		if axis != ratelimit.AxisTarget {
			return fail("definition id %q: a target counter's definition is a target definition", id)
		}
		k.DefinitionID, k.WindowSeconds, k.Server = id, w, server
		return k, nil
	}
	return fail("kind %q: want c, ct, s or t, or p, af, al or v", kind)
}

// perSubjectPrefix is the length of s's ip: or team: prefix, 0 if it has
// none.
func perSubjectPrefix(s string) int {
	for _, p := range []string{CallerIP + ":", CallerTeam + ":"} {
		if strings.HasPrefix(s, p) {
			return len(p)
		}
	}
	return 0
}

// parseWindow accepts a window as String writes it: a positive decimal
// number without leading zeros, at most 9 digits (as definition ids).
func parseWindow(s string) (int, error) {
	if s == "" || len(s) > 9 || s[0] == '0' {
		return 0, errors.New("want a positive number of seconds without leading zeros")
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("want a positive number of seconds without leading zeros")
		}
	}
	return strconv.Atoi(s)
}

// callerPrefixes are the caller types of a key's caller part.
var callerPrefixes = []string{"user:", "agent:", CallerIP + ":"}

// callerPrefix returns the length of s's caller type prefix ("user:",
// "agent:" or "ip:"), 0 if it has none.
func callerPrefix(s string) int {
	for _, p := range callerPrefixes {
		if strings.HasPrefix(s, p) {
			return len(p)
		}
	}
	return 0
}

// isCaller reports whether s is user:<name>, agent:<client id> or
// ip:<address> with a name of at least one byte. An ip caller's address is
// not checked to be one: the key is what the gateway's resolver wrote
// (ip:2001:db8:1:2::/64 holds ':' and '/' but never '|', so the split
// before a target is the same as for any name).
func isCaller(s string) bool {
	p := callerPrefix(s)
	return p > 0 && len(s) > p
}

// splitCallerTarget splits <caller>|<target> (see Key for the rule).
func splitCallerTarget(s string) (caller, target string, err error) {
	p := callerPrefix(s)
	if p == 0 || len(s) <= p {
		return "", "", fmt.Errorf("caller in %q: want user:<name>, agent:<client id> or ip:<address>, then |<target>", s)
	}
	from := p + 1 // the caller's name has at least one byte
	at := -1
	for _, m := range targetMarks {
		if i := strings.Index(s[from:], m); i >= 0 && (at < 0 || from+i < at) {
			at = from + i
		}
	}
	for i := len(s) - 1; at < 0 && i >= from; i-- {
		if s[i] == '|' {
			if typ, _, ok := strings.Cut(s[i+1:], ":"); ok && typ != "" && !strings.Contains(typ, "|") {
				at = i
			}
		}
	}
	if at < 0 {
		return "", "", fmt.Errorf("no target after the caller in %q: want <caller>|<target type>:<name>", s)
	}
	caller, target = s[:at], s[at+1:]
	if typ, _, ok := strings.Cut(target, ":"); !ok || typ == "" {
		return "", "", fmt.Errorf("target %q: want <target type>:<name>", target)
	}
	return caller, target, nil
}
