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
// another node's slots with MOVED), or redis+cluster:// at a standalone
// server (the client would fall back to one node and the URL would say
// something the deployment is not).
type ModeError struct {
	// URL is the counters URL, its password redacted.
	URL string
	// ClusterEnabled is what the server says (INFO cluster).
	ClusterEnabled bool
}

func (e *ModeError) Error() string {
	u, _ := url.Parse(e.URL)
	host := e.URL
	if u != nil {
		host = u.Host
	}
	if e.ClusterEnabled {
		return fmt.Sprintf("redis: %s is a node of a Redis Cluster (INFO cluster says cluster_enabled:1), not a standalone server: "+
			"use redis+cluster://%s (rediss+cluster:// over TLS), seeded by any of its nodes", e.URL, host)
	}
	return fmt.Sprintf("redis: %s is a standalone server (INFO cluster says cluster_enabled:0), not a Redis Cluster: "+
		"use redis://%s[/db] (rediss:// over TLS)", e.URL, strings.SplitN(host, ",", 2)[0])
}

// checkMode asks the server whether it runs in cluster mode and refuses a
// URL that says otherwise (*ModeError).
func checkMode(ctx context.Context, client rueidis.Client, rawURL string, cluster bool) error {
	info, err := client.Do(ctx, client.B().Info().Section("cluster").Build()).ToString()
	if err != nil {
		return fmt.Errorf("redis: ask %s whether it is a cluster (INFO cluster): %w", Redact(rawURL), err)
	}
	enabled := infoFields(info)["cluster_enabled"] == "1"
	if enabled != cluster {
		return &ModeError{URL: Redact(rawURL), ClusterEnabled: enabled}
	}
	return nil
}
