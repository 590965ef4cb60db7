package connlimit_test

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/connlimit"
)

// serve accepts on ln until it closes, holding every connection open, and
// reports each one it accepted.
func serve(t *testing.T, ln net.Listener) <-chan net.Conn {
	t.Helper()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return accepted
}

// closedByServer reports whether the server closed c (a read sees EOF or a
// reset), waiting at most d for it.
func closedByServer(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, io.EOF)
}

// One address holds at most n connections: the next is closed at once,
// and a slot comes back when one closes. Exempt addresses are not counted.
func TestPerAddress(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		exempt []netip.Prefix
		want   int
	}{{"capped", nil, 2}, {"exempt", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, 3}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			accepted := serve(t, connlimit.PerAddress(raw, 2, c.exempt))
			var conns []net.Conn
			for range 3 {
				cc, err := net.Dial("tcp", raw.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cc.Close() })
				conns = append(conns, cc)
			}
			var held []net.Conn
			for range c.want {
				select {
				case sc := <-accepted:
					t.Cleanup(func() { sc.Close() })
					held = append(held, sc)
				case <-time.After(10 * time.Second):
					t.Fatalf("%d of %d connections accepted", len(held), c.want)
				}
			}
			if c.want == 3 {
				return
			}
			if !closedByServer(conns[2], 10*time.Second) {
				t.Fatal("a third connection from one address was kept")
			}
			// One held connection closes: its slot takes a new one.
			held[0].Close()
			cc, err := net.Dial("tcp", raw.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cc.Close() })
			select {
			case sc := <-accepted:
				sc.Close()
			case <-time.After(10 * time.Second):
				t.Fatal("the slot of a closed connection was not given back")
			}
		})
	}
}
