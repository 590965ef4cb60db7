// Package validate holds every rule of rlctl's data model in one place: which
// entity types each axis takes, which fields belong to which axis, the limit
// and window ranges, the config-time floors, the reserved quarantine names,
// and how names, subjects and identifiers are normalized.
//
// Both sides call it. The API server (rlapi) validates every definition,
// membership and admin before storing it, and every identifier it is handed
// before looking it up; the CLI (rlctl) runs the same checks before sending,
// so a user sees the same message whether the mistake is caught locally or by
// the server. Keeping the rules here, rather than spread across handlers and
// commands, is what keeps those two answers identical.
//
// Checking and normalizing happen together: each function returns the
// canonical form of what it was given (trimmed names, one spelling of every
// server and agent path, de-duplicated lists, the identifier built from the
// result), so two spellings of the same thing can never be stored as two
// things. A failure is an *Error listing every field at fault, each message
// naming its field, so one round trip shows the user everything to fix.
//
// One rule covers every name and subject (NameRule): 1 to 256 bytes of
// UTF-8 in any script, no whitespace and no control characters, with
// surrounding whitespace trimmed. Group names are also kept to ASCII
// letters, digits, '.', '_' and '-'.
package validate
