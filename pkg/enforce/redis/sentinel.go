package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// sentinelParams are the query parameters a Sentinel URL may carry: the
// sentinels' own credentials, which Redis keeps apart from the data
// servers' (a sentinel's requirepass, not the master's).
var sentinelParams = []string{"sentinel_username", "sentinel_password"}

// sentinelRefresh is how often the client asks a sentinel which server is
// the master, besides hearing +switch-master. Without it one missed event
// would leave the client on a demoted master (it answers READONLY to
// every take) until a restart; a few seconds bound that, for one cheap
// request per interval.
const sentinelRefresh = 2 * time.Second

// parseSentinelURL reads a redis+sentinel:// or rediss+sentinel:// URL:
//
//	redis+sentinel://[user:password@]s1:p1,s2:p2,.../master-name[/db][?sentinel_username=u&sentinel_password=p]
//
// The host list names the sentinels (each host:port; any one that answers
// is enough), the path the master set they monitor and the database, the
// user info the data servers' credentials and the query the sentinels'.
func parseSentinelURL(u *url.URL, rawURL string) (rueidis.ClientOption, error) {
	var co rueidis.ClientOption
	bad := func(format string, args ...any) (rueidis.ClientOption, error) {
		return co, fmt.Errorf("redis: counters URL %s: %s", Redact(rawURL), fmt.Sprintf(format, args...))
	}
	if u.Host == "" {
		return bad("no sentinels: list them as host:port,host:port before the master name")
	}
	for _, hp := range strings.Split(u.Host, ",") {
		host, port, err := net.SplitHostPort(hp)
		if err != nil || host == "" {
			return bad("sentinel %q: want host:port", hp)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return bad("sentinel %q: port %q: want a number from 1 to 65535", hp, port)
		}
		co.InitAddress = append(co.InitAddress, hp)
	}
	path := strings.TrimPrefix(u.Path, "/")
	name, db, hasDB := strings.Cut(path, "/")
	if name == "" {
		return bad("no master name: the path names the master set the sentinels monitor (redis+sentinel://host:port,.../master-name[/db])")
	}
	co.Sentinel.MasterSet = name
	if hasDB {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return bad("database %q (after the master name): want a number, 0 or more", db)
		}
		co.SelectDB = n
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains(sentinelParams, k) {
			return bad("query parameter %q: unknown (a Sentinel URL takes %s)", k, strings.Join(sentinelParams, " and "))
		}
		if len(q[k]) > 1 {
			return bad("query parameter %q: given %d times, want one", k, len(q[k]))
		}
	}
	co.Sentinel.Username = q.Get("sentinel_username")
	co.Sentinel.Password = q.Get("sentinel_password")
	if u.User != nil {
		co.Username = u.User.Username()
		co.Password, _ = u.User.Password()
	}
	if u.Scheme == "rediss+sentinel" {
		co.TLSConfig = tlsConfig()
		co.Sentinel.TLSConfig = tlsConfig()
	}
	// rueidis gives the master's connections its defaults, not the
	// sentinels': without these a sentinel that accepts and never answers
	// would hang Open.
	co.Sentinel.Dialer = net.Dialer{Timeout: rueidis.DefaultDialTimeout, KeepAlive: rueidis.DefaultTCPKeepAlive}
	co.Sentinel.TopologyRefreshInterval = sentinelRefresh
	return co, nil
}

// sentinelOf is a client of one sentinel of co (its credentials and TLS),
// for the questions Open asks before it trusts the sentinels' answer.
func sentinelOf(co rueidis.ClientOption, addr string) (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true,
		DisableRetry: true, Username: co.Sentinel.Username, Password: co.Sentinel.Password,
		TLSConfig: co.Sentinel.TLSConfig, Dialer: co.Sentinel.Dialer, ConnWriteTimeout: co.ConnWriteTimeout})
}

// checkSentinels asks the sentinels of co, one by one until one answers,
// what they are and where the master is, before rueidis is left to
// follow them: a URL that names a plain server or a Cluster node as a
// sentinel, or a master set no sentinel monitors, is refused here with a
// *ModeError instead of an "unknown command" from deep in the client.
// A sentinel that does not answer is passed over (a quorum does not
// need all of them); if none does, the error says why for each.
func checkSentinels(ctx context.Context, co rueidis.ClientOption, rawURL string) error {
	var errs []error
	for _, addr := range co.InitAddress {
		mode, known, err := askSentinel(ctx, co, addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		if mode != "sentinel" {
			return &ModeError{URL: Redact(rawURL), Server: mode, Addr: addr, ClusterEnabled: mode == "cluster", WantSentinel: true}
		}
		if !known {
			return &ModeError{URL: Redact(rawURL), Server: mode, Addr: addr, UnknownMaster: co.Sentinel.MasterSet}
		}
		return nil
	}
	return fmt.Errorf("redis: no sentinel of %s answered: %w", Redact(rawURL), errors.Join(errs...))
}

// askSentinel is what the server at addr says it is (INFO server's
// redis_mode) and, for a sentinel, whether it monitors co's master set.
func askSentinel(ctx context.Context, co rueidis.ClientOption, addr string) (mode string, known bool, err error) {
	c, err := sentinelOf(co, addr)
	if err != nil {
		return "", false, err
	}
	defer c.Close()
	info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return "", false, fmt.Errorf("INFO server: %w", err)
	}
	mode = infoFields(info)["redis_mode"]
	if mode != "sentinel" {
		return mode, false, nil
	}
	r := c.Do(ctx, c.B().SentinelGetMasterAddrByName().Master(co.Sentinel.MasterSet).Build())
	if r.Error() != nil {
		if rueidis.IsRedisNil(r.Error()) {
			return mode, false, nil
		}
		return mode, false, fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: %w", r.Error())
	}
	return mode, true, nil
}

// Sentinel is the master set the store's sentinels monitor, or "" when
// the store does not find its server through Redis Sentinel.
func (s *Store) Sentinel() string { return s.masterSet }
