// Package version carries the build's version, set by the linker:
//
//	go build -ldflags "-X github.com/rlctl/rlctl/internal/version.Version=v1.2.3"
package version

import "runtime/debug"

// Version is the release version; "dev" for local builds.
var Version = "dev"

// String returns the version, with the VCS revision when the build has one.
func String() string {
	v := Version
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
	}
	return v
}
