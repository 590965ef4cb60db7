package enforce_test

import "github.com/rlctl/rlctl/pkg/ratelimit"

func serverGroup(name string, window, max int, members ...string) ratelimit.Definition {
	return ratelimit.Definition{Axis: "target", EntityType: "server_group", Name: name, WindowSeconds: window,
		MaxRequests: &max, Members: members, Enabled: true}
}

func callerTarget(name string, window, user int) ratelimit.Definition {
	return ratelimit.Definition{Axis: "caller_target", EntityType: "group", Name: name, WindowSeconds: window,
		UserMaxRequests: &user, Enabled: true}
}
