package ratelimit

import (
	"bytes"
	"encoding/json"
)

// UnmarshalJSON decodes a definition strictly and with the reference's
// defaults. Strictly: an unknown field is an error wherever a definition is
// read (API bodies, apply files), because a typo such as "user_max_request"
// would otherwise create an unlimited group in silence. Defaults: a
// definition that does not say "enabled" is enabled, as in the reference.
func (d *Definition) UnmarshalJSON(b []byte) error {
	type plain Definition // no methods: no recursion
	p := plain{Enabled: true}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*d = Definition(p)
	return nil
}

// UnmarshalJSON decodes a membership strictly (see Definition.UnmarshalJSON).
func (m *Membership) UnmarshalJSON(b []byte) error {
	type plain Membership
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*m = Membership(p)
	return nil
}
