package main

import (
	"strings"
	"testing"
)

func TestCheckHostRefusesRemoteServers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url         string
		allowRemote bool
		ok          bool
	}{
		{"http://127.0.0.1:8080", false, true},
		{"http://127.1.2.3:8080", false, true},
		{"http://[::1]:8080", false, true},
		{"http://localhost:8080", false, true},
		{"http://10.0.0.5:8080", false, false},
		{"https://rlapi.example.com", false, false},
		{"http://localhost.example.com", false, false},
		{"https://rlapi.example.com", true, true},
		{"ftp://127.0.0.1", false, false},
		{"http://", false, false},
	} {
		err := checkHost(c.url, c.allowRemote)
		if (err == nil) != c.ok {
			t.Errorf("checkHost(%q, allowRemote=%v) = %v, want ok=%v", c.url, c.allowRemote, err, c.ok)
		}
	}
}

func TestFlagsAreBounded(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-op", "delete"},
		{"-duration", "11m"},
		{"-duration", "0s"},
		{"-requests", "-1"},
		{"-requests", "5000001"},
		{"-concurrency", "0"},
		{"-concurrency", "2000"},
		{"-ids", "0"},
		{"extra"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%s) accepted it", strings.Join(args, " "))
		}
	}
	c, err := parseFlags([]string{"-op", "list", "-concurrency", "4", "-duration", "2s", "-requests", "100"})
	if err != nil || c.op != "list" || c.concurrency != 4 || c.requests != 100 {
		t.Errorf("parseFlags: %+v, %v", c, err)
	}
}
