package api_test

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
)

// rawConn is one client connection that sends requests by hand, so the
// test knows exactly which connection each request uses.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, env *apitest.Env) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c, br: bufio.NewReader(c)}
}

func (rc *rawConn) send(t *testing.T) {
	t.Helper()
	if _, err := rc.c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: rlapi\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
}

// read waits up to d for the answer; it reports false when none came.
func (rc *rawConn) read(t *testing.T, d time.Duration) bool {
	t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(rc.br, nil)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /healthz: %d", resp.StatusCode)
	}
	return true
}

// With the cap reached, another connection waits unserved (it is not
// refused either), and is served as soon as one of the others closes.
func TestClientConnectionsAreCapped(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{MaxClientConns: 2})
	held := []*rawConn{dialRaw(t, env), dialRaw(t, env)}
	for _, rc := range held {
		rc.send(t)
		if !rc.read(t, 30*time.Second) {
			t.Fatal("a connection under the cap was not served")
		}
	}
	// Both stay open (keep-alive, idle): the cap is held.
	extra := dialRaw(t, env)
	extra.send(t)
	// No answer is the expected outcome, so a slow machine cannot fail
	// this; the wait only gives a wrong server the chance to answer.
	if extra.read(t, 500*time.Millisecond) {
		t.Fatal("a third connection was served while two of a cap of 2 were open")
	}
	held[0].c.Close()
	if !extra.read(t, 30*time.Second) {
		t.Fatal("the waiting connection was not served after another closed")
	}
	// The remaining held one still works: slots are per connection.
	held[1].send(t)
	if !held[1].read(t, 30*time.Second) {
		t.Fatal("an open connection stopped being served")
	}
}
