// Package counteradmin is the seam for listing and resetting the live
// counters of a counter store by caller, target or definition: what rlapi's
// counters API and `rlctl counters get/reset` use, whichever store the
// decisions count in. The enforcement core does not use it; the counter
// stores implement it beside enforce.CounterStore, and
// enforcetest.TestCounterAdmin holds each to it.
package counteradmin

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/counterkey"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
)

// Admin lists and resets the live counters of a counter store by
// caller, by target or by definition: what rlapi's counters API (GET and
// DELETE /api/rate-limit-counters) and `rlctl counters get/reset` read and
// reset, whichever store the decisions count in. Every counter store that
// rlapi can count in implements it (pkg/enforce/postgres, pkg/enforce/redis).
//
// Selection reads the parts of each stored key as counterkey.Parse reads
// them (Selector.Selects), so a store indexes or filters on the
// same meaning: keys already stored stay selectable.
type Admin interface {
	// BackendName names the store ("postgres", "redis", "redis-cluster"),
	// as CounterStore backends do for the metrics.
	BackendName() string
	// Counters lists the live counters sel selects (count above zero; a
	// token bucket that is not full), in key byte order then window, at
	// most limit of them (0: all the store can list). Truncated says
	// that more matched, or that the store stopped looking before it saw
	// every counter (a bounded scan).
	Counters(ctx context.Context, sel Selector, now time.Time, limit int) (Page, error)
	// ResetCounters sets the live counters sel selects back to zero (a
	// token bucket full) and returns them as they were, in key byte order
	// then window. Truncated says the store stopped looking before it saw
	// every counter: some selected counters may remain.
	ResetCounters(ctx context.Context, sel Selector, now time.Time) (Page, error)
}

// Selector picks live counters. Exactly one of Caller, Target and
// Definition is set, in canonical form.
type Selector struct {
	// Caller selects the keys whose caller part (counterkey.Key.Caller) is
	// this: user:<name>, agent:<client id>, ip:<address> (its caller and
	// caller_target buckets and its shadow and per-ip counters), or
	// team:<name> (a team's per-team and route buckets).
	Caller string
	// Target selects the keys that count calls to this target
	// (counterkey.Key.OnTarget): <entity_type>:<name>.
	Target string
	// Definition selects the keys that name this definition id (target,
	// shadow and per counters), and the Shared buckets it is checked
	// against.
	Definition string
	// Shared, with Definition, are the buckets the definition shares with
	// the other enforce definitions of its axis and window: one per
	// caller it applies to. Whoever builds the selector resolves them
	// (rlapi, from the definition and its group's members); the stores
	// only match them.
	Shared SharedBuckets
}

// SharedBuckets are caller or caller_target buckets of one window and
// algorithm, of the callers listed.
type SharedBuckets struct {
	// Kind is counterkey.KindCaller or counterkey.KindCallerTarget (empty: none).
	Kind          counterkey.Kind
	WindowSeconds int
	// Algorithm is the buckets' algorithm (empty: the fixed window).
	Algorithm algorithm.Name
	// Callers are user:<name> and agent:<client id> callers.
	Callers []string
}

// Check reports a selector that names not exactly one subject.
func (s Selector) Check() error {
	set := 0
	for _, v := range []string{s.Caller, s.Target, s.Definition} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		return errors.New("counter selector: name exactly one caller, target or definition")
	}
	if s.Definition == "" && (s.Shared.Kind != "" || len(s.Shared.Callers) > 0) {
		return errors.New("counter selector: shared buckets go with a definition")
	}
	return nil
}

// Selects reports whether the counter k is one s picks.
func (s Selector) Selects(k counterkey.Key) bool {
	switch {
	case s.Caller != "":
		return k.Caller == s.Caller
	case s.Target != "":
		return k.OnTarget() == s.Target
	case s.Definition != "":
		if k.DefinitionID == s.Definition {
			return true
		}
		b := s.Shared
		return b.Kind != "" && k.Kind == b.Kind && k.WindowSeconds == b.WindowSeconds &&
			counterkey.KeyAlgorithm(k.Algorithm) == counterkey.KeyAlgorithm(b.Algorithm) && slices.Contains(b.Callers, k.Caller)
	}
	return false
}

// SelectsKey is Selects on a stored key; a key counterkey.Parse refuses is
// never selected.
func (s Selector) SelectsKey(key string) bool {
	k, err := counterkey.Parse(key)
	return err == nil && s.Selects(k)
}

// String is the selector as the audit log files it: caller=user:alice.
func (s Selector) String() string {
	switch {
	case s.Caller != "":
		return "caller=" + s.Caller
	case s.Target != "":
		return "target=" + s.Target
	}
	return "definition=" + s.Definition
}

// Counter is one stored counter: a key's count in one window, or a
// token bucket's state.
type Counter struct {
	// Key is the counter key as gateways built it (counterkey.Key.String).
	Key string
	// Algorithm is the counter's algorithm as the store keeps it.
	Algorithm algorithm.Name
	// WindowIndex is floor(window start / window) for the windows, 0 for
	// a token bucket (one counter per key).
	WindowIndex int64
	// State is the count (the windows) or the theoretical arrival time
	// (a token bucket).
	State enforce.GateState
	// ExpiresAt is when the store drops the counter.
	ExpiresAt time.Time
}

// Page is what a Admin lists or resets.
type Page struct {
	Counters []Counter
	// Truncated: more counters matched than were asked for, or the
	// store stopped before it had looked at every counter.
	Truncated bool
}

// Sort puts counters in key byte order, then window.
func Sort(c []Counter) {
	slices.SortFunc(c, func(a, b Counter) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.WindowIndex, b.WindowIndex))
	})
}
