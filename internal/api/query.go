package api

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// queryParam is one query parameter a route accepts (routes.go declares
// them with each route) and the rule its value follows. checkInput refuses,
// before the handler runs, a parameter no route declaration names, one
// given twice and a value that breaks its rule: a parameter a handler
// silently ignored (dryrun=true for dry_run=true) or never saw (Go's
// url.Values drops a pair holding ';') once made a DELETE delete and a
// filter list everything.
type queryParam struct {
	name string
	rule string            // "must be ..." for the 400; empty for any text
	ok   func(string) bool // nil for any text
}

func textParam(name string) queryParam { return queryParam{name: name} }

func boolParam(name string) queryParam {
	return queryParam{name: name, rule: "must be true or false", ok: func(v string) bool {
		_, err := strconv.ParseBool(v)
		return err == nil
	}}
}

func intParam(name, rule string, lo, hi int64) queryParam {
	return queryParam{name: name, rule: rule, ok: func(v string) bool {
		n, err := strconv.ParseInt(v, 10, 64)
		return err == nil && n >= lo && n <= hi
	}}
}

func timeParam(name string) queryParam {
	return queryParam{name: name, rule: "must be an RFC 3339 time such as 2026-01-02T15:04:05Z", ok: func(v string) bool {
		_, err := time.Parse(time.RFC3339, v)
		return err == nil
	}}
}

func enumParam(name string, values ...string) queryParam {
	return queryParam{name: name, rule: "must be one of " + strings.Join(values, ", "), ok: func(v string) bool {
		return slices.Contains(values, v)
	}}
}

// The parameters several routes share.
var (
	dryRunParam = boolParam("dry_run")
	limitParam  = intParam("limit", "must be between 1 and 10000", 1, 10000)
	// A name cursor continues a list ordered by id; an id cursor the
	// audit log or the record of violations.
	nameCursorParam = textParam("cursor")
	idCursorParam   = intParam("cursor", "must be an entry id, a whole number >= 0", 0, 1<<63-1)
	afterIDParam    = intParam("after", "must be an entry id, a whole number >= 0", 0, 1<<63-1)
)

// query lists the parameters a route accepts; a route that takes none
// declares query().
func query(params ...queryParam) []queryParam { return params }

// Declarations of the routes with the longest lists, kept beside their
// vocabularies.
var (
	definitionListParams = query(enumParam("axis", validate.Axes()...), enumParam("entity_type", validate.EntityTypes()...),
		textParam("name"), boolParam("enabled"), textParam("group"), limitParam, nameCursorParam)
	statusParams = query(textParam("identity"), textParam("username"), textParam("client_id"), textParam("team"),
		enumParam("entity_type", validate.EntityTypes()...), textParam("name"), textParam("path"), textParam("method"),
		textParam("client_ip"), textParam("kind"))
	membershipListParams = query(textParam("group"), enumParam("subject_type", validate.SubjectTypes()...), limitParam, nameCursorParam)
	auditParams          = query(textParam("resource"), textParam("actor"), timeParam("since"), idCursorParam, afterIDParam, limitParam)
	eventParams          = query(textParam("subject"), textParam("definition"),
		enumParam("kind", ratelimit.EventKinds()...), enumParam("severity", ratelimit.EventSeverities()...),
		timeParam("since"), timeParam("until"), idCursorParam, afterIDParam, limitParam)
	counterSelectorParams = query(textParam("caller"), textParam("target"), textParam("definition"))
)

// queryProblems checks a request's raw query against the parameters its
// route accepts and returns every problem, in the order of the query.
func queryProblems(raw string, accepted []queryParam) []validate.FieldError {
	var (
		probs []validate.FieldError
		seen  = map[string]int{}
	)
	bad := func(field, format string, args ...any) {
		probs = append(probs, validate.FieldError{Field: field, Message: field + ": " + fmt.Sprintf(format, args...)})
	}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, keyErr := url.QueryUnescape(rawKey)
		if keyErr != nil {
			key = rawKey
		}
		// url.ParseQuery drops a pair holding ';' (once a separator, now
		// refused by Go), so the handler would never see it.
		if strings.Contains(pair, ";") {
			bad(key, "the pair %q holds a ';', which does not separate parameters: join them with '&' and write a ';' in a value as %%3B", pair)
			continue
		}
		value, valueErr := url.QueryUnescape(rawValue)
		if keyErr != nil || valueErr != nil {
			bad(key, "the pair %q is not valid percent-encoding", pair)
			continue
		}
		if fe := checkText("query parameter name", key); fe != nil {
			probs = append(probs, *fe)
			continue
		}
		i := slices.IndexFunc(accepted, func(p queryParam) bool { return p.name == key })
		seen[key]++
		switch {
		case seen[key] > 1:
			if i >= 0 && seen[key] == 2 {
				bad(key, "given more than once; give it once")
			}
		case i < 0:
			bad(key, "unknown query parameter; %s", acceptedWords(accepted))
		default:
			p := accepted[i]
			if fe := checkText(key, value); fe != nil {
				probs = append(probs, *fe)
			} else if value != "" && p.ok != nil && !p.ok(value) {
				bad(key, "%s (got %q)", p.rule, value)
			}
		}
	}
	return probs
}

// acceptedWords says which parameters a route takes.
func acceptedWords(accepted []queryParam) string {
	if len(accepted) == 0 {
		return "this route takes no query parameters"
	}
	names := make([]string, len(accepted))
	for i, p := range accepted {
		names[i] = p.name
	}
	return "this route takes " + strings.Join(names, ", ")
}
