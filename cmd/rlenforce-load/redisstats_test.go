package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlctl/rlctl/internal/redistest"
	redisstore "github.com/rlctl/rlctl/pkg/enforce/redis"
)

const info7 = "# CPU\r\nused_cpu_sys:1.179601\r\nused_cpu_user:10.198270\r\nused_cpu_sys_children:0.000000\r\n" +
	"used_cpu_user_children:0.000000\r\nused_cpu_sys_main_thread:1.179540\r\nused_cpu_user_main_thread:10.197741\r\n\n" +
	"# Commandstats\r\ncmdstat_evalsha:calls=2511316,usec=1293895,usec_per_call=0.52,rejected_calls=0,failed_calls=0\r\n" +
	"cmdstat_client|list:calls=3,usec=40,usec_per_call=13.33,rejected_calls=0,failed_calls=0\r\n"

func TestParseInfo(t *testing.T) {
	t.Parallel()
	t.Run("redis 7: the main thread's CPU apart", func(t *testing.T) {
		t.Parallel()
		s, err := parseInfo(info7)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.cpu(), 11377871*time.Microsecond; got != want {
			t.Errorf("every thread's CPU = %s, want %s (used_cpu_sys + used_cpu_user)", got, want)
		}
		if !s.hasMain {
			t.Fatal("hasMain = false with used_cpu_*_main_thread in the text")
		}
		if got, want := s.mainCPU(), 11377281*time.Microsecond; got != want {
			t.Errorf("main thread's CPU = %s, want %s", got, want)
		}
		if s.calls["evalsha"] != 2511316 || s.usec["evalsha"] != 1293895 {
			t.Errorf("evalsha = %d calls, %d µs; want 2511316 and 1293895", s.calls["evalsha"], s.usec["evalsha"])
		}
		if s.calls["client|list"] != 3 {
			t.Errorf("client|list = %d calls, want 3 (a subcommand's name keeps its |)", s.calls["client|list"])
		}
	})
	t.Run("redis 6: no main thread figures, every thread's stands in", func(t *testing.T) {
		t.Parallel()
		s, err := parseInfo("# CPU\nused_cpu_sys:2.5\nused_cpu_user:0.5\n# Commandstats\ncmdstat_eval:calls=7,usec=70,usec_per_call=10.00\n")
		if err != nil {
			t.Fatal(err)
		}
		if s.hasMain {
			t.Error("hasMain = true without used_cpu_*_main_thread")
		}
		if s.mainCPU() != 3*time.Second || s.cpu() != 3*time.Second {
			t.Errorf("main %s, all %s: want 3s each", s.mainCPU(), s.cpu())
		}
		if s.calls["eval"] != 7 || s.usec["eval"] != 70 {
			t.Errorf("eval = %d calls, %d µs; want 7 and 70", s.calls["eval"], s.usec["eval"])
		}
	})
	for _, tc := range []struct{ name, text, want string }{
		{"no cpu section", "# Commandstats\ncmdstat_get:calls=1,usec=1\n", "no used_cpu_sys and used_cpu_user"},
		{"a bad number", "used_cpu_sys:abc\nused_cpu_user:1\n", `used_cpu_sys: "abc" is not a non-negative number`},
		{"a negative number", "used_cpu_sys:1\nused_cpu_user:-1\n", `used_cpu_user: "-1" is not a non-negative number`},
		{"a bad call count", "used_cpu_sys:1\nused_cpu_user:1\ncmdstat_get:calls=x,usec=1\n", `cmdstat_get: calls: "x" is not a non-negative integer`},
		{"no usec", "used_cpu_sys:1\nused_cpu_user:1\ncmdstat_get:calls=1\n", "cmdstat_get: \"calls=1\": want calls=N and usec=N"},
		{"not field:value", "used_cpu_sys:1\nused_cpu_user:1\ngarbage\n", `line "garbage": want field:value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseInfo(tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseInfo(%q) = %v, want an error with %q", tc.text, err, tc.want)
			}
		})
	}
}

func TestParseClusterNodes(t *testing.T) {
	t.Parallel()
	const text = `f983f2ee 127.0.0.1:13068@23068 slave 00d31cf1 0 1796164167139 1 connected
00d31cf1 127.0.0.1:13063@23063 myself,master - 0 1796164168000 1 connected 0-5460
5b4414ab 127.0.0.1:13064@23064,node-b master - 0 1796164167240 2 connected 5461-10921 10922 [10922->-9fb195e7]
9fb195e7 127.0.0.1:13065@23065 master - 0 1796164168043 3 connected 10923-16383
aaaaaaaa 127.0.0.1:13070@23070 master,fail - 0 1796164168043 4 disconnected 
bbbbbbbb 127.0.0.1:13071@23071 master - 0 1796164168043 5 connected
`
	got, err := parseClusterNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []clusterMaster{{"127.0.0.1:13063", 5461}, {"127.0.0.1:13064", 5462}, {"127.0.0.1:13065", 5461}}
	if len(got) != len(want) {
		t.Fatalf("masters = %v, want %v (no replica, no failed master, none without slots)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("master %d = %v, want %v", i, got[i], want[i])
		}
	}
	for _, tc := range []struct{ name, text, want string }{
		{"short line", "abc 127.0.0.1:1@2 master\n", "want at least 8 fields"},
		{"bad slot range", "abc 127.0.0.1:1@2 master - 0 0 1 connected 9-x\n", `slot range "9-x"`},
		{"only replicas", "abc 127.0.0.1:1@2 slave def 0 0 1 connected\n", "no master serving slots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseClusterNodes(tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parseClusterNodes(%q) = %v, want an error with %q", tc.text, err, tc.want)
			}
		})
	}
}

// TestRedisWatchStandalone reads the standalone server's INFO around
// script calls of its own: the watch sees one master, and its delta
// counts at least the scripts run (other clients of a shared server only
// add to it).
func TestRedisWatchStandalone(t *testing.T) {
	t.Parallel()
	u := redistest.URL(t, "REDIS_URL")
	ctx := context.Background()
	w, err := openRedisWatch(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(w.clients) != 1 {
		t.Fatalf("a standalone server's watch has %d masters (%v), want 1", len(w.clients), w.addrs)
	}
	checkWatchCounts(t, w, u, "probe")
}

// TestRedisWatchCluster lists the cluster's masters: they serve every
// slot between them and each says it is a master, and the watch counts
// scripts run on each.
func TestRedisWatchCluster(t *testing.T) {
	t.Parallel()
	u := redistest.URL(t, "REDIS_CLUSTER_URL")
	ctx := context.Background()
	w, err := openRedisWatch(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, c := range w.clients {
		role, err := c.Do(ctx, c.B().Role().Build()).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := role[0].ToString(); r != "master" {
			t.Errorf("%s is in the watch but says it is a %q", w.addrs[i], r)
		}
	}
	co, _, err := redisstore.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rueidis.NewClient(co)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	text, err := c.Do(ctx, c.B().ClusterNodes().Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	masters, err := parseClusterNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	slots := 0
	for _, m := range masters {
		slots += m.slots
	}
	if slots != 16384 {
		t.Errorf("the masters %v serve %d slots, want all 16384", masters, slots)
	}
	if len(w.clients) != len(masters) {
		t.Errorf("the watch has %d masters, CLUSTER NODES %d", len(w.clients), len(masters))
	}
	// 48 hash tags land in slots all over the range: every master of a
	// cluster whose slots are spread gets some (each of the development
	// cluster's three gets at least ten).
	tags := make([]string, 48)
	for i := range tags {
		tags[i] = "t" + strconv.Itoa(i)
	}
	checkWatchCounts(t, w, u, tags...)
}

// checkWatchCounts runs scripts on keys tagged with tags through a
// client of their own and checks that the watch's delta counts them on
// the masters and that CPU only grows.
func checkWatchCounts(t *testing.T, w *redisWatch, u string, tags ...string) {
	t.Helper()
	ctx := context.Background()
	co, _, err := redisstore.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rueidis.NewClient(co)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before, err := w.sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const perTag = 20
	script := rueidis.NewLuaScript("return redis.call('INCR', KEYS[1])")
	for _, tag := range tags {
		key := "rlenforce-load-test:{" + tag + "}"
		for range perTag {
			if err := script.Exec(ctx, c, []string{key}, nil).Error(); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Do(ctx, c.B().Del().Key(key).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	after, err := w.sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := delta(before, after)
	if len(d) != len(w.clients) {
		t.Fatalf("delta has %d masters, the watch %d", len(d), len(w.clients))
	}
	var scripts int64
	for i, m := range d {
		if m.main < 0 || m.all < 0 || m.scriptTime < 0 {
			t.Errorf("%s: CPU went back: main %s, all %s, script time %s", w.addrs[i], m.main, m.all, m.scriptTime)
		}
		if m.main > m.all+time.Millisecond {
			t.Errorf("%s: main thread %s over every thread's %s", w.addrs[i], m.main, m.all)
		}
		scripts += m.scripts
		if len(d) > 1 && m.scripts == 0 {
			t.Errorf("%s: no script counted, though the test's keys reach every master", w.addrs[i])
		}
	}
	if want := int64(perTag * len(tags)); scripts < want {
		t.Errorf("the masters counted %d script calls, want at least the %d this test ran", scripts, want)
	}
	if !after[0].hasMain {
		t.Logf("%s does not report its main thread's CPU (before Redis 7): every thread's stands in", w.addrs[0])
	}
}
