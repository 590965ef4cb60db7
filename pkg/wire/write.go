package wire

import "encoding/json"

// DryRunReport is the answer to a mutation sent with ?dry_run=true: the
// change the server would have made, computed in a transaction that was
// rolled back.
type DryRunReport struct {
	DryRun       bool   `json:"dry_run"`
	Action       string `json:"action"` // create, update, unchanged, delete, or a verb such as quarantine
	ResourceType string `json:"resource_type"`
	ID           string `json:"id"`
	// Before and After are the resource's JSON; null when it did not or
	// would not exist.
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
	// Changes lists the fields whose values differ, by JSON name; empty,
	// not null, when none does.
	Changes []Change `json:"changes"`
}

// Changed reports whether the mutation would change anything.
func (r *DryRunReport) Changed() bool { return r.Action != "unchanged" }

// Change is one field a change sets. From and To are JSON values (as
// decoded: nil, bool, float64, string, []any, map[string]any).
type Change struct {
	Field string `json:"field"`
	From  any    `json:"from"`
	To    any    `json:"to"`
}

// Deleted is the answer to a DELETE of a definition, membership or admin.
type Deleted struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}
