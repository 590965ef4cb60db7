package redis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Ping reports whether the store can count now: the server answers PING,
// or, for a Cluster, a node answers CLUSTER INFO with cluster_state:ok
// (every hash slot has a reachable master). It is a readiness check
// (rlapi's /readyz): bound it with ctx's deadline. A Cluster node that is
// down is passed over for the next, so one lost node whose slots have
// failed over does not make the store look unreachable.
func (s *Store) Ping(ctx context.Context) error {
	if !s.cluster {
		if err := s.client.Do(ctx, s.client.B().Ping().Build()).Error(); err != nil {
			return fmt.Errorf("redis: ping: %w", err)
		}
		return nil
	}
	nodes := s.client.Nodes()
	var errs []error
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[addr]
		info, err := n.Do(ctx, n.B().ClusterInfo().Build()).ToString()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if state := infoFields(info)["cluster_state"]; state != "ok" {
			return fmt.Errorf("redis: cluster_state:%s (says %s): some hash slots have no reachable master", state, addr)
		}
		return nil
	}
	if len(errs) == 0 {
		return errors.New("redis: the client knows no node of the cluster")
	}
	return fmt.Errorf("redis: no cluster node answered: %w", errors.Join(errs...))
}
