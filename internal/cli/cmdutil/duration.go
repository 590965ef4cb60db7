package cmdutil

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// maxDays keeps "<n>d" from overflowing a time.Duration (about 292 years).
const maxDays = 100000

// ParseDuration is the one duration syntax of rlctl, for every flag and
// the dashboard: Go's durations (90s, 30m, 2h30m) plus whole days in front
// (7d, 1d12h). Negative durations are refused.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	bad := fmt.Errorf("%q is not a duration such as 30m, 2h, 7d or 1d12h", s)
	var days time.Duration
	if i := strings.IndexByte(in, 'd'); i > 0 {
		n, err := strconv.Atoi(in[:i])
		if err != nil || n < 0 || n > maxDays {
			return 0, bad
		}
		days, in = time.Duration(n)*24*time.Hour, in[i+1:]
		if in == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(in)
	if err != nil || d < 0 || d > math.MaxInt64-days {
		return 0, bad
	}
	return days + d, nil
}

// durationValue is a pflag.Value read by ParseDuration.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string {
	if *d == 0 {
		return "0" // pflag leaves a "0" default out of the help
	}
	return time.Duration(*d).String()
}

// Type is what the help shows after the flag's name.
func (d *durationValue) Type() string { return "duration" }

// DurationVar defines a duration flag that also takes days (7d), as
// pflag's DurationVar does for the rest.
func DurationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}
