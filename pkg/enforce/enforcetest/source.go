package enforcetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Static is an in-memory enforce.Source: it serves the State it holds,
// and Set replaces it and notifies every watcher (Change{All: true}).
// Definitions are served as given: give each its ID (d.Key()).
type Static struct {
	mu       sync.Mutex
	state    enforce.State
	watchers map[int]func(enforce.Change)
	next     int
}

// StaticSource returns a Source serving st.
func StaticSource(st enforce.State) *Static {
	return &Static{state: clone(st), watchers: map[int]func(enforce.Change){}}
}

func clone(st enforce.State) enforce.State {
	st.Definitions = slices.Clone(st.Definitions)
	st.Memberships = slices.Clone(st.Memberships)
	st.Admins = slices.Clone(st.Admins)
	return st
}

// Set replaces the state and notifies the watchers.
func (s *Static) Set(st enforce.State) {
	s.mu.Lock()
	s.state = clone(st)
	notify := make([]func(enforce.Change), 0, len(s.watchers))
	for _, w := range s.watchers {
		notify = append(notify, w)
	}
	s.mu.Unlock()
	for _, n := range notify {
		n(enforce.Change{All: true})
	}
}

// Load returns the state.
func (s *Static) Load(ctx context.Context) (enforce.State, error) {
	if err := ctx.Err(); err != nil {
		return enforce.State{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return clone(s.state), nil
}

// LoadTables returns what req names of the state (enforce.SelectRows).
func (s *Static) LoadTables(ctx context.Context, req enforce.TablesRequest) (enforce.Rows, error) {
	if err := ctx.Err(); err != nil {
		return enforce.Rows{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return enforce.SelectRows(s.state, req), nil
}

// Capabilities: a Static source writes no lockouts and counts no
// quarantines (the Enforcer counts its snapshot).
func (s *Static) Capabilities() enforce.SourceCapabilities { return enforce.SourceCapabilities{} }

// LockOut returns an error wrapping enforce.ErrNotImplemented.
func (s *Static) LockOut(context.Context, enforce.Lockout) (bool, error) {
	return false, fmt.Errorf("enforcetest: static source: write a lockout: %w", enforce.ErrNotImplemented)
}

// CountQuarantined returns an error wrapping enforce.ErrNotImplemented.
func (s *Static) CountQuarantined(context.Context, time.Time) (int64, int64, error) {
	return 0, 0, fmt.Errorf("enforcetest: static source: count quarantines: %w", enforce.ErrNotImplemented)
}

// Watch reports ready at once, then delivers a Change{All: true} for each
// Set until ctx ends.
func (s *Static) Watch(ctx context.Context, ready func(), notify func(enforce.Change)) error {
	s.mu.Lock()
	id := s.next
	s.next++
	s.watchers[id] = notify
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers, id)
		s.mu.Unlock()
	}()
	ready()
	<-ctx.Done()
	return ctx.Err()
}

var _ enforce.Source = (*Static)(nil)

// Quarantine sentinels as a database holds them from its first migration,
// for a State that should behave like a fresh rlapi: both enabled.
func Sentinels() []ratelimit.Definition {
	return []ratelimit.Definition{
		{ID: ratelimit.SentinelCallers, Axis: ratelimit.AxisQuarantine, EntityType: ratelimit.EntityGroup,
			Name: ratelimit.GroupQuarantineCallers, WindowSeconds: 1, Scope: "caller", Enabled: true, Mode: ratelimit.ModeEnforce},
		{ID: ratelimit.SentinelTargets, Axis: ratelimit.AxisQuarantine, EntityType: ratelimit.EntityGroup,
			Name: ratelimit.GroupQuarantineTargets, WindowSeconds: 1, Scope: "target", Enabled: true, Mode: ratelimit.ModeEnforce},
	}
}
