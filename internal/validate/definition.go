package validate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Floors are the config-time minimum per-minute limits for caller and
// caller_target definitions with windows of 60 seconds or less. They exist so
// an operator cannot throttle humans or agents into uselessness with a typo;
// longer windows are exempt so that low hourly or daily volume caps still
// work. A zero floor disables that check.
type Floors struct {
	User  int // minimum user_max_requests
	Agent int // minimum agent_max_requests
}

// DefaultFloors returns the reference defaults (RATE_LIMIT_USER_FLOOR_PER_MIN
// and RATE_LIMIT_AGENT_FLOOR_PER_MIN).
func DefaultFloors() Floors {
	return Floors{User: 20, Agent: 10}
}

// floorWindowSeconds is the longest window the floors apply to.
const floorWindowSeconds = 60

// Definition checks d and returns its normalized copy: name trimmed and
// normalized for its entity type, members normalized and de-duplicated in
// first-seen order, Mode defaulted to enforce, Scope derived from the
// quarantine sentinel (empty elsewhere), Description trimmed, an explicit
// fixed_window algorithm, caller per and auto lease dropped (they are the
// defaults), override set on a definition selecting one subject, fail_policy and fail_closed in step (fail_closed alone is
// fail_policy closed) and ID set from the result. On failure it returns an *Error
// listing every field at fault.
//
// A field that does not belong to d's axis is an error rather than being
// dropped: a max_requests on a caller group silently ignored would leave the
// operator believing a limit exists that is never enforced.
func Definition(d ratelimit.Definition, f Floors) (ratelimit.Definition, error) {
	var probs problems
	d = descriptorName(&probs, d)
	out := d
	out.Name = identity(&probs, d.Axis, d.EntityType, d.Name, d.WindowSeconds)
	if probs.err() == nil {
		probs.add(spaceProblem("name", out.Name)) // on writes only, see spaceProblem
	}
	checkLimits(&probs, d, f)
	out.Members = members(&probs, d)
	out.Paths, out.Methods = routeFields(&probs, d)
	out.Kinds, out.ToolScope = toolFields(&probs, d)
	probs.add(resourceURIProblem(d.EntityType, out.Name, out.Kinds))

	var fe *FieldError
	out.Scope, fe = scope(d.Axis, out.Name, d.Scope)
	probs.add(fe)

	if out.Mode == "" {
		out.Mode = ratelimit.ModeEnforce
	}
	// The default algorithm has one spelling, none: a definition that
	// says fixed_window and one that says nothing are the same definition
	// (apply and diff see no change), and the wire form of every
	// definition written before algorithms existed stays as it was.
	if out.Algorithm == ratelimit.AlgorithmFixedWindow {
		out.Algorithm = ""
	}
	// Per has one spelling of its default too: none.
	checkSelectors(&probs, d)
	if out.Per == ratelimit.PerCaller {
		out.Per = ""
	}
	out.Override = override(&probs, d)
	out.Lease = leaseMode(&probs, d)
	out.FailPolicy, out.FailClosed = failPolicy(&probs, d)
	if d.CountsTowardLockout != nil && d.Axis == ratelimit.AxisQuarantine {
		probs.add(fieldError("counts_toward_lockout", "not allowed on the quarantine axis; quarantine blocks outright and throttles nothing (got %t)", *d.CountsTowardLockout))
	}
	probs.add(check("mode", out.Mode, modeRule))

	out.Description, fe = text("description", d.Description, true)
	probs.add(fe)

	if err := probs.err(); err != nil {
		return ratelimit.Definition{}, err
	}
	out.ID = out.Key()
	return out, nil
}

// DefinitionID checks a definition id and returns its canonical form. It
// applies the same rules to axis, entity type, name and window as Definition,
// with the same messages, so an id is accepted exactly when a valid definition
// could carry it.
func DefinitionID(id string) (string, error) {
	axis, entityType, name, window, err := ratelimit.ParseDefinitionID(id)
	if err != nil {
		return single("", fieldError("id", "%v", err))
	}
	var probs problems
	name = identity(&probs, axis, entityType, name, window)
	if err := probs.err(); err != nil {
		return "", err
	}
	return ratelimit.DefinitionID(axis, entityType, name, window), nil
}

// identity checks the four fields a definition id is made of, adding what it
// finds to probs, and returns the normalized name.
func identity(probs *problems, axis, entityType, name string, window int) string {
	probs.add(check("axis", axis, axisRule))
	probs.add(entityTypeProblem(axis, entityType))
	name, fe := definitionName(axis, entityType, name)
	probs.add(fe)
	probs.add(windowProblem(axis, window))
	return name
}

// EntityTypesOn returns the entity types an axis takes, or nil for an
// unknown axis (for completion: --axis target --entity-type <TAB>).
//
// It leaves out descriptor: a descriptor definition's name is a canonical
// path (ratelimit.DescriptorName) better written by apply or rlctl import
// envoy-ratelimit than typed as a flag.
func EntityTypesOn(axis string) []string {
	return slices.DeleteFunc(entityTypesOn(axis), func(t string) bool { return t == ratelimit.EntityDescriptor })
}

// entityTypesOn returns the entity types an axis takes, or nil for an unknown
// axis.
func entityTypesOn(axis string) []string {
	switch axis {
	case ratelimit.AxisCaller, ratelimit.AxisCallerTarget:
		return []string{ratelimit.EntityGroup, ratelimit.EntityUser, ratelimit.EntityClient, ratelimit.EntityTeam}
	case ratelimit.AxisQuarantine:
		return []string{ratelimit.EntityGroup}
	case ratelimit.AxisTarget:
		return []string{ratelimit.EntityMCPServer, ratelimit.EntityA2AAgent, ratelimit.EntityMCPTool,
			ratelimit.EntityA2ASkill, ratelimit.EntityServerGroup, ratelimit.EntityDescriptor, ratelimit.EntityRoute}
	}
	return nil
}

// entityTypeProblem checks the entity type against the axis's allowlist; with
// an unknown axis (already reported) it checks against every entity type.
func entityTypeProblem(axis, entityType string) *FieldError {
	allowed := entityTypesOn(axis)
	switch {
	case allowed == nil:
		return check("entity_type", entityType, entityTypeRule)
	case len(allowed) == 1 && entityType != allowed[0]:
		return fieldError("entity_type", "must be %s on the %s axis (got %q)", allowed[0], axis, entityType)
	case len(allowed) > 1 && !slices.Contains(allowed, entityType):
		return fieldError("entity_type", "must be one of %s on the %s axis (got %q)",
			strings.Join(allowed, ", "), axis, entityType)
	}
	return nil
}

// definitionName normalizes the name for its entity type and applies the
// quarantine reservations: the quarantine axis takes only the two sentinel
// names, and no other axis may use them, so a rate definition can never
// shadow the kill switch.
func definitionName(axis, entityType, name string) (string, *FieldError) {
	normalize := nameNormalizer(entityType)
	if normalize == nil {
		// The entity type is already reported; there is no rule to read
		// the name by.
		return name, nil
	}
	name, fe := normalize("name", name)
	switch {
	case fe != nil:
		return "", fe
	case axis == ratelimit.AxisQuarantine && !isReservedGroup(name):
		return "", fieldError("name", "must be %s or %s on the quarantine axis (got %q)",
			ratelimit.GroupQuarantineCallers, ratelimit.GroupQuarantineTargets, name)
	case axis != ratelimit.AxisQuarantine && isReservedGroup(name):
		return "", fieldError("name", "%q is reserved for quarantine; use rate-limit-quarantine-add to quarantine a subject", name)
	}
	return name, nil
}

// windowProblem checks the window range; a sentinel's window is fixed at 1
// because it is part of the sentinel's well-known id.
func windowProblem(axis string, window int) *FieldError {
	if fe := check("window_seconds", window, windowRule); fe != nil {
		return fe
	}
	if axis == ratelimit.AxisQuarantine && window != 1 {
		return fieldError("window_seconds", "must be 1 on the quarantine axis (got %d)", window)
	}
	return nil
}

// checkLimits checks which limits the axis takes, that the required ones are
// present, their ranges, and the floors.
func checkLimits(probs *problems, d ratelimit.Definition, f Floors) {
	switch d.Axis {
	case ratelimit.AxisCaller, ratelimit.AxisCallerTarget:
		probs.add(misplaced("max_requests", d.MaxRequests,
			"not allowed on the %s axis; use user_max_requests and/or agent_max_requests", d.Axis))
		if d.UserMaxRequests == nil && d.AgentMaxRequests == nil {
			probs.add(fieldError("user_max_requests",
				"required unless agent_max_requests is set; the %s axis needs at least one of them", d.Axis))
		}
		probs.add(groupLimit("user_max_requests", "user", d.UserMaxRequests, f.User, d.WindowSeconds, d.AlgorithmOrDefault()))
		probs.add(groupLimit("agent_max_requests", "agent", d.AgentMaxRequests, f.Agent, d.WindowSeconds, d.AlgorithmOrDefault()))
	case ratelimit.AxisTarget:
		if d.EntityType == ratelimit.EntityRoute {
			routeLimits(probs, d)
			break
		}
		const useMax = "not allowed on the target axis; use max_requests"
		probs.add(misplaced("user_max_requests", d.UserMaxRequests, useMax))
		probs.add(misplaced("agent_max_requests", d.AgentMaxRequests, useMax))
		switch {
		case d.MaxRequests == nil && d.EntityType == ratelimit.EntityDescriptor && !d.Unlimited:
			probs.add(fieldError("max_requests", "required on the target axis unless unlimited is true"))
		case d.MaxRequests == nil && d.EntityType != ratelimit.EntityDescriptor:
			probs.add(fieldError("max_requests", "required on the target axis"))
		case d.MaxRequests != nil && *d.MaxRequests == 0 && d.EntityType == ratelimit.EntityDescriptor:
			// Envoy's requests_per_unit: 0 refuses every request.
			if d.AlgorithmOrDefault() != ratelimit.AlgorithmFixedWindow {
				probs.add(fieldError("max_requests", "0 (refuse every request) is allowed only with algorithm fixed_window (got %q)", d.Algorithm))
			}
		case d.MaxRequests != nil:
			probs.add(check("max_requests", *d.MaxRequests, limitRule))
		}
	case ratelimit.AxisQuarantine:
		const noRate = "not allowed on the quarantine axis; quarantine blocks outright and carries no rate"
		probs.add(misplaced("max_requests", d.MaxRequests, noRate))
		probs.add(misplaced("user_max_requests", d.UserMaxRequests, noRate))
		probs.add(misplaced("agent_max_requests", d.AgentMaxRequests, noRate))
	}
	if d.EntityType != ratelimit.EntityRoute {
		probs.add(misplaced("ip_max_requests", d.IPMaxRequests, "allowed only on target route definitions (entity_type is %q)", d.EntityType))
		probs.add(misplaced("ip_burst", d.IPBurst, "allowed only on target route definitions (entity_type is %q)", d.EntityType))
		probs.add(misplaced("team_max_requests", d.TeamMaxRequests, "allowed only on target route definitions (entity_type is %q)", d.EntityType))
		probs.add(misplaced("team_burst", d.TeamBurst, "allowed only on target route definitions (entity_type is %q)", d.EntityType))
	}
	checkAlgorithm(probs, d)
	checkDescriptor(probs, d)
}

// checkAlgorithm checks the algorithm and the bursts: a known algorithm
// (empty is fixed_window), bursts only on a token bucket, each on the axis
// that has its limit, at least 1.
func checkAlgorithm(probs *problems, d ratelimit.Definition) {
	algo := d.AlgorithmOrDefault()
	if !slices.Contains(ratelimit.Algorithms(), algo) {
		probs.add(fieldError("algorithm", "must be one of %s (got %q)", strings.Join(ratelimit.Algorithms(), ", "), d.Algorithm))
		return
	}
	if d.Axis == ratelimit.AxisQuarantine {
		if algo != ratelimit.AlgorithmFixedWindow {
			probs.add(fieldError("algorithm", "not allowed on the quarantine axis; quarantine blocks outright and counts nothing (got %q)", d.Algorithm))
		}
		const noRate = "not allowed on the quarantine axis; quarantine blocks outright and carries no rate"
		probs.add(misplaced("burst", d.Burst, noRate))
		probs.add(misplaced("user_burst", d.UserBurst, noRate))
		probs.add(misplaced("agent_burst", d.AgentBurst, noRate))
		return
	}
	bursts := []struct {
		field string
		burst *int
		limit *int
		of    string
	}{{"burst", d.Burst, d.MaxRequests, "max_requests"}, {"user_burst", d.UserBurst, d.UserMaxRequests, "user_max_requests"},
		{"agent_burst", d.AgentBurst, d.AgentMaxRequests, "agent_max_requests"}, {"ip_burst", d.IPBurst, d.IPMaxRequests, "ip_max_requests"},
		{"team_burst", d.TeamBurst, d.TeamMaxRequests, "team_max_requests"}}
	route := d.EntityType == ratelimit.EntityRoute
	for _, b := range bursts {
		switch {
		case b.burst == nil:
		case (b.field == "ip_burst" || b.field == "team_burst") && !route:
			// reported with ip_max_requests / team_max_requests
		case b.field == "burst" && d.Axis != ratelimit.AxisTarget:
			probs.add(fieldError(b.field, "not allowed on the %s axis; use user_burst and/or agent_burst", d.Axis))
		case b.field != "burst" && d.Axis == ratelimit.AxisTarget && !route:
			probs.add(fieldError(b.field, "not allowed on the target axis; use burst"))
		case algo != ratelimit.AlgorithmTokenBucket:
			probs.add(fieldError(b.field, "not allowed with algorithm %s; a burst is the capacity of a %s (set algorithm: %s, or drop %s)",
				algo, ratelimit.AlgorithmTokenBucket, ratelimit.AlgorithmTokenBucket, b.field))
		case b.limit == nil:
			probs.add(fieldError(b.field, "not allowed without %s: it is the capacity of that limit's bucket", b.of))
		default:
			probs.add(check(b.field, *b.burst, limitRule))
		}
	}
}

// checkSelectors checks everyone and per: a known per, and both
// only on the caller and caller_target axes, whose definitions select
// callers.
func checkSelectors(probs *problems, d ratelimit.Definition) {
	per := d.PerOrDefault()
	if !slices.Contains(ratelimit.Pers(), per) {
		probs.add(fieldError("per", "must be one of %s (got %q)", strings.Join(ratelimit.Pers(), ", "), d.Per))
	}
	if d.Axis == ratelimit.AxisCaller || d.Axis == ratelimit.AxisCallerTarget {
		return
	}
	if d.Everyone {
		probs.add(fieldError("everyone", "not allowed on the %s axis; only caller and caller_target definitions select callers", d.Axis))
	}
	if per != ratelimit.PerCaller && slices.Contains(ratelimit.Pers(), per) {
		probs.add(fieldError("per", "not allowed on the %s axis; only caller and caller_target definitions key buckets by caller, ip, team or shared (got %q)", d.Axis, d.Per))
	}
}

// override checks a definition's override and returns it: true on a
// definition selecting one subject, which outranks the groups of that
// subject by nature; allowed elsewhere only where it can outrank something,
// an enforce group definition kept per caller, whose bucket less specific
// definitions share.
func override(probs *problems, d ratelimit.Definition) bool {
	caller := d.Axis == ratelimit.AxisCaller || d.Axis == ratelimit.AxisCallerTarget
	if ratelimit.IsSubjectEntity(d.EntityType) && caller {
		if d.Everyone {
			probs.add(fieldError("everyone", "not allowed on a %s definition; it selects the one %s its name gives", d.EntityType, d.EntityType))
		}
		if d.PerOrDefault() != ratelimit.PerCaller {
			probs.add(fieldError("per", "must be caller on a %s definition; it overrides the caller's own bucket, which only per caller definitions share (got %q)", d.EntityType, d.Per))
		}
		return true
	}
	if !d.Override {
		return false
	}
	switch {
	case !caller:
		probs.add(fieldError("override", "not allowed on the %s axis; only caller and caller_target definitions share a caller's bucket", d.Axis))
	case d.Everyone:
		probs.add(fieldError("override", "not allowed with everyone: everyone is the least specific level, there is nothing below it to override"))
	case d.PerOrDefault() != ratelimit.PerCaller:
		probs.add(fieldError("override", "allowed only with per caller: a bucket kept per %s is the definition's own, no other definition shares it (got per %q)", d.Per, d.Per))
	case d.Mode == ratelimit.ModeShadow:
		probs.add(fieldError("override", "not allowed on a shadow definition: it counts on a bucket of its own, no other definition shares it"))
	}
	return true
}

// leaseMode checks a definition's lease (a known mode; other than auto
// only where the definition counts something an enforcer could lease)
// and returns it with the default, auto, as none.
func leaseMode(probs *problems, d ratelimit.Definition) string {
	mode := d.LeaseOrDefault()
	switch {
	case !slices.Contains(ratelimit.Leases(), mode):
		probs.add(fieldError("lease", "must be one of %s (got %q)", strings.Join(ratelimit.Leases(), ", "), d.Lease))
		return d.Lease
	case mode == ratelimit.LeaseAuto:
		return ""
	case d.Axis == ratelimit.AxisQuarantine:
		probs.add(fieldError("lease", "not allowed on the quarantine axis; quarantine blocks outright and counts nothing to lease (got %q)", d.Lease))
	case d.EntityType == ratelimit.EntityRoute && d.Exempt:
		probs.add(fieldError("lease", "not allowed on an exempt route: its paths are never counted, so there is nothing to lease (got %q)", d.Lease))
	case d.EntityType == ratelimit.EntityDescriptor && d.Unlimited:
		probs.add(fieldError("lease", "not allowed on an unlimited descriptor definition: it counts nothing, so there is nothing to lease (got %q)", d.Lease))
	}
	return mode
}

// failPolicy checks a definition's fail policy (a known one, none on the
// quarantine axis, not contradicted by fail_closed) and returns it with
// fail_closed in step: fail_closed alone, the older spelling, is policy
// closed, and policy closed is fail_closed, so that a replica that reads
// fail_closed alone and one that reads fail_policy decide alike. A
// quarantine sentinel's fail_closed, which the API has always taken and
// nothing counts by, is kept as it is.
func failPolicy(probs *problems, d ratelimit.Definition) (string, bool) {
	switch {
	case d.FailPolicy != "" && !slices.Contains(ratelimit.FailPolicies(), d.FailPolicy):
		probs.add(fieldError("fail_policy", "must be one of %s, or absent for the enforcer's default (got %q)",
			strings.Join(ratelimit.FailPolicies(), ", "), d.FailPolicy))
	case d.Axis == ratelimit.AxisQuarantine && d.FailPolicy != "":
		probs.add(fieldError("fail_policy", "not allowed on the quarantine axis; quarantine blocks outright and counts nothing (got %q)", d.FailPolicy))
	case d.Axis == ratelimit.AxisQuarantine:
		return "", d.FailClosed
	case d.FailClosed && d.FailPolicy != ratelimit.FailPolicyClosed && d.FailPolicy != "":
		probs.add(fieldError("fail_policy", "%q contradicts fail_closed: true, the older spelling of fail_policy closed; give fail_policy alone", d.FailPolicy))
	}
	policy := d.FailPolicyOf()
	return policy, policy == ratelimit.FailPolicyClosed
}

// misplaced reports a limit that is set on an axis that does not take it.
func misplaced(field string, limit *int, format string, args ...any) *FieldError {
	if limit == nil {
		return nil
	}
	return fieldError(field, format, args...)
}

// groupLimit checks an optional per-caller-type limit and its floor. The
// floor message carries the fix, because the floor is server configuration
// the user cannot see.
//
// The floors apply to windows of 60 s or less, and to the limit (the
// sustained rate), never to a token bucket's burst. A fixed window must
// admit the floor within each window (the reference's rule: a window
// shorter than a minute is not a way around it). A sliding window and a
// token bucket spread their limit over the window, so what must reach the
// floor is their sustained rate, limit per window scaled to a minute, and
// the message says that rate.
func groupLimit(field, callerType string, limit *int, floor, window int, algo string) *FieldError {
	if limit == nil {
		return nil
	}
	if fe := check(field, *limit, limitRule); fe != nil {
		return fe
	}
	if window > floorWindowSeconds {
		return nil
	}
	if algo == ratelimit.AlgorithmFixedWindow {
		if *limit >= floor {
			return nil
		}
		return &FieldError{Field: field, Message: fmt.Sprintf(
			"%s %d is below the %s floor of %d/min for windows <= %ds; raise it to at least %d or use a window longer than %ds",
			field, *limit, callerType, floor, floorWindowSeconds, floor, floorWindowSeconds)}
	}
	// limit per window >= floor per minute, in integers.
	if int64(*limit)*60 >= int64(floor)*int64(window) {
		return nil
	}
	least := (int64(floor)*int64(window) + 59) / 60
	return &FieldError{Field: field, Message: fmt.Sprintf(
		"%s %d per %ds is a sustained rate of %s/min, below the %s floor of %d/min for windows <= %ds; raise it to at least %d or use a window longer than %ds",
		field, *limit, window, perMinute(*limit, window), callerType, floor, floorWindowSeconds, least, floorWindowSeconds)}
}

// perMinute renders limit per window seconds as a rate per minute, to one
// decimal where it is not whole.
func perMinute(limit, window int) string {
	tenths := (int64(limit)*600 + int64(window)/2) / int64(window)
	if tenths%10 == 0 {
		return strconv.FormatInt(tenths/10, 10)
	}
	return strconv.FormatInt(tenths/10, 10) + "." + strconv.FormatInt(tenths%10, 10)
}

// members normalizes a server_group's member list. A server listed twice,
// in any two spellings ("aws-kb", "/aws-kb"), is refused naming both: the
// reference refuses it too, and storing the list shorter than it was sent
// would hide a typo (two entries meant to be two servers).
func members(probs *problems, d ratelimit.Definition) []string {
	if d.EntityType != ratelimit.EntityServerGroup {
		if len(d.Members) > 0 {
			probs.add(fieldError("members",
				"allowed only on target server_group definitions (entity_type is %q)", d.EntityType))
		}
		return nil
	}
	if len(d.Members) == 0 {
		probs.add(fieldError("members", "must list at least one server for a server_group"))
		return nil
	}
	out := make([]string, 0, len(d.Members))
	first := make(map[string]int, len(d.Members))
	for i, raw := range d.Members {
		field := fmt.Sprintf("members[%d]", i)
		name, fe := serverName(field, raw)
		if fe == nil {
			fe = spaceProblem(field, name)
		}
		if fe != nil {
			probs.add(fe)
			continue
		}
		if j, dup := first[name]; dup {
			probs.add(fieldError(field, "%q is server %q again (members[%d] is %q): list each server once", raw, name, j, d.Members[j]))
			continue
		}
		first[name] = i
		out = append(out, name)
	}
	return out
}

// scope derives the quarantine scope from the sentinel name. An explicit
// scope is accepted only when it agrees, so the stored scope can never
// contradict the name the limiter actually keys on.
func scope(axis, name, given string) (string, *FieldError) {
	if axis != ratelimit.AxisQuarantine {
		if given != "" {
			return "", fieldError("scope", "allowed only on the quarantine axis (got %q)", given)
		}
		return "", nil
	}
	var want string
	switch name {
	case ratelimit.GroupQuarantineCallers:
		want = "caller"
	case ratelimit.GroupQuarantineTargets:
		want = "target"
	default:
		// The name is already reported; nothing to derive the scope from.
		return given, nil
	}
	if given != "" && given != want {
		return "", fieldError("scope", "must be %q for %s (got %q)", want, name, given)
	}
	return want, nil
}

// maxRoutePaths bounds the patterns of one route definition.
const maxRoutePaths = 100

// routeLimits checks a route definition's limits: an exempt route has
// none, any other at least one; each at least 1. The floors do not apply:
// they keep a caller's overall limits usable, and a tier limits only the
// endpoints it names (a tier guarding a critical endpoint may well be 10/min on purpose).
func routeLimits(probs *problems, d ratelimit.Definition) {
	limits := []struct {
		field string
		v     *int
	}{{"max_requests", d.MaxRequests}, {"ip_max_requests", d.IPMaxRequests},
		{"user_max_requests", d.UserMaxRequests}, {"agent_max_requests", d.AgentMaxRequests},
		{"team_max_requests", d.TeamMaxRequests}}
	has := false
	for _, l := range limits {
		if l.v == nil {
			continue
		}
		has = true
		if d.Exempt {
			probs.add(fieldError(l.field, "not allowed on an exempt route: its paths are never limited (drop %s or exempt)", l.field))
			continue
		}
		probs.add(check(l.field, *l.v, limitRule))
	}
	if !has && !d.Exempt {
		probs.add(fieldError("max_requests",
			"a route needs at least one of max_requests (all callers), ip_max_requests, user_max_requests, agent_max_requests, team_max_requests, or exempt: true"))
	}
}

// routeFields normalizes a route definition's paths and methods; on any
// other definition they (and exempt) are refused.
func routeFields(probs *problems, d ratelimit.Definition) (paths, methods []string) {
	if d.EntityType != ratelimit.EntityRoute {
		if len(d.Paths) > 0 {
			probs.add(fieldError("paths", "allowed only on target route definitions (entity_type is %q)", d.EntityType))
		}
		if len(d.Methods) > 0 {
			probs.add(fieldError("methods", "allowed only on target route definitions (entity_type is %q)", d.EntityType))
		}
		if d.Exempt {
			probs.add(fieldError("exempt", "allowed only on target route definitions (entity_type is %q)", d.EntityType))
		}
		return nil, nil
	}
	switch {
	case len(d.Paths) == 0:
		probs.add(fieldError("paths", "must list at least one path pattern for a route (such as /auth/*)"))
	case len(d.Paths) > maxRoutePaths:
		probs.add(fieldError("paths", "must list at most %d patterns (got %d)", maxRoutePaths, len(d.Paths)))
	}
	first := map[string]int{}
	for i, raw := range d.Paths {
		field := fmt.Sprintf("paths[%d]", i)
		p, ne := ratelimit.RoutePattern(field, raw)
		if ne != nil {
			probs.add(&FieldError{Field: ne.Field, Message: ne.Message})
			continue
		}
		if j, dup := first[p]; dup {
			probs.add(fieldError(field, "%q is pattern %q again (paths[%d] is %q): list each pattern once", raw, p, j, d.Paths[j]))
			continue
		}
		first[p] = i
		paths = append(paths, p)
	}
	seen := map[string]int{}
	for i, raw := range d.Methods {
		field := fmt.Sprintf("methods[%d]", i)
		m, ne := ratelimit.RouteMethod(field, raw)
		if ne != nil {
			probs.add(&FieldError{Field: ne.Field, Message: ne.Message})
			continue
		}
		if j, dup := seen[m]; dup {
			probs.add(fieldError(field, "%s is listed twice (methods[%d]): list each method once", m, j))
			continue
		}
		seen[m] = i
		methods = append(methods, m)
	}
	return paths, methods
}

// resourceURIProblem refuses an mcp_tool name that names a resource by
// its URI (github:file:///x) unless the definition covers only the kinds
// of calls that name one: resource, and completion (MCP completes a
// resource template by its URI, cloudg://assets/{+ref}). A tool's or a
// prompt's name holds no '/'.
func resourceURIProblem(entityType, name string, kinds []string) *FieldError {
	if entityType != ratelimit.EntityMCPTool {
		return nil
	}
	uri, ok := ratelimit.ResourceURI(name)
	if !ok || (len(kinds) > 0 && !slices.ContainsFunc(kinds, func(k string) bool {
		return k != ratelimit.KindResource && k != ratelimit.KindCompletion
	})) {
		return nil
	}
	return fieldError("name", "the resource URI %q is allowed only with kinds resource and/or completion (got kinds %v): a tool's or prompt's name must not contain '/'", uri, kinds)
}

// isToolEntity reports whether entity type names tools or skills.
func isToolEntity(entityType string) bool {
	return entityType == ratelimit.EntityMCPTool || entityType == ratelimit.EntityA2ASkill
}

// toolFields normalizes a tool or skill definition's kinds (lower-case,
// each once) and scope (global, the default, as empty); on any other
// definition they are refused.
func toolFields(probs *problems, d ratelimit.Definition) (kinds []string, scope string) {
	if !isToolEntity(d.EntityType) {
		if len(d.Kinds) > 0 {
			probs.add(fieldError("kinds", "allowed only on target mcp_tool and a2a_skill definitions (entity_type is %q)", d.EntityType))
		}
		if d.ToolScope != "" {
			probs.add(fieldError("tool_scope", "allowed only on target mcp_tool and a2a_skill definitions (entity_type is %q)", d.EntityType))
		}
		return nil, ""
	}
	seen := map[string]int{}
	for i, raw := range d.Kinds {
		field := fmt.Sprintf("kinds[%d]", i)
		k := strings.ToLower(strings.TrimSpace(raw))
		if !slices.Contains(ratelimit.Kinds(), k) {
			probs.add(fieldError(field, "must be one of %s (got %q)", strings.Join(ratelimit.Kinds(), ", "), raw))
			continue
		}
		if j, dup := seen[k]; dup {
			probs.add(fieldError(field, "%s is listed twice (kinds[%d]): list each kind once", k, j))
			continue
		}
		seen[k] = i
		kinds = append(kinds, k)
	}
	scope = strings.ToLower(strings.TrimSpace(d.ToolScope))
	if scope != "" && !slices.Contains(ratelimit.ToolScopes(), scope) {
		probs.add(fieldError("tool_scope", "must be one of %s (got %q)", strings.Join(ratelimit.ToolScopes(), ", "), d.ToolScope))
	}
	if scope == ratelimit.ToolScopeGlobal {
		scope = "" // the default has one spelling, none
	}
	return kinds, scope
}
