package ratelimit

import "time"

// Enforcement is the master switch: while Enabled is false every enforcer
// (every replica on the same database) allows every call and counts
// nothing, quarantine included.
type Enforcement struct {
	Enabled bool `json:"enabled" yaml:"enabled"`
	// Reason says why it was last switched (free text, at most 500
	// characters).
	Reason    string     `json:"reason" yaml:"reason"`
	UpdatedAt *time.Time `json:"updated_at" yaml:"updated_at"` // nil: never set, the default applies
	UpdatedBy string     `json:"updated_by" yaml:"updated_by"`
	// Version counts changes; 0 means never set. PUT takes it as If-Match.
	Version int64 `json:"version" yaml:"version"`
}

// MaxEnforcementReason bounds Enforcement.Reason.
const MaxEnforcementReason = 500
