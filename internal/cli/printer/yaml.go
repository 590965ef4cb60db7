package printer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// MarshalYAML renders v as YAML with its fields in the order -o json
// prints them (the struct's order, id and name first), not sorted: it
// goes through v's JSON form, so the json tags, omitempty and MarshalJSON
// methods apply as they do for -o json.
func MarshalYAML(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	node, err := yamlNode(dec)
	if err != nil {
		return nil, fmt.Errorf("yaml of %T: %w", v, err)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	enc.CompactSeqIndent() // "- " under the key, as before and as kubectl writes
	if err := enc.Encode(node); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// yamlNode reads one JSON value from dec as a YAML node, keeping the
// order of object keys.
func yamlNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				val, err := yamlNode(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, val)
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			if len(n.Content) == 0 {
				n.Style = yaml.FlowStyle
			}
			return n, nil
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for dec.More() {
				val, err := yamlNode(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, val)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			if len(n.Content) == 0 {
				n.Style = yaml.FlowStyle
			}
			return n, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Style: stringStyle(t)}, nil
	case json.Number:
		tag := "!!int"
		if bytes.ContainsAny([]byte(t), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		v := "false"
		if t {
			v = "true"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: v}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// stringStyle quotes a string wherever a YAML 1.1 reader would take it
// for something else (yes, on, 0x1F, 1:20, ~): rlctl reads its files with
// sigs.k8s.io/yaml, a YAML 1.1 parser, while this encoder speaks YAML 1.2,
// which would write them bare. That library's own encoder knows the set;
// it builds an encoder and a parser per string (some 7 KiB), so the
// strings plainInYAML11 vouches for skip it: a definition is half a dozen
// strings, and a document of 50,000 definitions went through it in 5 GB.
func stringStyle(s string) yaml.Style {
	if plainInYAML11(s) {
		return 0
	}
	b, err := sigsyaml.Marshal(s)
	switch {
	case err != nil || len(b) == 0:
		return yaml.DoubleQuotedStyle
	case b[0] == '"':
		return yaml.DoubleQuotedStyle
	case b[0] == '\'':
		return yaml.SingleQuotedStyle
	}
	return 0
}

// plainInYAML11 reports, without building an encoder, that a YAML 1.1
// reader takes s written bare as the string s. It holds for a string that
// starts with an ASCII letter, is none of the words YAML 1.1 reads as a
// boolean or null (y, yes, n, no, true, false, on, off, null, in any case),
// and holds only letters, digits and _ - . / = % * + : (a ':' not last):
// no indicator, no number, no timestamp can be written so. It may say
// false of a string that is plain too; stringStyle then asks the encoder.
func plainInYAML11(s string) bool {
	if s == "" || !isASCIILetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case isASCIILetter(c), '0' <= c && c <= '9':
		case c == ':':
			if i == len(s)-1 {
				return false
			}
		case strings.IndexByte("_-./=%*+", c) >= 0:
		default:
			return false
		}
	}
	if len(s) <= 5 {
		// The bare words a YAML 1.1 reader takes for a boolean or null.
		for _, w := range [...]string{"y", "yes", "n", "no", "true", "false", "on", "off", "null"} {
			if strings.EqualFold(s, w) {
				return false
			}
		}
	}
	return true
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func writeYAML(w io.Writer, v any) error {
	b, err := MarshalYAML(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
