// Package connlimit caps the connections a listener holds open at once:
// rlapi's HTTP and gRPC listeners each keep their own cap, so a flood of
// idle connections to one cannot take the process to its file limit.
package connlimit

import (
	"net"
	"net/netip"
	"sync"
)

// Listen wraps ln so that it holds at most n connections at once: Accept
// waits for one of them to close before it takes the next from the
// kernel's queue. It is golang.org/x/net/netutil.LimitListener, which the
// module does not need otherwise.
func Listen(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close stops Accept, also one waiting for a free slot.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitConn gives its slot back once, on its first Close.
type limitConn struct {
	net.Conn
	releaseOnce sync.Once
	release     func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.releaseOnce.Do(c.release)
	return err
}

// PerAddress wraps ln so that one client address holds at most n of its
// connections at once: a connection past that is closed as soon as it is
// accepted. Addresses in exempt are not counted.
func PerAddress(ln net.Listener, n int, exempt []netip.Prefix) net.Listener {
	return &perAddress{Listener: ln, n: n, exempt: exempt, open: map[netip.Addr]int{}}
}

type perAddress struct {
	net.Listener
	n      int
	exempt []netip.Prefix
	mu     sync.Mutex
	open   map[netip.Addr]int
}

func (l *perAddress) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr, ok := remoteAddr(c)
		if !ok || l.isExempt(addr) {
			return c, nil
		}
		l.mu.Lock()
		if l.open[addr] >= l.n {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.open[addr]++
		l.mu.Unlock()
		return &limitConn{Conn: c, release: func() {
			l.mu.Lock()
			if l.open[addr]--; l.open[addr] <= 0 {
				delete(l.open, addr)
			}
			l.mu.Unlock()
		}}, nil
	}
}

func (l *perAddress) isExempt(a netip.Addr) bool {
	for _, p := range l.exempt {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// remoteAddr is c's peer address, IPv4-mapped IPv6 as IPv4.
func remoteAddr(c net.Conn) (netip.Addr, bool) {
	tcp, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	return tcp.AddrPort().Addr().Unmap(), true
}
