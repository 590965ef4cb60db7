package store

import (
	"encoding/json"
	"fmt"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// descriptorColumn is what the descriptor column (migration 015) holds
// for d: its descriptor fields beyond the name, as JSON, for a descriptor
// definition; NULL for every other.
func descriptorColumn(d ratelimit.Definition) any {
	if d.EntityType != ratelimit.EntityDescriptor {
		return nil
	}
	b, err := json.Marshal(ratelimit.StoredDescriptorFields(d.DescriptorFields))
	if err != nil {
		return nil // cannot happen: plain fields
	}
	return string(b)
}

// scanDescriptor fills d's descriptor fields from the column and its name.
func scanDescriptor(d *ratelimit.Definition, column []byte) error {
	if d.EntityType != ratelimit.EntityDescriptor {
		return nil
	}
	if len(column) > 0 {
		if err := json.Unmarshal(column, &d.DescriptorFields); err != nil {
			return fmt.Errorf("definition %q: descriptor column: %w", d.ID, err)
		}
	}
	domain, entries, err := ratelimit.ParseDescriptorName("name", d.Name)
	if err == nil {
		d.Domain, d.Descriptor = domain, entries
	}
	return nil
}
