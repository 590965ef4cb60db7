package redis

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/rueidis"
)

// ModeError is Open's refusal of a URL whose scheme does not match what
// the server is: redis:// at a node of a Redis Cluster (every decision of
// gates in different hash slots would fail with CROSSSLOT, and keys of
// another node's slots with MOVED), redis+cluster:// at a standalone
// server (the client would fall back to one node and the URL would say
// something the deployment is not), redis:// at a Redis Sentinel (it
// holds no data: every script would fail), redis+sentinel:// at anything
// but a sentinel, or a sentinel that monitors no master of the URL's
// name.
type ModeError struct {
	// URL is the counters URL, its password redacted.
	URL string
	// Server is what the server says it is (INFO server's redis_mode):
	// standalone, cluster or sentinel.
	Server string
	// Addr is the server that said it.
	Addr string
	// ClusterEnabled is what the server says (INFO cluster).
	ClusterEnabled bool
	// WantSentinel: the URL names sentinels (redis+sentinel://).
	WantSentinel bool
	// UnknownMaster is the master name of the URL that the sentinel at
	// Addr does not monitor.
	UnknownMaster string
}

func (e *ModeError) Error() string {
	u, _ := url.Parse(e.URL)
	host := e.URL
	if u != nil {
		host = u.Host
	}
	switch {
	case e.UnknownMaster != "":
		return fmt.Sprintf("redis: the sentinel at %s monitors no master named %q (SENTINEL GET-MASTER-ADDR-BY-NAME answered nil): "+
			"put the master set's name, as in its sentinel monitor line, in the URL's path: redis+sentinel://%s/<master-name>", e.Addr, e.UnknownMaster, host)
	case e.WantSentinel && e.ClusterEnabled:
		return fmt.Sprintf("redis: %s names %s as a sentinel, but it is a node of a Redis Cluster (INFO server says redis_mode:cluster): "+
			"use redis+cluster://%s (rediss+cluster:// over TLS), seeded by any of its nodes", e.URL, e.Addr, e.Addr)
	case e.WantSentinel:
		return fmt.Sprintf("redis: %s names %s as a sentinel, but it is a standalone server (INFO server says redis_mode:%s): "+
			"use redis://%s[/db] (rediss:// over TLS), or list the sentinels' addresses (port 26379 by default) in the redis+sentinel:// URL", e.URL, e.Addr, e.Server, e.Addr)
	case e.Server == "sentinel":
		return fmt.Sprintf("redis: %s is a Redis Sentinel (INFO server says redis_mode:sentinel), not a server that holds data: "+
			"use redis+sentinel://%s/<master-name>[/db] (rediss+sentinel:// over TLS), listing the sentinels", e.URL, host)
	case e.ClusterEnabled:
		return fmt.Sprintf("redis: %s is a node of a Redis Cluster (INFO cluster says cluster_enabled:1), not a standalone server: "+
			"use redis+cluster://%s (rediss+cluster:// over TLS), seeded by any of its nodes", e.URL, host)
	}
	return fmt.Sprintf("redis: %s is a standalone server (INFO cluster says cluster_enabled:0), not a Redis Cluster: "+
		"use redis://%s[/db] (rediss:// over TLS)", e.URL, strings.SplitN(host, ",", 2)[0])
}

// checkMode asks the server what it is (INFO server's redis_mode, INFO
// cluster's cluster_enabled) and refuses a URL that says otherwise
// (*ModeError). A sentinel URL's client talks to the master, a standalone
// server.
func checkMode(ctx context.Context, client rueidis.Client, rawURL string, cluster bool) error {
	res := client.DoMulti(ctx, client.B().Info().Section("server").Build(), client.B().Info().Section("cluster").Build())
	server, err := res[0].ToString()
	if err != nil {
		return fmt.Errorf("redis: ask %s what it is (INFO server): %w", Redact(rawURL), err)
	}
	mode := infoFields(server)["redis_mode"]
	if mode == "sentinel" {
		return &ModeError{URL: Redact(rawURL), Server: mode}
	}
	info, err := res[1].ToString()
	if err != nil {
		return fmt.Errorf("redis: ask %s whether it is a cluster (INFO cluster): %w", Redact(rawURL), err)
	}
	enabled := infoFields(info)["cluster_enabled"] == "1"
	if enabled != cluster {
		return &ModeError{URL: Redact(rawURL), Server: mode, ClusterEnabled: enabled}
	}
	return nil
}
