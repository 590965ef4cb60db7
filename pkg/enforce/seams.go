package enforce

import (
	"fmt"

	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/enforce/counterstore"
	"github.com/rlctl/rlctl/pkg/enforce/source"
)

// The seams of the enforcement core. pkg/enforce owns these interfaces and
// imports no backend: a counter store (pkg/enforce/postgres,
// pkg/enforce/redis, and pkg/enforce/memory for one process) counts, a
// definitions source (pkg/enforce/postgres's LISTEN/NOTIFY source,
// pkg/enforce/filesource's YAML file) says what to count. Every counter
// store passes the exported conformance suite in pkg/enforce/enforcetest.
// docs/design/enforcement.md ("Seams") has the picture and says where a new algorithm, store or
// protocol goes.
//
// Every method of a seam is mandatory: there are no optional
// side-interfaces found by type assertion. What an implementation truly
// cannot do it declares (CounterStore.Capabilities, Source.Capabilities)
// and answers from the method with an error wrapping ErrNotImplemented.
// The core needs no optional capability; each feature built beside it
// (the lease layer, the failed-credential throttle, escalation) refuses,
// in its constructor, a store or source that lacks one it needs, naming
// it, so nothing is silently off. The conformance suite checks each
// store's declarations against its methods.

// Algorithm names how a gate counts: pkg/enforce/algorithm's Name, which
// lives below the core because counter keys (pkg/enforce/counterkey) carry
// it too. The alias and the constants below keep gateways' code and the
// stores' unchanged.
type Algorithm = algorithm.Name

// The algorithms (pkg/enforce/algorithm documents each).
const (
	AlgorithmFixedWindow   = algorithm.FixedWindow
	AlgorithmSlidingWindow = algorithm.SlidingWindow
	AlgorithmTokenBucket   = algorithm.TokenBucket
)

// The counter-store seam lives in pkg/enforce/counterstore, below the
// core, so that the core's own parts (the batcher) can use it without
// importing the core. These names keep gateways' and stores' code
// unchanged.
type (
	// CounterGate is one counter a take checks (counterstore.CounterGate).
	CounterGate = counterstore.CounterGate
	// TakeRequest is one call for a counter store to decide.
	TakeRequest = counterstore.TakeRequest
	// TakeResult is what a counter store decided for one call.
	TakeResult = counterstore.TakeResult
	// GateState is a gate's counter after the decision.
	GateState = counterstore.GateState
	// CounterStore counts (counterstore.CounterStore).
	CounterStore = counterstore.CounterStore
	// CounterCapabilities are what a counter store declares it can do.
	CounterCapabilities = counterstore.CounterCapabilities
	// TakeFunc decides one call through the Enforcer's batcher.
	TakeFunc = counterstore.TakeFunc
	// Return is capacity a counter store gives back.
	Return = counterstore.Return
	// Fallback decides the degrade-policy gates while the store is down.
	Fallback = counterstore.Fallback
)

// Errors of the seams (counterstore's, the same values).
var (
	ErrNotImplemented = counterstore.ErrNotImplemented
	ErrNotApplied     = counterstore.ErrNotApplied
	ErrTimedOut       = counterstore.ErrTimedOut
	ErrOverloaded     = counterstore.ErrOverloaded
	ErrOutcomeUnknown = counterstore.ErrOutcomeUnknown
)

// backendName is the backend label of counters: its BackendName, or its
// Go type when it names none.
func backendName(counters CounterStore) string {
	if n := counters.BackendName(); n != "" {
		return n
	}
	return fmt.Sprintf("%T", counters)
}

// The definitions-source seam lives in pkg/enforce/source, below the
// core, so that the snapshot's loader (internal/snapshot) can read a
// source without importing the core. These names keep gateways' and
// sources' code unchanged.
type (
	// State is everything a definitions source knows (source.State).
	State = source.State
	// Change is one change notice (source.Change).
	Change = source.Change
	// Rows is what a source read for a set of changes (source.Rows).
	Rows = source.Rows
	// TablesRequest names what a reload reads (source.TablesRequest).
	TablesRequest = source.TablesRequest
	// Source says what to count (source.Source).
	Source = source.Source
	// SourceCapabilities are what a source declares it can do
	// (source.SourceCapabilities).
	SourceCapabilities = source.SourceCapabilities
	// Lockout is one escalation lockout (source.Lockout).
	Lockout = source.Lockout
)

// Tables a Change names (source.Table*).
const (
	TableDefinitions  = source.TableDefinitions
	TableMemberships  = source.TableMemberships
	TableAdmins       = source.TableAdmins
	TableSettings     = source.TableSettings
	TableAuthLockouts = source.TableAuthLockouts
)

// SelectRows picks from st what req names (source.SelectRows).
func SelectRows(st State, req TablesRequest) Rows { return source.SelectRows(st, req) }
