package printer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

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
// which would write them bare. That library's own encoder knows the set.
func stringStyle(s string) yaml.Style {
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

func writeYAML(w io.Writer, v any) error {
	b, err := MarshalYAML(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
