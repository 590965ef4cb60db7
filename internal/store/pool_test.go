package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
)

// TestPoolSizeFromTheURL: an operator's pool_max_conns in DATABASE_URL is
// kept; without it the pool holds 16.
func TestPoolSizeFromTheURL(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	for _, c := range []struct {
		dsn  string
		want int32
	}{{dsn, 16}, {dsn + sep + "pool_max_conns=3", 3}} {
		s, err := store.Open(ctx, c.dsn, store.Opts{})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Pool().Config().MaxConns; got != c.want {
			t.Errorf("pool size = %d, want %d", got, c.want)
		}
		s.Close()
	}
}
