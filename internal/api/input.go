package api

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/rlctl/rlctl/internal/validate"
)

// patternWildcard finds the {name} and {name...} wildcards of a route.
var patternWildcard = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)(?:\.\.\.)?\}`)

// checkText is the one check every path value and query parameter passes
// before a handler sees it: text PostgreSQL can store, which excludes NUL and
// invalid UTF-8 (SQLSTATE 22021). Ids and filters are percent-decoded, so
// %00 and %FF arrive as those bytes; without this check they reached the
// database and answered 500. Every other rule on an id or filter is the
// handler's, and answers 400 or 404 as it should.
func checkText(field, v string) *validate.FieldError {
	if utf8.ValidString(v) && !strings.ContainsRune(v, 0) {
		return nil
	}
	shown := v
	if len(shown) > 64 {
		shown = shown[:64] + "..."
	}
	return &validate.FieldError{Field: field,
		Message: fmt.Sprintf("%s: must be UTF-8 text without NUL characters (got %+q)", field, shown)}
}

// checkInput refuses, with 400 naming the field, a request whose path values
// (the wildcards of pattern) fail checkText or whose query breaks what the
// route accepts (queryProblems).
func (s *Server) checkInput(pattern string, accepted []queryParam, next http.Handler) http.Handler {
	var wildcards []string
	for _, m := range patternWildcard.FindAllStringSubmatch(pattern, -1) {
		wildcards = append(wildcards, m[1])
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var fields []validate.FieldError
		for _, name := range wildcards {
			if fe := checkText(name, r.PathValue(name)); fe != nil {
				fields = append(fields, *fe)
			}
		}
		if r.URL.RawQuery != "" {
			fields = append(fields, queryProblems(r.URL.RawQuery, accepted)...)
		}
		if len(fields) > 0 {
			s.writeProblem(w, r, &validate.Error{Errors: fields})
			return
		}
		next.ServeHTTP(w, r)
	})
}
