package applydoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Format is a state file's encoding.
type Format int

const (
	FormatYAML Format = iota
	FormatJSON
)

// Sniff calls JSON what starts with '{' (after white space), YAML the rest
// (JSON is YAML too, but the JSON decoder gives better messages).
func Sniff(data []byte) Format {
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		return FormatJSON
	}
	return FormatYAML
}

// Part is one document of a file: what Decode read of it, and the error
// that ended it (a *FatalError).
type Part struct {
	Result
	Err error
}

// DecodeFile reads a state file in ModeDocument: JSON (one document), or
// a YAML stream of one or more documents, read with yaml.Decoder (empty
// documents, only comments, are dropped). Each YAML document is turned
// into JSON, its mappings' keys in sorted order, and read by Decode, so
// both formats are held to the same rules and named alike. A YAML error
// (syntax, a key given twice) ends the stream: it is the last Part's Err.
func DecodeFile(data []byte, f Format, opts Options) []Part {
	opts.Mode = ModeDocument
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // editors on Windows add one
	if f == FormatJSON {
		res, err := Decode(bytes.NewReader(data), opts)
		return []Part{{Result: res, Err: err}}
	}
	var parts []Part
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			parts = append(parts, Part{Err: &FatalError{Message: yamlMessage(err)}})
			break
		}
		if emptyDocument(&n) {
			continue
		}
		c := converter{budget: 4*len(data) + 1000}
		v, err := c.value(&n)
		if err != nil {
			parts = append(parts, Part{Err: &FatalError{Message: yamlMessage(err)}})
			break
		}
		j, err := json.Marshal(v)
		if err != nil {
			parts = append(parts, Part{Err: &FatalError{Message: strings.TrimPrefix(err.Error(), "json: ")}})
			break
		}
		res, err := Decode(bytes.NewReader(j), opts)
		parts = append(parts, Part{Result: res, Err: err})
	}
	if len(parts) == 0 {
		parts = append(parts, Part{}) // no documents: no sections
	}
	return parts
}

func yamlMessage(err error) string {
	msg := err.Error()
	if !strings.HasPrefix(msg, "yaml: ") {
		msg = "yaml: " + msg
	}
	return msg
}

// emptyDocument reports a document with no content (only comments).
func emptyDocument(n *yaml.Node) bool {
	if n.Kind != yaml.DocumentNode {
		return false
	}
	if len(n.Content) == 0 {
		return true
	}
	c := n.Content[0]
	return c.Kind == yaml.ScalarNode && c.Value == "" && c.Style == 0 && c.ShortTag() == "!!null"
}

// converter turns a YAML node into the value encoding/json writes, as
// sigs.k8s.io/yaml (which read these files before, over YAML 1.1) did:
// mappings with string keys, a key given twice refused, aliases and merge
// keys resolved, and the YAML 1.1 booleans (yes, no, on, off, y, n) read as
// booleans. budget bounds the nodes visited, so aliases cannot expand a
// small file into a huge value.
type converter struct {
	budget int
}

func (c *converter) value(n *yaml.Node) (any, error) {
	if c.budget--; c.budget < 0 {
		return nil, errors.New("yaml: document contains excessive aliasing")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0])
	case yaml.AliasNode:
		return c.value(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := c.value(e)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		return out, c.mapping(n, out, map[string]bool{})
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("yaml: line %d: unexpected node", n.Line)
}

// mapping adds n's pairs to out; set holds the keys given in n itself (a
// merged mapping's keys give way to them).
func (c *converter) mapping(n *yaml.Node, out map[string]any, set map[string]bool) error {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		key, err := c.key(k)
		if err != nil {
			return err
		}
		if set[key] {
			return fmt.Errorf("yaml: line %d: key %q already set in map", k.Line, key)
		}
		set[key] = true
		val, err := c.value(v)
		if err != nil {
			return err
		}
		out[key] = val
	}
	for _, m := range merges {
		if err := c.merge(m, out, set); err != nil {
			return err
		}
	}
	return nil
}

// merge adds the pairs of a merge key's value (a mapping, an alias of
// one, or a list of them) that out does not have yet.
func (c *converter) merge(m *yaml.Node, out map[string]any, set map[string]bool) error {
	if c.budget--; c.budget < 0 {
		return errors.New("yaml: document contains excessive aliasing")
	}
	for m.Kind == yaml.AliasNode {
		m = m.Alias
	}
	switch m.Kind {
	case yaml.MappingNode:
		from := map[string]any{}
		if err := c.mapping(m, from, map[string]bool{}); err != nil {
			return err
		}
		for k, v := range from {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
		return nil
	case yaml.SequenceNode:
		for _, e := range m.Content {
			if err := c.merge(e, out, set); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("yaml: line %d: map merge requires map or sequence of maps as the value", m.Line)
}

// key is a mapping key as a string: a scalar's text, or for any other
// node its JSON.
func (c *converter) key(k *yaml.Node) (string, error) {
	for k.Kind == yaml.AliasNode {
		k = k.Alias
	}
	if k.Kind == yaml.ScalarNode {
		v, err := scalar(k)
		if err != nil {
			return "", err
		}
		switch x := v.(type) {
		case string:
			return x, nil
		case nil:
			return "null", nil
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64), nil
		}
		return fmt.Sprint(v), nil
	}
	return "", fmt.Errorf("yaml: line %d: a mapping key must be a scalar", k.Line)
}

// yaml11Bool reads the plain scalars YAML 1.1 takes for booleans beyond
// true and false.
func yaml11Bool(s string) (value, ok bool) {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON":
		return true, true
	case "n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return false, true
	}
	return false, false
}

func scalar(n *yaml.Node) (any, error) {
	if n.Style == 0 && n.ShortTag() == "!!str" { // plain, untagged
		if b, ok := yaml11Bool(n.Value); ok {
			return b, nil
		}
	}
	switch n.ShortTag() {
	case "!!str", "!!binary", "!!timestamp":
		// Timestamps stay text: the JSON decoder reads them as RFC 3339.
		if n.ShortTag() == "!!binary" {
			var s string
			if err := n.Decode(&s); err != nil {
				return nil, err
			}
			return s, nil
		}
		return n.Value, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
