package enforce

import (
	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// eventCaller is the caller c's counters count, for the log lines: an
// anonymous call with a client address is ip:<key>, as its buckets are
// (its username and client_id are empty), keyed by ipv6Prefix. Only the
// event paths call it.
func eventCaller(c Call, ipv6Prefix int) string {
	switch {
	case c.ClientID != "":
		return "agent:" + c.ClientID
	case c.Username != "":
		return ratelimit.SubjectUser + ":" + c.Username
	}
	if ip := clientAddr(c.ClientIP); ip.IsValid() {
		return CallerIP + ":" + clientip.Key(ip, ipv6Prefix)
	}
	return ""
}
