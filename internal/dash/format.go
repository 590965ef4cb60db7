package dash

import (
	"strconv"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// formatWindow writes a window in seconds the short way: 60s, 5m, 1h, 1d.
func formatWindow(secs int) string {
	switch {
	case secs <= 0:
		return "-"
	case secs%86400 == 0:
		return strconv.Itoa(secs/86400) + "d"
	case secs%3600 == 0:
		return strconv.Itoa(secs/3600) + "h"
	case secs%60 == 0 && secs >= 120:
		return strconv.Itoa(secs/60) + "m"
	}
	return strconv.Itoa(secs) + "s"
}

// limitValue is the largest limit of a definition, for sorting.
func limitValue(d ratelimit.Definition) int {
	v := -1
	for _, p := range []*int{d.MaxRequests, d.UserMaxRequests, d.AgentMaxRequests} {
		if p != nil && *p > v {
			v = *p
		}
	}
	return v
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// formatAgo writes how long ago t was: "12s ago", "5m ago", "3h ago".
func formatAgo(now time.Time, t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	d := now.Sub(*t)
	if d < 0 {
		return "in " + shortDuration(-d)
	}
	return shortDuration(d) + " ago"
}

// formatUntil writes when t comes: "in 1h59m", "expired", "never".
func formatUntil(now time.Time, t *time.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	d := t.Sub(now)
	if d <= 0 {
		return "expired"
	}
	return "in " + shortDuration(d)
}

// shortDuration writes d with at most two units: 45s, 5m30s, 2h5m, 3d4h.
func shortDuration(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return two(s/60, "m", s%60, "s")
	case s < 86400:
		return two(s/3600, "h", s%3600/60, "m")
	}
	return two(s/86400, "d", s%86400/3600, "h")
}

func two(a int64, ua string, b int64, ub string) string {
	out := strconv.FormatInt(a, 10) + ua
	if b > 0 {
		out += strconv.FormatInt(b, 10) + ub
	}
	return out
}

// formatStamp writes a time in the clock's location, to the second.
func formatStamp(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format("2006-01-02 15:04:05")
}

// formatStampPtr is formatStamp for optional times.
func formatStampPtr(t *time.Time, loc *time.Location) string {
	if t == nil {
		return "-"
	}
	return formatStamp(*t, loc)
}
