package api

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testThrottle is rlapi's throttle over an in-memory counter store on a
// clock each call sets.
type testThrottle struct {
	*authThrottle
	capacity int
	mu       sync.Mutex
	now      time.Time
}

func newTestThrottle(maxFailures int, window, lockout time.Duration, capacity int, log *slog.Logger) *testThrottle {
	tt := &testThrottle{capacity: capacity}
	tt.authThrottle = newAuthThrottle(memory.New(), maxFailures, window, lockout, capacity, tt.clock, log)
	return tt
}

func (tt *testThrottle) clock() time.Time {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.now
}

func (tt *testThrottle) at(now time.Time) context.Context {
	tt.mu.Lock()
	tt.now = now
	tt.mu.Unlock()
	return context.Background()
}

func (tt *testThrottle) fail(ip netip.Addr, now time.Time) { tt.authThrottle.fail(tt.at(now), ip) }

func (tt *testThrottle) lockedFor(ip netip.Addr, now time.Time) time.Duration {
	return tt.authThrottle.lockedFor(tt.at(now), ip)
}

func (tt *testThrottle) succeeded(ip netip.Addr) { tt.authThrottle.succeeded(tt.at(tt.clock()), ip) }

func TestAuthThrottleKeepsActiveLockoutsWhenFull(t *testing.T) {
	t.Parallel()
	th := newTestThrottle(2, time.Minute, 5*time.Minute, 8, nil)
	victim := netip.MustParseAddr("198.51.100.1")
	th.fail(victim, t0)
	th.fail(victim, t0)
	if th.lockedFor(victim, t0) == 0 {
		t.Fatal("two failures did not lock the address out")
	}
	// A spray of fresh addresses, far more than the table holds.
	for i := range 1000 {
		th.fail(netip.AddrFrom4([4]byte{203, 0, byte(i >> 8), byte(i)}), t0.Add(time.Second))
	}
	if n := th.tracked(); n > th.capacity {
		t.Errorf("table holds %d entries, capacity %d", n, th.capacity)
	}
	if th.lockedFor(victim, t0.Add(2*time.Second)) == 0 {
		t.Error("a spray of fresh addresses released an active lockout")
	}
	// The most recent sprayer is still counted: the oldest quiet entries went.
	last := netip.AddrFrom4([4]byte{203, 0, byte(999 >> 8), byte(999 & 0xff)})
	th.fail(last, t0.Add(3*time.Second))
	if th.lockedFor(last, t0.Add(3*time.Second)) == 0 {
		t.Error("the newest entry was evicted instead of the oldest")
	}
}

func TestAuthThrottleFullOfLockoutsTracksNoNewcomer(t *testing.T) {
	t.Parallel()
	th := newTestThrottle(1, time.Minute, 5*time.Minute, 3, nil)
	for i := range 3 {
		th.fail(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), t0)
	}
	th.fail(netip.MustParseAddr("203.0.113.9"), t0)
	for i := range 3 {
		if th.lockedFor(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), t0) == 0 {
			t.Errorf("lockout %d dropped to make room", i)
		}
	}
	if th.tracked() > 3 {
		t.Errorf("table grew to %d past its capacity 3", th.tracked())
	}
	// Once a lockout has expired, its slot is reused.
	later := t0.Add(6 * time.Minute)
	th.fail(netip.MustParseAddr("203.0.113.9"), later)
	if th.lockedFor(netip.MustParseAddr("203.0.113.9"), later) == 0 {
		t.Error("an expired lockout's slot was not reused")
	}
}

func TestAuthThrottleGroupsAddresses(t *testing.T) {
	t.Parallel()
	th := newTestThrottle(2, time.Minute, 5*time.Minute, maxTracked, nil)
	th.fail(netip.MustParseAddr("2001:db8:1:2::1"), t0)
	th.fail(netip.MustParseAddr("2001:db8:1:2:ffff::7"), t0)
	if th.lockedFor(netip.MustParseAddr("2001:db8:1:2:abcd::1"), t0) == 0 {
		t.Error("two failures from one IPv6 /64 did not lock out the /64")
	}
	if th.lockedFor(netip.MustParseAddr("2001:db8:1:3::1"), t0) != 0 {
		t.Error("the next /64 was locked out too")
	}
	th.fail(netip.MustParseAddr("::ffff:10.0.0.1"), t0)
	th.fail(netip.MustParseAddr("10.0.0.1"), t0)
	if th.lockedFor(netip.MustParseAddr("10.0.0.1"), t0) == 0 {
		t.Error("an IPv4-mapped address counted apart from its IPv4 address")
	}
	if th.lockedFor(netip.MustParseAddr("10.0.0.2"), t0) != 0 {
		t.Error("IPv4 addresses were grouped")
	}
}

func TestAuthThrottleSuccessResetsFailures(t *testing.T) {
	t.Parallel()
	th := newTestThrottle(3, time.Minute, 5*time.Minute, maxTracked, nil)
	ip := netip.MustParseAddr("192.0.2.10")
	th.fail(ip, t0)
	th.fail(ip, t0)
	th.succeeded(ip)
	th.fail(ip, t0)
	th.fail(ip, t0)
	if th.lockedFor(ip, t0) != 0 {
		t.Error("failures before a successful authentication still counted")
	}
	th.fail(ip, t0)
	if th.lockedFor(ip, t0) == 0 {
		t.Error("three failures in a row did not lock out")
	}
	th.succeeded(ip) // cannot happen through authenticate, but must not unlock
	if th.lockedFor(ip, t0) == 0 {
		t.Error("succeeded released an active lockout")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestAuthThrottleLogsLockoutAndRelease(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	th := newTestThrottle(2, time.Minute, 5*time.Minute, maxTracked, log)
	ip := netip.MustParseAddr("2001:db8::5")
	th.fail(ip, t0)
	th.fail(ip, t0)
	out := buf.String()
	for _, want := range []string{"level=WARN", `msg="auth lockout"`, "address=2001:db8::/64", "failures=2", "duration=5m0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("lockout log %q lacks %s", out, want)
		}
	}
	if th.lockedFor(ip, t0.Add(5*time.Minute)) != 0 {
		t.Fatal("lockout outlived its duration")
	}
	out = buf.String()
	for _, want := range []string{`msg="auth lockout released"`, "address=2001:db8::/64"} {
		if !strings.Contains(out, want) {
			t.Errorf("release log %q lacks %s", out, want)
		}
	}
}

// The reproduction at the real capacity: 100,001 failures from
// fresh addresses used to clear every lockout. Not parallel: its round
// trips through the counter store would starve the parallel tests'
// deadlines.
func TestAuthThrottleSprayAtFullCapacity(t *testing.T) {
	th := newTestThrottle(5, time.Minute, 5*time.Minute, maxTracked, nil)
	victim := netip.MustParseAddr("198.51.100.1")
	for range 5 {
		th.fail(victim, t0)
	}
	for i := range maxTracked + 1 {
		th.fail(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), t0.Add(time.Second))
	}
	if th.lockedFor(victim, t0.Add(2*time.Second)) == 0 {
		t.Error("100,001 fresh addresses released an active lockout")
	}
	if n := th.tracked(); n > maxTracked {
		t.Errorf("table holds %d entries, capacity %d", n, maxTracked)
	}
}
