package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

const definitionColumns = `id, axis, entity_type, name, window_seconds, max_requests, user_max_requests,
	agent_max_requests, members, fail_closed, enabled, mode, description, created_at, updated_at,
	updated_by, version, algorithm, burst, user_burst, agent_burst, everyone, per, descriptor,
	methods, paths, exempt, ip_max_requests, ip_burst, kinds, tool_scope, team_max_requests, team_burst, lease, counts_toward_lockout, fail_policy, override`

func scanDefinition(row pgx.Row) (ratelimit.Definition, error) {
	var (
		d                    ratelimit.Definition
		maxR, userR, agentR  *int32
		burst, userB, agentB *int32
		descriptor           []byte
		ipR, ipB             *int32
		teamR, teamB         *int32
		toolScope            *string
	)
	err := row.Scan(&d.ID, &d.Axis, &d.EntityType, &d.Name, &d.WindowSeconds, &maxR, &userR, &agentR,
		&d.Members, &d.FailClosed, &d.Enabled, &d.Mode, &d.Description, &d.CreatedAt, &d.UpdatedAt,
		&d.UpdatedBy, &d.Version, &d.Algorithm, &burst, &userB, &agentB, &d.Everyone, &d.Per, &descriptor,
		&d.Methods, &d.Paths, &d.Exempt, &ipR, &ipB, &d.Kinds, &toolScope, &teamR, &teamB, &d.Lease, &d.CountsTowardLockout, &d.FailPolicy, &d.Override)
	if err != nil {
		return d, err
	}
	if err := scanDescriptor(&d, descriptor); err != nil {
		return d, err
	}
	d.MaxRequests, d.UserMaxRequests, d.AgentMaxRequests = intPtr(maxR), intPtr(userR), intPtr(agentR)
	d.Burst, d.UserBurst, d.AgentBurst = intPtr(burst), intPtr(userB), intPtr(agentB)
	d.IPMaxRequests, d.IPBurst = intPtr(ipR), intPtr(ipB)
	d.TeamMaxRequests, d.TeamBurst = intPtr(teamR), intPtr(teamB)
	if toolScope != nil {
		d.ToolScope = *toolScope
	}
	d.Algorithm = algorithmRead(d.Algorithm)
	d.Per = perRead(d.Per)
	d.Lease = leaseRead(d.Lease)
	if d.Axis == ratelimit.AxisQuarantine {
		d.Scope = strings.TrimPrefix(d.Name, "quarantine-")
		d.Scope = strings.TrimSuffix(d.Scope, "s")
	}
	return d, nil
}

// algorithmRead is a stored algorithm as a Definition carries it: the
// default, fixed_window, as "" (every definition stored before algorithms
// existed reads, encodes and exports as it did).
func algorithmRead(a string) string {
	if a == ratelimit.AlgorithmFixedWindow {
		return ""
	}
	return a
}

// perRead is a stored per as a Definition carries it: the default,
// caller, as "" (as algorithmRead).
func perRead(p string) string {
	if p == ratelimit.PerCaller {
		return ""
	}
	return p
}

// leaseRead is a stored lease as a Definition carries it: the default,
// auto, as "" (as algorithmRead).
func leaseRead(l string) string {
	if l == ratelimit.LeaseAuto {
		return ""
	}
	return l
}

// leaseColumn is what the lease column stores for d.
func leaseColumn(d ratelimit.Definition) string { return d.LeaseOrDefault() }

// failPolicyColumn is what the fail_policy column stores for d: its own
// policy, closed for one that says fail_closed alone (the older spelling).
// The quarantine sentinels take none (their fail_closed is kept as given).
func failPolicyColumn(d ratelimit.Definition) string {
	if d.Axis == ratelimit.AxisQuarantine {
		return d.FailPolicy
	}
	return d.FailPolicyOf()
}

// failClosedColumn is what the fail_closed column stores for d: in step
// with fail_policy (migration 025), for the replicas of the version before
// it that read fail_closed alone.
func failClosedColumn(d ratelimit.Definition) bool {
	if d.Axis == ratelimit.AxisQuarantine {
		return d.FailClosed
	}
	return failPolicyColumn(d) == ratelimit.FailPolicyClosed
}

// perColumn is what the per column stores for d.
func perColumn(d ratelimit.Definition) string { return d.PerOrDefault() }

// algorithmColumn is what the algorithm column stores for d.
func algorithmColumn(d ratelimit.Definition) string { return d.AlgorithmOrDefault() }

func intPtr(v *int32) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

// GetDefinition reads one definition.
func (q *Queries) GetDefinition(ctx context.Context, id string) (ratelimit.Definition, error) {
	d, err := scanDefinition(q.db.QueryRow(ctx, `select `+definitionColumns+` from rl_definitions where id = $1`, id))
	if err != nil {
		return d, fmt.Errorf("get definition %q: %w", id, interpretError(err))
	}
	return d, nil
}

// DefinitionFilter narrows ListDefinitions. Empty fields match everything.
type DefinitionFilter struct {
	Axis       string
	EntityType string
	Name       string
	Enabled    *bool
	// Group matches group-axis definitions named Group and server groups
	// listing Group as a member.
	Group string
	// After is the paging cursor: only ids greater than it.
	After string
	// Limit caps the rows (0: no cap).
	Limit int
}

// EachDefinition streams the definitions matching f in id order, calling fn
// for each without holding them all in memory.
func (q *Queries) EachDefinition(ctx context.Context, f DefinitionFilter, fn func(ratelimit.Definition) error) error {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Axis != "" {
		add("axis = $%d", f.Axis)
	}
	if f.EntityType != "" {
		add("entity_type = $%d", f.EntityType)
	}
	if f.Name != "" {
		add("name = $%d", f.Name)
	}
	if f.Enabled != nil {
		add("enabled = $%d", *f.Enabled)
	}
	if f.Group != "" {
		add("((entity_type = 'group' and name = $%[1]d) or members @> array[$%[1]d::text])", f.Group)
	}
	if f.After != "" {
		add("id > $%d", f.After)
	}
	sql := `select ` + definitionColumns + ` from rl_definitions`
	if len(where) > 0 {
		sql += ` where ` + strings.Join(where, " and ")
	}
	sql += ` order by id`
	if f.Limit > 0 {
		sql += fmt.Sprintf(` limit %d`, f.Limit)
	}
	rows, err := q.db.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("list definitions: %w", interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanDefinition(rows)
		if err != nil {
			return fmt.Errorf("list definitions: %w", interpretError(err))
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list definitions: %w", interpretError(err))
	}
	return nil
}

// ListDefinitions returns the definitions matching f in id order.
func (q *Queries) ListDefinitions(ctx context.Context, f DefinitionFilter) ([]ratelimit.Definition, error) {
	var out []ratelimit.Definition
	err := q.EachDefinition(ctx, f, func(d ratelimit.Definition) error {
		out = append(out, d)
		return nil
	})
	return out, err
}

// Write describes a versioned write: who makes it, and the version it
// expects (0: any).
type Write struct {
	Actor     string
	IfVersion int64
}

// PutResult is the outcome of an upsert.
type PutResult[T any] struct {
	After  T
	Before *T // nil when created
	// Unchanged reports a write identical to the stored row: nothing was
	// written and the version stayed.
	Unchanged bool
}

// Created reports whether the upsert created the row.
func (r PutResult[T]) Created() bool { return r.Before == nil }

// PutDefinition creates or replaces d (already validated and normalized).
// With w.IfVersion set, the write happens only when the stored version
// matches: ErrPreconditionFailed otherwise, or when there is no row to match.
// Call it inside a transaction (Store.InTx) so the advisory lock, the read of
// the old row and the write are atomic.
func (q *Queries) PutDefinition(ctx context.Context, d ratelimit.Definition, w Write) (res PutResult[ratelimit.Definition], err error) {
	id := d.Key()
	if err := q.lock(ctx, "definition", id); err != nil {
		return res, fmt.Errorf("put definition %q: %w", id, err)
	}
	if old, err := q.GetDefinition(ctx, id); err == nil {
		res.Before = &old
	} else if !isNotFound(err) {
		return res, err
	}
	if err := checkVersion(w.IfVersion, res.Before != nil, versionOf(res.Before)); err != nil {
		return res, fmt.Errorf("put definition %q: %w", id, err)
	}
	if res.Before != nil && sameDefinition(*res.Before, d) {
		res.After, res.Unchanged = *res.Before, true
		return res, nil
	}
	var members []string
	if d.EntityType == ratelimit.EntityServerGroup {
		members = d.Members
	}
	mode := d.Mode
	if mode == "" {
		mode = ratelimit.ModeEnforce
	}
	res.After, err = scanDefinition(q.db.QueryRow(ctx, `
		insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests,
			user_max_requests, agent_max_requests, members, fail_closed, enabled, mode, description, updated_by,
			algorithm, burst, user_burst, agent_burst, everyone, per, descriptor,
			methods, paths, exempt, ip_max_requests, ip_burst, kinds, tool_scope, team_max_requests, team_burst, lease, counts_toward_lockout, fail_policy, override)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34)
		on conflict (id) do update set
			max_requests = excluded.max_requests,
			user_max_requests = excluded.user_max_requests,
			agent_max_requests = excluded.agent_max_requests,
			algorithm = excluded.algorithm,
			burst = excluded.burst,
			user_burst = excluded.user_burst,
			agent_burst = excluded.agent_burst,
			everyone = excluded.everyone,
			per = excluded.per,
			descriptor = excluded.descriptor,
			methods = excluded.methods,
			paths = excluded.paths,
			exempt = excluded.exempt,
			ip_max_requests = excluded.ip_max_requests,
			ip_burst = excluded.ip_burst,
			kinds = excluded.kinds,
			tool_scope = excluded.tool_scope,
			team_max_requests = excluded.team_max_requests,
			team_burst = excluded.team_burst,
			lease = excluded.lease,
			counts_toward_lockout = excluded.counts_toward_lockout,
			members = excluded.members,
			fail_closed = excluded.fail_closed,
			fail_policy = excluded.fail_policy,
			override = excluded.override,
			enabled = excluded.enabled,
			mode = excluded.mode,
			description = excluded.description,
			updated_by = excluded.updated_by,
			updated_at = now(),
			version = rl_definitions.version + 1
		returning `+definitionColumns,
		id, d.Axis, d.EntityType, d.Name, d.WindowSeconds, d.MaxRequests, d.UserMaxRequests,
		d.AgentMaxRequests, members, failClosedColumn(d), d.Enabled, mode, d.Description, w.Actor,
		algorithmColumn(d), d.Burst, d.UserBurst, d.AgentBurst, d.Everyone, perColumn(d), descriptorColumn(d),
		routeMethods(d), routePaths(d), d.Exempt, d.IPMaxRequests, d.IPBurst, toolKinds(d), toolScope(d),
		d.TeamMaxRequests, d.TeamBurst, leaseColumn(d), d.CountsTowardLockout, failPolicyColumn(d), d.Overrides()))
	if err != nil {
		return res, fmt.Errorf("put definition %q: %w", id, interpretError(err))
	}
	return res, nil
}

// sameDefinition compares the fields a PUT can change.
func sameDefinition(a, b ratelimit.Definition) bool {
	modeB := b.Mode
	if modeB == "" {
		modeB = ratelimit.ModeEnforce
	}
	return equalInt(a.MaxRequests, b.MaxRequests) && equalInt(a.UserMaxRequests, b.UserMaxRequests) &&
		equalInt(a.AgentMaxRequests, b.AgentMaxRequests) && slices.Equal(a.Members, b.Members) &&
		a.FailClosed == failClosedColumn(b) && a.FailPolicy == failPolicyColumn(b) && a.Enabled == b.Enabled && a.Mode == modeB && a.Description == b.Description &&
		a.AlgorithmOrDefault() == b.AlgorithmOrDefault() && equalInt(a.Burst, b.Burst) &&
		equalInt(a.UserBurst, b.UserBurst) && equalInt(a.AgentBurst, b.AgentBurst) &&
		a.Everyone == b.Everyone && a.PerOrDefault() == b.PerOrDefault() && a.LeaseOrDefault() == b.LeaseOrDefault() &&
		equalBool(a.CountsTowardLockout, b.CountsTowardLockout) && a.Override == b.Overrides() &&
		ratelimit.EqualDescriptorFields(a.DescriptorFields, b.DescriptorFields) && sameRoute(a, b)
}

// sameRoute compares the route fields (entity_type route).
func sameRoute(a, b ratelimit.Definition) bool {
	return slices.Equal(a.Methods, b.Methods) && slices.Equal(a.Paths, b.Paths) && a.Exempt == b.Exempt &&
		equalInt(a.IPMaxRequests, b.IPMaxRequests) && equalInt(a.IPBurst, b.IPBurst) &&
		equalInt(a.TeamMaxRequests, b.TeamMaxRequests) && equalInt(a.TeamBurst, b.TeamBurst) &&
		slices.Equal(a.Kinds, b.Kinds) && a.ToolScope == b.ToolScope
}

// toolKinds is what the kinds column holds: a tool definition's kinds,
// NULL when it names none (every kind).
func toolKinds(d ratelimit.Definition) []string {
	if len(d.Kinds) == 0 {
		return nil
	}
	return d.Kinds
}

// toolScope is what the tool_scope column holds: NULL for the default
// (global).
func toolScope(d ratelimit.Definition) *string {
	if d.ToolScope == "" || d.ToolScope == ratelimit.ToolScopeGlobal {
		return nil
	}
	return &d.ToolScope
}

// routePaths is what the paths column holds: the patterns for a route,
// NULL for everything else.
func routePaths(d ratelimit.Definition) []string {
	if d.EntityType != ratelimit.EntityRoute {
		return nil
	}
	return d.Paths
}

// routeMethods is what the methods column holds: a route's methods, NULL
// when it names none (every method) or is no route.
func routeMethods(d ratelimit.Definition) []string {
	if d.EntityType != ratelimit.EntityRoute || len(d.Methods) == 0 {
		return nil
	}
	return d.Methods
}

func equalInt(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// SetDefinitionEnabled turns a definition on or off in place. Setting the
// value it already has changes nothing and keeps the version.
func (q *Queries) SetDefinitionEnabled(ctx context.Context, id string, enabled bool, w Write) (after, before ratelimit.Definition, err error) {
	if err := q.lock(ctx, "definition", id); err != nil {
		return after, before, fmt.Errorf("set enabled %q: %w", id, err)
	}
	before, err = q.GetDefinition(ctx, id)
	if err != nil {
		return after, before, err
	}
	if err := checkVersion(w.IfVersion, true, before.Version); err != nil {
		return after, before, fmt.Errorf("set enabled %q: %w", id, err)
	}
	if before.Enabled == enabled {
		return before, before, nil
	}
	after, err = scanDefinition(q.db.QueryRow(ctx, `
		update rl_definitions set enabled = $2, updated_by = $3, updated_at = now(), version = version + 1
		where id = $1 returning `+definitionColumns, id, enabled, w.Actor))
	if err != nil {
		return after, before, fmt.Errorf("set enabled %q: %w", id, interpretError(err))
	}
	return after, before, nil
}

// DeleteDefinition removes a definition and returns what it removed.
func (q *Queries) DeleteDefinition(ctx context.Context, id string, w Write) (ratelimit.Definition, error) {
	if err := q.lock(ctx, "definition", id); err != nil {
		return ratelimit.Definition{}, fmt.Errorf("delete definition %q: %w", id, err)
	}
	before, err := q.GetDefinition(ctx, id)
	if err != nil {
		return before, err
	}
	if err := checkVersion(w.IfVersion, true, before.Version); err != nil {
		return before, fmt.Errorf("delete definition %q: %w", id, err)
	}
	if _, err := q.db.Exec(ctx, `delete from rl_definitions where id = $1`, id); err != nil {
		return before, fmt.Errorf("delete definition %q: %w", id, interpretError(err))
	}
	return before, nil
}

func checkVersion(want int64, exists bool, have int64) error {
	if want == 0 {
		return nil
	}
	if !exists {
		return fmt.Errorf("%w: expected version %d, but it does not exist", ErrPreconditionFailed, want)
	}
	if want != have {
		return fmt.Errorf("%w: expected version %d, stored version is %d", ErrPreconditionFailed, want, have)
	}
	return nil
}

func versionOf(d *ratelimit.Definition) int64 {
	if d == nil {
		return 0
	}
	return d.Version
}

// EachDefinitionByID streams the definitions among ids that exist, in id
// order: what an incremental reload reads after a change notification.
// An id it does not return was deleted.
func (q *Queries) EachDefinitionByID(ctx context.Context, ids []string, fn func(ratelimit.Definition) error) error {
	rows, err := q.db.Query(ctx, `select `+definitionColumns+` from rl_definitions where id = any($1::text[]) order by id`, ids)
	if err != nil {
		return fmt.Errorf("read %d definitions: %w", len(ids), interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanDefinition(rows)
		if err != nil {
			return fmt.Errorf("read %d definitions: %w", len(ids), interpretError(err))
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %d definitions: %w", len(ids), interpretError(err))
	}
	return nil
}

// equalBool reports whether two optional flags say the same.
func equalBool(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
