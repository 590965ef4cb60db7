package printer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// AppendStream writes rows to b the way a following command (audit
// --follow, events follow) streams them in format: a JSON line, a YAML
// document or name(row) per row. It reports false, writing nothing, for
// the table formats, which the caller lays out itself.
func AppendStream[T any](b *strings.Builder, format string, rows []T, name func(T) string) (bool, error) {
	switch format {
	case JSON:
		for _, r := range rows {
			line, err := json.Marshal(r)
			if err != nil {
				return true, err
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	case YAML:
		for _, r := range rows {
			doc, err := MarshalYAML(r)
			if err != nil {
				return true, err
			}
			b.WriteString("---\n")
			b.Write(doc)
		}
	case Name:
		for _, r := range rows {
			fmt.Fprintln(b, name(r))
		}
	default:
		return false, nil
	}
	return true, nil
}
