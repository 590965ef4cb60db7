package wire

import "time"

// Counter is one enforcement counter: a gate's count in one window, or a
// token bucket's state (Algorithm token_bucket: FullAt and, when the
// server knows the bucket's definition, Tokens of Burst; Count is 0).
type Counter struct {
	Key string `json:"key"`
	// WindowIndex is floor(epoch seconds / WindowSeconds).
	WindowIndex   int64     `json:"window_index"`
	WindowSeconds int       `json:"window_seconds,omitzero"`
	WindowStart   time.Time `json:"window_start,omitzero"`
	Count         int64     `json:"count"`
	ExpiresAt     time.Time `json:"expires_at"`
	// DefinitionID names the definition behind a target or shadow counter;
	// empty for caller and caller_target buckets, which the definitions of
	// one window share.
	DefinitionID string `json:"definition_id,omitempty"`
	// Algorithm is "sliding_window" or "token_bucket"; empty for a fixed
	// window.
	Algorithm string `json:"algorithm,omitempty"`
	// FullAt is when a token bucket is full again; nil when it is full.
	FullAt *time.Time `json:"full_at,omitempty"`
	// Tokens is the whole tokens a token bucket has left, of Burst; nil
	// when the server does not say (caller buckets).
	Tokens *int64 `json:"tokens,omitempty"`
	Burst  int64  `json:"burst,omitempty"`
}

// CounterList is the answer of GET /api/rate-limit-counters, and the
// before-image of a counters reset in the audit log and in dry runs.
type CounterList struct {
	Counters []Counter `json:"counters"`
	// Truncated says more counters matched than the list holds (the
	// server's limit), or, with counters on Redis, that the server stopped
	// looking before it had seen every counter (its scan is bounded).
	Truncated bool `json:"truncated,omitempty"`
}

// CountersReset is the answer of DELETE /api/rate-limit-counters.
type CountersReset struct {
	Reset bool `json:"reset"`
	// Removed is how many counters were set back to zero.
	Removed int64 `json:"removed"`
	// Truncated says the server stopped looking before it had seen every
	// counter (counters on Redis, a bounded scan): some of the subject's
	// counters may remain; reset again.
	Truncated bool `json:"truncated,omitempty"`
}
