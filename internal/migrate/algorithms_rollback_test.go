package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
)

// TestRollingBack008RestoresRlTakeAndDefinitions: migration 008 replaces
// rl_take (from shared/rl_take_008.sql) and gives definitions their
// algorithm and bursts; rolling it back restores 006's functions exactly
// (from shared/rl_take_006.sql) and the definitions' columns and checks as
// they were.
func TestRollingBack008RestoresRlTakeAndDefinitions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, pgtest.NewDatabase(t), store.Opts{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	schema := func() map[string]string {
		t.Helper()
		return schemaOf(t, ctx, s, rlFunctions+`
			union all
			select 'column ' || attname, format_type(atttypid, atttypmod) || ' ' || attnotnull::text
			from pg_attribute where attrelid = 'rl_definitions'::regclass and attnum > 0 and not attisdropped
			union all
			select 'constraint ' || conname, pg_get_constraintdef(oid)
			from pg_constraint where conrelid = 'rl_definitions'::regclass`)
	}
	if err := migrate.To(ctx, s.Pool(), 7); err != nil {
		t.Fatal(err)
	}
	before := schema()
	if err := migrate.To(ctx, s.Pool(), 8); err != nil {
		t.Fatal(err)
	}
	at8 := schema()
	take := "function rl_take(integer[],text[],bigint[],bigint[],boolean[],timestamp with time zone[],bigint[],boolean[],text[],bigint[],bigint[],bigint[])"
	if at8[take] == "" || at8["column algorithm"] == "" {
		t.Fatalf("008 did not create %s and definitions.algorithm", take)
	}
	if err := migrate.To(ctx, s.Pool(), 7); err != nil {
		t.Fatalf("roll back 008: %v", err)
	}
	back := schema()
	for k, v := range before {
		if back[k] != v {
			t.Errorf("after rolling back 008, %s is\n%s\nwant (as before)\n%s", k, back[k], v)
		}
	}
	for k := range back {
		if _, ok := before[k]; !ok {
			t.Errorf("after rolling back 008, %s is left", k)
		}
	}
}

// TestRlTakeKeepsItsOldCall: a replica still on the binary before 008
// calls rl_take with 002's eight arguments while the new one rolls out;
// both count the same fixed-window rows.
func TestRlTakeKeepsItsOldCall(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := pgtest.NewStore(t)
	now := time.Now()
	idx := now.Unix() / 60
	exp := time.Unix((idx+2)*60, 0)
	var (
		allowed []bool
		counts  []int64
		room    []bool
	)
	for i := range 3 {
		err := s.Pool().QueryRow(ctx, `select allowed, counts, room from rl_take($1, $2, $3, $4, $5, $6, $7, $8)`,
			[]int32{1}, []string{"c|60|user:old"}, []int64{idx}, []int64{2}, []bool{true}, []time.Time{exp},
			[]int64{1}, []bool{true}).Scan(&allowed, &counts, &room)
		if err != nil {
			t.Fatalf("the old call: %v", err)
		}
		if want := i < 2; allowed[0] != want || room[0] != want || counts[0] != int64(min(i+1, 2)) {
			t.Fatalf("old call %d: allowed %v counts %v room %v", i+1, allowed, counts, room)
		}
	}
	res, err := s.TakeBatch(ctx, []store.TakeRequest{{Gates: []store.Gate{{Key: "c|60|user:old", WindowIndex: idx,
		Limit: 3, Enforce: true, ExpiresAt: exp}}, Cost: 1, Consume: true, Now: now}}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Allowed || res[0].Counts[0] != 3 {
		t.Fatalf("the new call after two old ones: %+v, want allowed at 3", res[0])
	}
}
