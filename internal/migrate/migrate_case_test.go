package migrate_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/httpgate"
)

// beforeCaseFolding is the last schema version whose rlapi stored server and
// agent names as written; 005 lower-cases them.
const beforeCaseFolding = 4

// storeAt opens a store on a fresh database migrated to version v.
func storeAt(t *testing.T, v int32) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, pgtest.NewDatabase(t), store.Opts{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := migrate.To(ctx, s.Pool(), v); err != nil {
		t.Fatalf("migrate to %d: %v", v, err)
	}
	return s
}

func execSQL(t *testing.T, s *store.Store, sql string, args ...any) {
	t.Helper()
	if _, err := s.Pool().Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestMigrationLowerCasesOldNames: rows an older rlapi wrote with
// mixed-case server and agent names are reachable under their lower-case
// names once migrated, match the calls gateways now classify, and keep
// their counts; tool names, group names and user subjects keep their case.
func TestMigrationLowerCasesOldNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storeAt(t, beforeCaseFolding)
	now := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	win := now.Unix() / 60

	// As an older rlapi wrote them.
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, members) values
		('target:mcp_server:MCPGW:60', 'target', 'mcp_server', 'MCPGW', 60, 2, null),
		('target:mcp_tool:MCPGW:Search:60', 'target', 'mcp_tool', 'MCPGW:Search', 60, 7, null),
		('target:a2a_agent:/Booking-Agent:60', 'target', 'a2a_agent', '/Booking-Agent', 60, 5, null),
		('target:a2a_skill:/Booking-Agent:Find:60', 'target', 'a2a_skill', '/Booking-Agent:Find', 60, 3, null),
		('target:mcp_server:ÜBER/Peer:60', 'target', 'mcp_server', 'ÜBER/Peer', 60, 4, null),
		('target:server_group:Fleet:60', 'target', 'server_group', 'Fleet', 60, 10, array['PeerX', 'other', 'peerx'])`)
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests)
		values ('caller:group:Team:60', 'caller', 'group', 'Team', 60, 100)`)
	execSQL(t, s, `insert into rl_memberships (subject_type, subject, groups) values
		('server', 'Quar/X', array['quarantine-targets']),
		('agent', '/Bad-Agent', array['quarantine-targets']),
		('user', 'Alice', array['Team'])`)
	execSQL(t, s, `insert into rl_counters (key, window_index, count, expires_at) values
		('t|target:mcp_server:MCPGW:60', $1, 1, now() + interval '1 day'),
		('t|target:server_group:Fleet:60|PeerX', $1, 4, now() + interval '1 day'),
		('t|target:server_group:Fleet:60|peerx', $1, 3, now() + interval '1 day'),
		('ct|60|user:Alice|mcp_server:MCPGW', $1, 6, now() + interval '1 day'),
		('c|60|user:Alice', $1, 9, now() + interval '1 day')`, win)

	st, err := migrate.Up(ctx, s.Pool())
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if st.Behind() {
		t.Fatalf("schema after migrate = %+v", st)
	}

	// (a) Reachable through the store, under the names validate gives now.
	for _, c := range []struct {
		id   string
		name string
	}{
		{"target:mcp_server:mcpgw:60", "mcpgw"},
		{"target:mcp_tool:mcpgw:Search:60", "mcpgw:Search"},
		{"target:a2a_agent:/booking-agent:60", "/booking-agent"},
		{"target:a2a_skill:/booking-agent:Find:60", "/booking-agent:Find"},
		{"target:mcp_server:über/peer:60", "über/peer"},
		{"target:server_group:Fleet:60", "Fleet"},
		{"caller:group:Team:60", "Team"},
	} {
		d, err := s.GetDefinition(ctx, c.id)
		if err != nil {
			t.Errorf("get definition %s after the migration: %v", c.id, err)
			continue
		}
		if d.Name != c.name {
			t.Errorf("definition %s has name %q, want %q", c.id, d.Name, c.name)
		}
	}
	if d, err := s.GetDefinition(ctx, "target:server_group:Fleet:60"); err == nil && !slices.Equal(d.Members, []string{"peerx", "other"}) {
		t.Errorf("server group members = %q, want [peerx other] (PeerX and peerx are one server)", d.Members)
	}
	for _, m := range [][2]string{{"server", "quar/x"}, {"agent", "/bad-agent"}, {"user", "Alice"}} {
		if _, err := s.GetMembership(ctx, m[0], m[1]); err != nil {
			t.Errorf("get membership %s:%s after the migration: %v", m[0], m[1], err)
		}
	}

	// The operator can see what the migration renamed.
	var renamed []string
	if err := s.Pool().QueryRow(ctx, `select array_agg(before->>'id' || ' -> ' || resource_id order by resource_id)
		from rl_audit_log where actor = 'migration' and action = 'rename'`).Scan(&renamed); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"target:mcp_server:MCPGW:60 -> target:mcp_server:mcpgw:60", "server:Quar/X -> server:quar/x"} {
		if !slices.Contains(renamed, want) {
			t.Errorf("audit log of the migration %q lacks %q", renamed, want)
		}
	}

	// Counters followed their targets; a caller's own counter did not move.
	counts := map[string]int64{}
	rows, err := s.Pool().Query(ctx, `select key, count from rl_counters where window_index = $1`, win)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		counts[k] = n
	}
	rows.Close()
	want := map[string]int64{
		"t|target:mcp_server:mcpgw:60":         1,
		"t|target:server_group:Fleet:60|peerx": 7,
		"ct|60|user:Alice|mcp_server:mcpgw":    6,
		"c|60|user:Alice":                      9,
	}
	if !maps.Equal(counts, want) {
		t.Errorf("counters after the migration = %v, want %v", counts, want)
	}

	// Through the API, by the id an operator would type in either case.
	env := apitest.StartOn(t, s, api.Config{})
	for _, id := range []string{"target:mcp_server:MCPGW:60", "target:mcp_server:mcpgw:60"} {
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/api/rate-limits/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+env.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"target:mcp_server:mcpgw:60"`) {
			t.Errorf("GET /api/rate-limits/%s = %d %s, want 200 with the lower-cased definition", id, resp.StatusCode, body)
		}
	}

	// (b) A call the gateway classifies from /MCPGW/mcp is throttled by the
	// old definition's limit of 2, one of which was used before the upgrade.
	e, err := postgres.New(ctx, s.Pool(), enforce.Options{Now: func() time.Time { return now }, SweepInterval: -1, CacheTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	typ, name := httpgate.TargetFromURI("/MCPGW/mcp")
	call := enforce.Call{Username: "bob", TargetType: typ, TargetName: name}
	var got []string
	for range 2 {
		d, err := e.Check(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Reason)
	}
	if !slices.Equal(got, []string{enforce.ReasonAllowed, enforce.ReasonThrottled}) {
		t.Errorf("two calls to /MCPGW/mcp after the migration: %v, want [allowed throttled] (limit 2, 1 used before)", got)
	}
	typ, name = httpgate.TargetFromURI("/Quar/X/mcp")
	if d, err := e.Check(ctx, enforce.Call{Username: "bob", TargetType: typ, TargetName: name}); err != nil || d.Reason != enforce.ReasonQuarantined {
		t.Errorf("call to /Quar/X/mcp after the migration = %+v, %v, want quarantined (server Quar/X was)", d, err)
	}
}

// TestMigrationRefusesCaseCollisions: two rows that differ only in case are
// not merged silently: the migration fails naming both and changes nothing,
// and succeeds once the operator has deleted one.
func TestMigrationRefusesCaseCollisions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storeAt(t, beforeCaseFolding)
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests) values
		('target:mcp_server:MCPGW:60', 'target', 'mcp_server', 'MCPGW', 60, 2),
		('target:mcp_server:mcpgw:60', 'target', 'mcp_server', 'mcpgw', 60, 50),
		('target:mcp_server:Solo:60', 'target', 'mcp_server', 'Solo', 60, 1)`)
	execSQL(t, s, `insert into rl_memberships (subject_type, subject, groups) values
		('server', 'PeerX', array['quarantine-targets']),
		('server', 'peerx', array['quarantine-targets'])`)

	_, err := migrate.Up(ctx, s.Pool())
	if err == nil {
		t.Fatal("migrate succeeded over definitions and memberships that differ only in case")
	}
	t.Logf("migrate over case collisions: %v", err)
	for _, want := range []string{"'target:mcp_server:MCPGW:60'", "'target:mcp_server:mcpgw:60'", "'server:PeerX'", "'server:peerx'", "delete one", "rlapi migrate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("migrate error does not mention %s: %v", want, err)
		}
	}
	st, err := migrate.Status(ctx, s.Pool())
	if err != nil {
		t.Fatal(err)
	}
	if st.Current != beforeCaseFolding {
		t.Errorf("schema after the failed migration at version %d, want %d", st.Current, beforeCaseFolding)
	}
	var ids []string
	if err := s.Pool().QueryRow(ctx, `select array_agg(id order by id) from rl_definitions where axis = 'target'`).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"target:mcp_server:MCPGW:60", "target:mcp_server:Solo:60", "target:mcp_server:mcpgw:60"}) {
		t.Errorf("definitions after the failed migration = %q, want all three unchanged", ids)
	}
	var subjects []string
	if err := s.Pool().QueryRow(ctx, `select array_agg(subject order by subject) from rl_memberships`).Scan(&subjects); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(subjects, []string{"PeerX", "peerx"}) {
		t.Errorf("memberships after the failed migration = %q, want both unchanged", subjects)
	}

	// What the error tells the operator to do.
	execSQL(t, s, `delete from rl_definitions where id = 'target:mcp_server:mcpgw:60'`)
	execSQL(t, s, `delete from rl_memberships where subject_type = 'server' and subject = 'PeerX'`)
	if st, err := migrate.Up(ctx, s.Pool()); err != nil || st.Behind() {
		t.Fatalf("migrate after deleting one of each = %+v, %v", st, err)
	}
	d, err := s.GetDefinition(ctx, "target:mcp_server:mcpgw:60")
	if err != nil || d.MaxRequests == nil || *d.MaxRequests != 2 {
		t.Errorf("definition after the second migrate = %+v, %v, want MCPGW's limit 2 under mcpgw", d, err)
	}
	if _, err := s.GetDefinition(ctx, "target:mcp_server:solo:60"); err != nil {
		t.Errorf("definition Solo after the second migrate: %v", err)
	}
}

// TestMigrationRefusesNonASCIIWithoutUnicodeLower: on a database whose
// LC_CTYPE is C, lower() folds ASCII only; a server name with non-ASCII
// letters would be left unreachable, so the migration stops and says which.
func TestMigrationRefusesNonASCIIWithoutUnicodeLower(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server := pgtest.ServerURL(t)
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("rltest_cctype_%d", time.Now().UnixNano())
	_, err = conn.Exec(ctx, `create database `+name+` template template0 encoding 'UTF8' lc_ctype 'C' lc_collate 'C'`)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if conn, err := pgx.Connect(ctx, server); err == nil {
			_, _ = conn.Exec(ctx, `drop database if exists `+name+` with (force)`)
			conn.Close(ctx)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	s, err := store.Open(ctx, u.String(), store.Opts{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := migrate.To(ctx, s.Pool(), beforeCaseFolding); err != nil {
		t.Fatal(err)
	}
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests) values
		('target:mcp_server:ÜBER:60', 'target', 'mcp_server', 'ÜBER', 60, 2),
		('target:mcp_server:grün:60', 'target', 'mcp_server', 'grün', 60, 2)`)
	execSQL(t, s, `insert into rl_memberships (subject_type, subject, groups) values ('agent', '/Äx', array['quarantine-targets'])`)
	_, err = migrate.Up(ctx, s.Pool())
	if err == nil || !strings.Contains(err.Error(), "'target:mcp_server:ÜBER:60'") || !strings.Contains(err.Error(), "'agent:/Äx'") ||
		!strings.Contains(err.Error(), "ASCII only") {
		t.Fatalf("migrate on a C-locale database with non-ASCII names = %v, want an error naming both", err)
	}
	t.Logf("migrate on a C-locale database: %v", err)
	var cUTF8 bool
	if err := s.Pool().QueryRow(ctx, `select exists (select 1 from pg_collation where collname = 'C.utf8')`).Scan(&cUTF8); err != nil {
		t.Fatal(err)
	}
	if cUTF8 && strings.Contains(err.Error(), "grün") {
		t.Errorf("migrate names grün, which is lower case already: %v", err)
	}
	if st, err := migrate.Status(ctx, s.Pool()); err != nil || st.Current != beforeCaseFolding {
		t.Errorf("schema after the refused migration = %+v, %v, want version %d", st, err, beforeCaseFolding)
	}

	// Renamed by hand, as the error says: the migration goes through.
	execSQL(t, s, `update rl_definitions set id = 'target:mcp_server:über:60', name = 'über' where id = 'target:mcp_server:ÜBER:60'`)
	execSQL(t, s, `update rl_memberships set subject = '/äx' where subject_type = 'agent' and subject = '/Äx'`)
	if !cUTF8 {
		execSQL(t, s, `delete from rl_definitions where name in ('über', 'grün')`)
		execSQL(t, s, `delete from rl_memberships where subject = '/äx'`)
	}
	if st, err := migrate.Up(ctx, s.Pool()); err != nil || st.Behind() {
		t.Fatalf("migrate after renaming by hand = %+v, %v", st, err)
	}
}
