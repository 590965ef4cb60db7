package enforce_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

// BenchmarkAuthLockedCached is what the failed-credential throttle adds to
// a decision with a client address once the address is cached (the store
// said "not locked" within RecheckAfter): a map lookup under the
// throttle's one lock, from every goroutine at once. 1,024 addresses.
func BenchmarkAuthLockedCached(b *testing.B) {
	e, err := enforce.New(context.Background(), enforce.Options{Counters: memory.New(), Source: enforcetest.StaticSource(enforce.State{}),
		SweepInterval: -1, AuthThrottle: &enforce.AuthThrottleOptions{RecheckAfter: time.Hour}})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ips := make([]string, 1024)
	for i := range ips {
		ips[i] = netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}).String()
		if _, err := e.AuthLocked(context.Background(), ips[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx, i := context.Background(), 0
		for pb.Next() {
			if st, _ := e.AuthLocked(ctx, ips[i&1023]); st.Locked {
				b.Fatal("locked")
			}
			i++
		}
	})
}
