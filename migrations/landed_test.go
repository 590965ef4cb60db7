package migrations

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"testing"
)

// landed holds the SHA-256 of every migration that is on main. tern records
// only a version number, so a database migrated before a landed file was
// edited would silently keep the old schema: landed files never change, fixes
// go forward in a new number. Add a line here when a migration lands.
var landed = map[string]string{
	"001_schema.sql":                    "f0cb8fd6f0e9a2546cd74c75c6fd8d508c2e01dda87ccb28a3aff95f67d4729e",
	"002_counters.sql":                  "891b1e6f877a5df05b17778678482c5a59a4c6ed5f407e3e7038dee8abb319da",
	"003_settings.sql":                  "71680c1812fa5b0763240655e3990de8420d05c000a5c93fbc5bcba5ba7ccbce",
	"004_change_notify.sql":             "794ba3db0e520deed719c8c7ee59c137a8320586776db4c3321f9cf993f2214d",
	"005_case_insensitive_targets.sql":  "7b62361978f84ed47c0e4b4f7c065a093b06d0303fce466fb127531f56d5ead4",
	"006_take_arithmetic.sql":           "a0bbd81f4f6f45f2cb6e817ea5ad8b3e81f8bd0bb3a529393b4c424bd23a1d56",
	"007_counter_key.sql":               "cc1eae3be6de246f2b847779d641c40daf349345d5f9c040e48141d42dd096ea",
	"008_algorithms.sql":                "aa07d514d90cc275623bbcecbcd734b870b24428c8496fa4df2f33f2f00dab24",
	"009_counter_key_algorithms.sql":    "24abc1e24bd40207e88e5b28deb647111128879f150ac4e969b2d02271992ebb",
	"010_network_subjects.sql":          "cde6783156a4ab2c58508b79a385621d13b8f1e87d8bc7014b0f3d7c91890b39",
	"011_counter_key_ip_callers.sql":    "aa0fb0b91feae5cdf0eecebf465423f0118555eb5fd5cfc52ce7070c257f7d2e",
	"012_take_cheap.sql":                "9a34fbbdad0f45798fba7551c24e09742f3da9a6b88dc061bb9222846983d059",
	"013_everyone_teams_shared.sql":     "e02a348600569669f76231eea9c331a5fe7561f5283be0bb4901ab4f30171251",
	"014_reserved.sql":                  "7fe1e7b06ceb8eff4b6469ec10c195f2478420c53b51bf32ed6a5ca59fca0887",
	"015_descriptor_definitions.sql":    "045cebd20f8bc1a6f9bbbddd2561921570b0b46e3ae526e78d497863477c63f8",
	"016_routes.sql":                    "aff0ef4d922551fea06606d52881455dc723b0a1470d49c35a254068c6d347a7",
	"017_events.sql":                    "e92fd087b494e3e82cbcc86b0876287d52f55bed4af04b79822cf7e6d1b25be7",
	"018_route_team_limits.sql":         "6396e825883a02ac1a67ec4a6ec81925a6d58c4b539a54e27b56e494763f2b85",
	"019_reserved.sql":                  "d8325f7615cd8291207641c167dc8ad8acd65e7a52aa1c338730e5b2bdcdd33c",
	"020_counters_cheap_writes.sql":     "de15c683a985a7b2b693abdaf76d39f5bb4efd4769884f4745efd70abad512e2",
	"021_definition_lease.sql":          "c4e7085f8cf2c7d6e43b07d4aea5ce03ed19da7ba875a959d5d6e1dc991bbb08",
	"022_counts_toward_lockout.sql":     "8e48f1fa916bafc6d7b3af1f8f3772350d4bf53195f96fbc9f450a3d5ed5d625",
	"023_events_team_path_overflow.sql": "8da31093a594755ef695addbf84c55b95525495f902e889126c954faf53ec9ec",
	"024_counter_key_columns.sql":       "2fe80a5bf264f4125dd0a774f7ce404b2b6f3cc90fc250bde79101443d056589",
	"025_definition_fail_policy.sql":    "25aaf883e4b5789094d2acb952e4ffddd95fb4b98fb3d127058b147252f6d2f2",
	"026_definition_override.sql":       "28d4e95612e42d2984c67c59982e0fa25a9d9db0f30023710a4fe162d657473d",
	// Templates a landed migration includes are frozen with it.
	"shared/rl_take_002.sql": "a4894629da2988fbd9bab877f29d23901b49b5a62f3cf247e7c85019700ee5c3",
	"shared/rl_take_006.sql": "821557b32a97007f66cf905b120a840e415e62ed868a22c53a5859d67d35fe41",
	"shared/rl_take_008.sql": "53c2729a38ab91d92068750229db2aed0b37d7d04f90f10e87e4bb3d00854a67",
}

func TestLandedMigrationsUnchanged(t *testing.T) {
	for name, want := range landed {
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Errorf("landed migration %s is gone: %v", name, err)
			continue
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("landed migration %s was edited (sha256 %s, landed as %s): restore it and fix forward in a new numbered file", name, got, want)
		}
	}
}
