package redis

import (
	"net/url"
	"strings"
	"testing"
)

// A Sentinel URL rlapi cannot use is refused with the part of the URL at
// fault and the rule it breaks, and neither password ever shows.
func TestParseSentinelURL(t *testing.T) {
	for u, want := range map[string]string{
		"redis+sentinel://u:secret@/rlctl":                                                  "no sentinels",
		"redis+sentinel://u:secret@s1:26379":                                                "no master name",
		"redis+sentinel://u:secret@s1:26379/":                                               "no master name",
		"redis+sentinel://u:secret@s1:26379//2":                                             "no master name",
		"redis+sentinel://u:secret@s1:26379,,s2:26379/rlctl":                                `sentinel "": want host:port`,
		"redis+sentinel://u:secret@s1,s2:26379/rlctl":                                       `sentinel "s1": want host:port`,
		"redis+sentinel://u:secret@s1:0,s2:26379/rlctl":                                     `port "0": want a number from 1 to 65535`,
		"redis+sentinel://u:secret@s1:99999,s2:26379/rlctl":                                 `port "99999"`,
		"redis+sentinel://u:secret@s1:26379/rlctl/two":                                      `database "two" (after the master name): want a number`,
		"redis+sentinel://u:secret@s1:26379/rlctl/-1":                                       `database "-1"`,
		"redis+sentinel://u:secret@s1:26379/rlctl?db=2":                                     `query parameter "db": unknown (a Sentinel URL takes sentinel_username and sentinel_password)`,
		"redis+sentinel://s1:26379/rlctl?sentinel_password=secret&x=1":                      `query parameter "x": unknown`,
		"redis+sentinel://s1:26379/rlctl?sentinel_password=secret&sentinel_password=secret": "given 2 times",
		"redis+sentinell://s1:26379/rlctl":                                                  "scheme",
	} {
		_, _, err := ParseURL(u)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseURL(%q) = %v, want an error saying %q without the password", u, err, want)
		}
	}
	co, cluster, err := ParseURL("redis+sentinel://u:pw@s1:26379,s2:26380/mymaster/3?sentinel_username=su&sentinel_password=sp")
	if err != nil || cluster || co.Sentinel.MasterSet != "mymaster" || co.SelectDB != 3 ||
		strings.Join(co.InitAddress, " ") != "s1:26379 s2:26380" || co.Username != "u" || co.Password != "pw" ||
		co.Sentinel.Username != "su" || co.Sentinel.Password != "sp" || co.TLSConfig != nil || co.Sentinel.TopologyRefreshInterval <= 0 {
		t.Errorf("a Sentinel URL: %+v %v %v", co, cluster, err)
	}
	co, _, err = ParseURL("rediss+sentinel://s1:26379/mymaster")
	if err != nil || co.TLSConfig == nil || co.Sentinel.TLSConfig == nil || co.SelectDB != 0 {
		t.Errorf("a Sentinel URL over TLS: %+v %v", co, err)
	}
}

func TestRedactHidesTheSentinelPassword(t *testing.T) {
	got := Redact("redis+sentinel://u:pw1@s1:26379/m?sentinel_username=su&sentinel_password=pw2")
	if strings.Contains(got, "pw1") || strings.Contains(got, "pw2") || !strings.Contains(got, "sentinel_username=su") {
		t.Errorf("Redact = %q, want both passwords hidden and the rest kept", got)
	}
}

// FuzzParseURL: whatever the URL, ParseURL does not panic, and its error
// never shows a password: the user info's or a sentinel_password
// parameter's (each checked where it appears once in the URL, so that a
// host or path that happens to hold the same text does not count).
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"redis://u:hunter2@h:1/2", "redis+cluster://u:hunter2@h:1,h:2", "redis+sentinel://u:hunter2@s:1,s:2/m/1?sentinel_password=hunter3",
		"rediss+sentinel://s:1/m?sentinel_password=hunter2", "redis+sentinel://u:hunter2@/", "redis+sentinel://s:1/m?%zz&sentinel_password=hunter2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		_, _, err := ParseURL(raw)
		u, perr := url.Parse(raw)
		if err == nil || perr != nil {
			return
		}
		var secrets []string
		if pw, ok := u.User.Password(); ok {
			secrets = append(secrets, pw)
		}
		secrets = append(secrets, u.Query()["sentinel_password"]...)
		for _, s := range secrets {
			if len(s) >= 4 && strings.Count(raw, s) == 1 && strings.Contains(err.Error(), s) {
				t.Errorf("ParseURL(%q): %v shows the password %q", raw, err, s)
			}
		}
	})
}
