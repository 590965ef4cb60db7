package auththrottle_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

// BenchmarkAuthLockedCached is what the failed-credential throttle adds to
// a decision with a client address once the address is cached (the store
// said "not locked" within RecheckAfter): a map lookup under the
// throttle's one lock, from every goroutine at once. 1,024 addresses.
func BenchmarkAuthLockedCached(b *testing.B) {
	e, err := auththrottle.New(memory.New(), auththrottle.Options{RecheckAfter: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	ips := make([]string, 1024)
	for i := range ips {
		ips[i] = netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}).String()
		if _, err := e.Locked(context.Background(), ips[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx, i := context.Background(), 0
		for pb.Next() {
			if st, _ := e.Locked(ctx, ips[i&1023]); st.Locked {
				b.Fatal("locked")
			}
			i++
		}
	})
}
