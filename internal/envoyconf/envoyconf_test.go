package envoyconf_test

import (
	"errors"
	"testing"

	"github.com/rlctl/rlctl/internal/envoyconf"
)

// FuzzParse: any input is parsed or refused with errors naming the file,
// never a panic; what Render writes of a parse parses again.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n",
		"domain: d\ndescriptors:\n  - key: k\n    value: v*\n    share_threshold: true\n    descriptors:\n      - key: x\n",
		"domain: d\n---\ndomain: e\ndescriptors: []\n",
		"descriptors: [{key: a, key: b}]",
		"domain: [",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defs, err := envoyconf.Parse("f.yaml", data)
		if err != nil {
			var es envoyconf.Errors
			if !errors.As(err, &es) || len(es) == 0 || es[0].File != "f.yaml" {
				t.Fatalf("Parse error %v is not Errors naming the file", err)
			}
			return
		}
		out, _, _ := envoyconf.Render(defs)
		if _, err := envoyconf.Parse("render.yaml", out); err != nil {
			t.Fatalf("Render wrote what Parse refuses: %v\n%s", err, out)
		}
	})
}
