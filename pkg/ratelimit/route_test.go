package ratelimit_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestRoutePattern(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"/auth/*":     "/auth/*",
		" /Tokens/* ": "/tokens/*",
		"/a/**/b":     "/a/*/b",
		"/":           "/",
		"*/mcp":       "*/mcp",
	} {
		got, ne := ratelimit.RoutePattern("paths[0]", raw)
		if ne != nil || got != want {
			t.Errorf("RoutePattern(%q) = %q, %v; want %q", raw, got, ne, want)
		}
	}
	for raw, msg := range map[string]string{
		"":        "must not be empty",
		"auth/*":  "must start with '/'",
		"/auth/":  "ends in '/'",
		"/a//b":   "empty segment",
		"/a/../b": `".." segment`,
		"/a?x=1":  "can never match",
		"/a%2fb":  "can never match",
		"/a b":    "can never match",
		"/a;v=1":  "can never match",
	} {
		_, ne := ratelimit.RoutePattern("paths[0]", raw)
		if ne == nil || ne.Field != "paths[0]" || !strings.Contains(ne.Message, msg) || !strings.HasPrefix(ne.Message, "paths[0]: ") {
			t.Errorf("RoutePattern(%q) = %v, want an error on paths[0] saying %q", raw, ne, msg)
		}
	}
}

func TestRouteMethod(t *testing.T) {
	t.Parallel()
	if m, ne := ratelimit.RouteMethod("methods[0]", " post "); ne != nil || m != "POST" {
		t.Errorf("RouteMethod(post) = %q, %v", m, ne)
	}
	if _, ne := ratelimit.RouteMethod("methods[1]", "FETCH"); ne == nil || !strings.HasPrefix(ne.Message, "methods[1]: must be one of GET") {
		t.Errorf("RouteMethod(FETCH) = %v", ne)
	}
}

func TestGlobMatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"/auth/*", "/auth/x", true},
		{"/auth/*", "/auth/x/y", true},
		{"/auth/*", "/auth", false},
		{"/auth/*", "/auth/", true},
		{"github:*", "github:create_issue", true},
		{"*:delete_*", "github:delete_repo", true},
		{"*:delete_*", "github:list_deletes", false},
		{"*", "", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"/mcp", "/mcp", true},
		{"/mcp", "/mcpx", false},
	} {
		if got := ratelimit.GlobMatch(c.pattern, c.name); got != c.want {
			t.Errorf("GlobMatch(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}
