package printer

import (
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// encoderStyle is what stringStyle asks sigs.k8s.io/yaml's encoder.
func encoderStyle(s string) yaml.Style {
	b, err := sigsyaml.Marshal(s)
	switch {
	case err != nil || len(b) == 0, b[0] == '"':
		return yaml.DoubleQuotedStyle
	case b[0] == '\'':
		return yaml.SingleQuotedStyle
	}
	return 0
}

// FuzzPlainInYAML11: what plainInYAML11 writes bare, the YAML 1.1
// encoder writes bare too, and a YAML 1.1 reader reads back as the string.
func FuzzPlainInYAML11(f *testing.F) {
	for _, s := range []string{"edge", "edge/path=%2Ffiles%2F*", "target:descriptor:edge/k:60", "Yes", "yES", "on",
		"Null", "no", "y", "n", "true", "a:", "a:b", "e5", "E5", "nan", "Inf", "x_1", "tenant", "o", "off-peak", "ab+cd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !plainInYAML11(s) {
			return
		}
		if st := encoderStyle(s); st != 0 {
			t.Fatalf("plainInYAML11(%q) but the YAML 1.1 encoder quotes it (style %v)", s, st)
		}
		var back any
		if err := sigsyaml.Unmarshal([]byte("v: "+s), &back); err != nil {
			t.Fatalf("v: %s does not read back: %v", s, err)
		}
		if got, _ := back.(map[string]any)["v"].(string); got != s {
			t.Fatalf("v: %s reads back as %#v", s, back)
		}
	})
}

// TestPlainInYAML11Words: the words a YAML 1.1 reader takes for booleans
// and null are quoted in any case.
func TestPlainInYAML11Words(t *testing.T) {
	for _, w := range []string{"y", "Y", "yes", "YES", "n", "No", "true", "False", "on", "OFF", "null", "NULL"} {
		for _, s := range []string{w, strings.ToUpper(w), strings.ToLower(w)} {
			if plainInYAML11(s) {
				t.Errorf("plainInYAML11(%q) = true", s)
			}
			if stringStyle(s) == 0 {
				t.Errorf("stringStyle(%q) writes it bare", s)
			}
		}
	}
}
