package redis

import (
	"strings"
	"testing"
)

// keySlot is Redis Cluster's: CRC16/XMODEM of the hash tag mod 16384
// (the reference values of the cluster specification and of CLUSTER
// KEYSLOT).
func TestKeySlot(t *testing.T) {
	for key, want := range map[string]uint16{
		"123456789":            12739, // the specification's CRC16 check value 0x31C3
		"foo":                  12182,
		"{user1000}.following": keySlot("user1000"),
		"foo{}{bar}":           keySlot("foo{}{bar}"), // an empty tag hashes the whole key
		"rl:{k}:f:60:1":        keySlot("k"),
	} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
}

// escape keeps distinct keys distinct and never lets a key's bytes end
// its hash tag early: every Redis key of a gate lands in one slot.
func TestEscape(t *testing.T) {
	keys := []string{"", "%", "%25", "{", "}", "%7B", "%7D", "a}b", "a{b}", "k\x00", "k\xff", "a%b"}
	seen := map[string]string{}
	for _, k := range keys {
		e := escape(k)
		if strings.ContainsAny(e, "{}") || e == "" {
			t.Errorf("escape(%q) = %q: holds a brace or is empty", k, e)
		}
		if o, ok := seen[e]; ok {
			t.Errorf("escape(%q) = escape(%q) = %q", k, o, e)
		}
		seen[e] = k
		tag := "rl:{" + e + "}"
		if keySlot(tag+":s:60:1") != keySlot(tag+":s:60:0") || keySlot(tag+":t") != keySlot(tag+":f:1:2") {
			t.Errorf("key %q: its Redis keys are in different slots", k)
		}
	}
}

// A counters URL rlapi cannot use is refused with the rule it breaks,
// and a password never shows in the message.
func TestParseURL(t *testing.T) {
	for u, want := range map[string]string{
		"memcached://h:1":                 "scheme",
		"redis+cluster://h":               "want host:port",
		"redis+cluster://h:1/2":           "no database",
		"redis://:secret@":                "no host",
		"redis+cluster://u:secret@h:1,h2": "port",
	} {
		_, _, err := ParseURL(u)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseURL(%q) = %v, want an error saying %q without the password", u, err, want)
		}
	}
	co, cluster, err := ParseURL("redis+cluster://u:pw@h1:1,h2:2")
	if err != nil || !cluster || len(co.InitAddress) != 2 || co.Username != "u" || co.Password != "pw" {
		t.Errorf("a cluster URL: %+v %v %v", co.InitAddress, cluster, err)
	}
	co, cluster, err = ParseURL("redis://h:6379/3")
	if err != nil || cluster || co.SelectDB != 3 || !co.ForceSingleClient {
		t.Errorf("a standalone URL: %+v %v %v", co, cluster, err)
	}
}
