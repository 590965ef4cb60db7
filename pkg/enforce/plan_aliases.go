package enforce

import "github.com/rlctl/rlctl/pkg/enforce/plan"

// Which limits apply to a call (the gates, their counter keys and why
// each applies) is pkg/enforce/plan's. The core builds a call's gates
// there once per view and takes them through the counter store. These
// aliases keep the names gateways use.

// Gate is one limit a call was checked against (plan.Gate).
type Gate = plan.Gate

// LeaseMode is a gate's definition's say in leases (plan.LeaseMode),
// carried on CounterGate.Lease.
type LeaseMode = plan.LeaseMode

// The lease modes (plan documents each).
const (
	LeaseAuto   = plan.LeaseAuto
	LeaseAlways = plan.LeaseAlways
	LeaseNever  = plan.LeaseNever
)

// MatchedEveryone is Gate.MatchedBy of a definition for everyone.
const MatchedEveryone = plan.MatchedEveryone

// Dimensions a route gate counts by (Gate.Dimension).
const (
	DimensionAll   = plan.DimensionAll
	DimensionIP    = plan.DimensionIP
	DimensionUser  = plan.DimensionUser
	DimensionAgent = plan.DimensionAgent
	DimensionTeam  = plan.DimensionTeam
)

// DescriptorRequest is the domain and descriptors of a call
// (plan.DescriptorRequest).
type DescriptorRequest = plan.DescriptorRequest

// Descriptor is one descriptor of a call (plan.Descriptor).
type Descriptor = plan.Descriptor

// DescriptorLimit is a per-request limit override (plan.DescriptorLimit).
type DescriptorLimit = plan.DescriptorLimit

// DescriptorMatch is what a descriptor of a call matched, reported by
// MatchDescriptors (plan.DescriptorMatch).
type DescriptorMatch = plan.DescriptorMatch

// MatchDescriptors reports, per descriptor of c, what it matches in the
// current snapshot (for the adapters' answers and metrics: unlimited
// descriptors, unknown domains). It consumes nothing.
func (e *Enforcer) MatchDescriptors(r *DescriptorRequest) []DescriptorMatch {
	snap := e.snaps.Current()
	if r == nil {
		return nil
	}
	if snap == nil {
		return make([]DescriptorMatch, len(r.Descriptors))
	}
	m, _ := plan.DescriptorMatches(&snap.Index, r)
	return m
}

// KnownDomain reports whether the current snapshot has descriptor
// definitions of domain (enabled ones).
func (e *Enforcer) KnownDomain(domain string) bool {
	snap := e.snaps.Current()
	return snap != nil && snap.KnownDomain(domain)
}

// RoutePath is the path route definitions are matched against: the
// request URI's path normalized (plan.RoutePath says how). Normalizing it
// again changes nothing.
func RoutePath(uri string) string { return plan.RoutePath(uri) }

// PathSegments splits a request URI's path into its normalized segments,
// as route definitions see it (plan.PathSegments).
func PathSegments(uri string) (raw string, segments []string) { return plan.PathSegments(uri) }
