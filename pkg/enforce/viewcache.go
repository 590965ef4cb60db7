package enforce

import (
	"hash/maphash"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce/plan"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// viewCacheSize is the number of slots of a snapshot's view cache: a
// caller and target pair per slot, so a few thousand hot pairs keep their
// views while a long tail of one-off calls only replaces each other.
const viewCacheSize = 4096

// maxViewKeyBytes bounds the fields of a call whose view is cached (a
// call with longer ones is decided uncached), so that the cache holds at
// most about viewCacheSize × (maxViewKeyBytes + its gates) whatever the
// callers send: a few megabytes.
const maxViewKeyBytes = 1024

// viewCache keeps, per snapshot, the view each call was decided from
// (callView), so that the next call of the same caller on the same
// target copies its gates rather than looking up memberships, walking
// the caller's groups and concatenating counter keys again: that was
// two thirds of the CPU of a decision decided in memory (a lease of
// pkg/enforce/lease). A view
// depends only on the snapshot and on the fields of viewKey; a new
// snapshot starts an empty cache, so a definition, membership or
// quarantine change is never served stale.
//
// It is direct-mapped: a call's key hashes to one slot, which holds the
// last view that hashed there. Memory is bounded by the slot count and
// the view of one call; a lookup takes no lock; a view, once published,
// is never written again.
type viewCache struct {
	seed  maphash.Seed
	slots [viewCacheSize]atomic.Pointer[callView]
}

// viewKey is every field of a call a view is built from, as sent: calls
// that differ only in spelling get views of their own, alike. A call
// with descriptors is not cached.
type viewKey struct {
	username, clientID, team string
	targetType, targetName   string
	tool, kind, method, path string
	ip                       netip.Addr
	isAdmin                  bool
}

// memberRef is a membership lookup's answer.
type memberRef struct {
	m  plan.Member
	ok bool
}

// callView is what a call's decision reads of the snapshot besides the
// counters: the target's name as definitions know it, whether the caller
// is an administrator, the memberships whose quarantine may deny the
// call, and its gates. The time a decision is made at enters only
// through quarantine expiry (plan.Member.quarantinedAt) and the gates'
// windows (gatesAt), both applied per call.
type callView struct {
	key viewKey

	// targetName is the call's target, normalized when targetKnown (a
	// known type and a valid name), else as sent.
	targetName  string
	targetKnown bool
	admin       bool
	// target is the target's membership; callers the user's, client's
	// and team's, in that order.
	target  memberRef
	callers [3]memberRef
	// network is the most specific network holding the client address
	// (netPrefix); ipNet the caller's own /32 (IPv6: its prefix) and
	// ipLock that network's membership, for an anonymous caller.
	network   memberRef
	netPrefix netip.Prefix
	ipNet     netip.Prefix
	ipLock    memberRef

	gates []Gate // sorted as take sorts them; never modified
	// counterGates are the gates as a counter store sees them, built once
	// for a cached view over a store that decides in memory (local.go);
	// never modified.
	counterGates []CounterGate
}

func newViewCache() *viewCache { return &viewCache{seed: maphash.MakeSeed()} }

func (vc *viewCache) slot(key *viewKey) *atomic.Pointer[callView] {
	return &vc.slots[maphash.Comparable(vc.seed, *key)%viewCacheSize]
}

// viewer builds and caches calls' views: client addresses keyed by
// ipv6Prefix, and (counterGates) each cached view with its counter gates
// built once, for a counter store that decides in memory
// (CounterCapabilities.Local) and reads them on every call.
type viewer struct {
	ipv6Prefix   int
	counterGates bool
}

// view returns the view of c on snap: the cached one, or one built now
// (and cached, for a call without descriptors).
func (vw viewer) view(snap *snapshot, c Call, ip netip.Addr, anonymous bool, routes []plan.RouteMatch, now time.Time) *callView {
	if c.Descriptors != nil || snap.Views == nil ||
		len(c.Username)+len(c.ClientID)+len(c.Team)+len(c.TargetType)+len(c.TargetName)+len(c.Tool)+len(c.Kind)+
			len(c.Method)+len(c.Path) > maxViewKeyBytes {
		return vw.build(snap, c, ip, anonymous, routes, now, nil)
	}
	key := viewKey{username: c.Username, clientID: c.ClientID, team: c.Team, targetType: c.TargetType,
		targetName: c.TargetName, tool: c.Tool, kind: c.Kind, method: c.Method, path: c.Path, ip: ip, isAdmin: c.IsAdmin}
	slot := snap.Views.slot(&key)
	if v := slot.Load(); v != nil && v.key == key {
		return v
	}
	v := vw.build(snap, c, ip, anonymous, routes, now, nil)
	v.key = key
	if vw.counterGates {
		v.counterGates = make([]CounterGate, len(v.gates))
		for i, g := range v.gates {
			v.counterGates[i] = counterGateOf(g)
		}
	}
	slot.Store(v)
	return v
}

// build looks up what c's decision needs in snap and builds its gates.
// log is nil but for Explain (plan.Gates).
func (vw viewer) build(snap *snapshot, c Call, ip netip.Addr, anonymous bool, routes []plan.RouteMatch, now time.Time, log *plan.Log) *callView {
	v := &callView{}
	// A target name that is not valid (too long, control characters) can
	// match no target definition or quarantine, but the caller's own
	// quarantine and limits still apply: an odd path must not be a way
	// around them. Its raw form still separates caller_target buckets.
	targetName, typeKnown, nameErr := ratelimit.NormalizeTargetName(c.TargetType, c.TargetName)
	v.targetKnown = typeKnown && nameErr == nil
	if !v.targetKnown {
		targetName = c.TargetName
	}
	v.targetName = targetName
	callerType, identity := ratelimit.SubjectUser, c.Username
	switch {
	case c.ClientID != "":
		callerType, identity = "agent", c.ClientID
	case anonymous:
		callerType, identity = CallerIP, clientip.Key(ip, vw.ipv6Prefix)
	}
	// The most specific network holding the client address: its
	// quarantine denies every call from it, its groups limit anonymous
	// callers.
	v.netPrefix, v.network.m, v.network.ok = snap.Networks.Lookup(ip)
	userKey, clientKey, teamKey := "", "", ""
	if c.Username != "" {
		userKey = ratelimit.MembershipID(ratelimit.SubjectUser, c.Username)
	}
	if c.ClientID != "" {
		clientKey = ratelimit.MembershipID(ratelimit.SubjectClient, c.ClientID)
	}
	if team := strings.TrimSpace(c.Team); team != "" {
		teamKey = ratelimit.MembershipID(ratelimit.SubjectTeam, team)
	}
	v.admin = c.IsAdmin || snap.Admins[userKey] || snap.Admins[clientKey]
	if v.targetKnown && c.TargetType != "" {
		v.target.m, v.target.ok = snap.Members.Get(targetSubject(c.TargetType, targetName))
	}
	for i, k := range []string{userKey, clientKey, teamKey} {
		if k != "" {
			v.callers[i].m, v.callers[i].ok = snap.Members.Get(k)
		}
	}
	if anonymous {
		if v.ipNet = clientip.Network(ip, vw.ipv6Prefix); v.ipNet.IsValid() {
			v.ipLock.m, v.ipLock.ok = snap.Members.Get(ratelimit.MembershipID(ratelimit.SubjectNetwork, v.ipNet.String()))
		}
	}

	var netGroups *plan.Member
	if anonymous && v.network.ok {
		netGroups = &v.network.m
	}
	who := plan.Caller{Agent: callerType == "agent", UserKey: userKey, ClientKey: clientKey, TeamKey: teamKey}
	if identity != "" { // none: a descriptor call without one
		who.Caller = callerType + ":" + identity
	}
	if ip.IsValid() {
		who.IP = CallerIP + ":" + clientip.Key(ip, vw.ipv6Prefix)
	}
	if teamKey != "" {
		who.Team = CallerTeam + ":" + strings.TrimSpace(c.Team)
	}
	if netGroups != nil {
		who.NetworkKey = ratelimit.MembershipID(ratelimit.SubjectNetwork, v.netPrefix.String())
	}
	var gates []Gate
	if (c.TargetType != "" || c.Descriptors != nil || log.CallerOnly()) && (c.Descriptors == nil || !c.Descriptors.DescriptorsOnly) {
		// A call with only a path meets the route definitions alone.
		t := plan.Target{Type: c.TargetType, Name: targetName, Tool: c.Tool, Kind: c.Kind}
		gates = plan.Gates(&snap.Index, snap.Members, t, who, netGroups, v.admin, now, log)
	}
	if log != nil {
		log.NoteGroups(snap.Members, who, netGroups)
	}
	if len(routes) > 0 {
		gates = append(gates, plan.RouteGates(routes, callerType, identity, ipKeyOf(c, vw.ipv6Prefix), strings.TrimPrefix(who.Team, CallerTeam+":"), v.admin, now)...)
	}
	if !v.admin {
		// Administrators are never limited by descriptors either: an
		// Envoy request carries no target to protect but its descriptors.
		gates = plan.DescriptorGates(gates, &snap.Index, c.Descriptors, now)
	}
	sortGates(gates)
	v.gates = gates
	return v
}

// gatesAt copies the view's gates for one call at now, each gate's Reset
// the end of the window now is in (as newGate sets it).
func (v *callView) gatesAt(now time.Time) []Gate {
	if len(v.gates) == 0 {
		return nil
	}
	gates := make([]Gate, len(v.gates))
	copy(gates, v.gates)
	unix := now.Unix()
	for i := range gates {
		if w := int64(gates[i].WindowSeconds); w > 0 {
			gates[i].Reset = time.Unix((unix/w+1)*w, 0)
		}
	}
	return gates
}

// ipLockout is the escalation lockout of the view's anonymous caller, if
// it applies at now: its network subject's membership (a lockout kept
// apart, or a network of exactly that prefix an operator also gave
// groups).
func (v *callView) ipLockout(now time.Time) (plan.Member, bool) {
	if !v.ipNet.IsValid() {
		return plan.Member{}, false
	}
	if v.network.ok && v.netPrefix == v.ipNet && v.network.m.Lockout && v.network.m.QuarantinedAt(now) {
		return v.network.m, true
	}
	if v.ipLock.ok && v.ipLock.m.Lockout && v.ipLock.m.QuarantinedAt(now) {
		return v.ipLock.m, true
	}
	return plan.Member{}, false
}

// ipKeyOf is the client address as route gates and observers key it:
// IPv4 by the address, IPv6 by its prefix; empty when the call has none.
func ipKeyOf(c Call, ipv6Prefix int) string {
	ip := clientAddr(c.ClientIP)
	if !ip.IsValid() {
		return ""
	}
	return clientip.Key(ip, ipv6Prefix)
}
