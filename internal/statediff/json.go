package statediff

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
)

// JSONFields compares two objects of any type field by field through
// their JSON form, in field-name order, leaving out the fields named in
// ignore. A nil before or after (or a nil pointer) is an object that does
// not exist: every field of the other one differs.
func JSONFields(before, after any, ignore ...string) []Change {
	b, a := jsonObject(before), jsonObject(after)
	keys := map[string]bool{}
	for k := range b {
		keys[k] = true
	}
	for k := range a {
		keys[k] = true
	}
	var out []Change
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if slices.Contains(ignore, k) {
			continue
		}
		if !reflect.DeepEqual(b[k], a[k]) {
			out = append(out, Change{Field: k, From: b[k], To: a[k]})
		}
	}
	return out
}

// jsonObject is v's JSON form as a map; nil for nil and nil pointers.
func jsonObject(v any) map[string]any {
	if v == nil {
		return nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}
