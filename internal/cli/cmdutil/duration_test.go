package cmdutil

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"90s", 90 * time.Second, false},
		{"2h30m", 150 * time.Minute, false},
		{"7d", 7 * 24 * time.Hour, false},
		{"1d12h", 36 * time.Hour, false},
		{" 0 ", 0, false},
		{"100000d", 100000 * 24 * time.Hour, false},
		{"100001d", 0, true},
		{"-1d", 0, true},
		{"-5m", 0, true},
		{"7days", 0, true},
		{"d", 0, true},
		{"1d-1h", 0, true},
		{"100000d9999999h", 0, true}, // overflows
		{"", 0, true},
	} {
		got, err := ParseDuration(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !strings.Contains(err.Error(), "is not a duration such as 30m, 2h, 7d or 1d12h") {
			t.Errorf("ParseDuration(%q) error %q", tt.in, err)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"7d", "1d12h", "90s", "-1d", "100000d9999999h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err == nil && d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
	})
}
