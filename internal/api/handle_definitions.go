package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// definitionID reads the URL id and returns its canonical form, or the raw
// id when it does not parse (a lookup of it then simply finds nothing).
func definitionID(r *http.Request) (raw, canonical string) {
	raw = r.PathValue("id")
	if c, err := validate.DefinitionID(raw); err == nil {
		return raw, c
	}
	return raw, raw
}

func (s *Server) handleGetDefinition() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, id := definitionID(r)
		d, err := s.store.GetDefinition(r.Context(), id)
		if err != nil {
			s.writeProblem(w, r, orNotFound(err, "definition", id))
			return
		}
		setETag(w, d.Version)
		encode(w, http.StatusOK, shown(d))
	})
}

// shown is a definition as every response shows it: with its algorithm
// always named (fixed_window when it names none), so a client never has to
// know the default.
func shown(d ratelimit.Definition) ratelimit.Definition {
	d.Algorithm = d.AlgorithmOrDefault()
	return d
}

// shownAll is shown of each of defs, in place.
func shownAll(defs []ratelimit.Definition) []ratelimit.Definition {
	for i := range defs {
		defs[i] = shown(defs[i])
	}
	return defs
}

func (s *Server) handlePutDefinition() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rawID, urlID := definitionID(r)
		body, err := decode[ratelimit.Definition](w, r, false)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		d, err := validate.Definition(body, s.cfg.Floors)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if d.Key() != urlID {
			s.writeProblem(w, r, badRequest(fmt.Sprintf("URL id %q does not match the id built from the body %q", rawID, d.Key()),
				validate.FieldError{Field: "id", Message: fmt.Sprintf("id: URL id %q does not match the id built from the body %q", rawID, d.Key())}))
			return
		}
		version, err := ifMatch(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		var res store.PutResult[ratelimit.Definition]
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			var err error
			res, err = q.PutDefinition(r.Context(), d, store.Write{Actor: actorName(r.Context()), IfVersion: version})
			if err != nil {
				return change{}, err
			}
			return putChange("definition", d.Key(), res), nil
		})
		s.answer(w, r, ch, dry, err, func() {
			writePut(w, r, "/api/rate-limits/", d.Key(), res.After.Version, res.Created() && !res.Unchanged, shown(res.After))
		})
	})
}

// putChange turns an upsert's result into the change it made.
func putChange[T any](resourceType, id string, res store.PutResult[T]) change {
	ch := change{action: "update", resourceType: resourceType, id: id, before: res.Before, after: res.After}
	switch {
	case res.Unchanged:
		ch.action = "unchanged"
	case res.Created():
		ch.action = "create"
	}
	return ch
}

// writePut answers an upsert: 201 with Location when it created, else 200.
func writePut[T any](w http.ResponseWriter, r *http.Request, base, id string, version int64, created bool, v T) {
	setETag(w, version)
	if created {
		w.Header().Set("Location", base+url.PathEscape(id))
		encode(w, http.StatusCreated, v)
		return
	}
	encode(w, http.StatusOK, v)
}

func (s *Server) handleDeleteDefinition() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, id := definitionID(r)
		if ratelimit.IsSentinel(id) {
			s.writeProblem(w, r, errorf(http.StatusConflict, "reserved", "Reserved definition",
				fmt.Sprintf("'%s' is a reserved quarantine definition and cannot be deleted; disable it to turn quarantine off (rate-limit-disable --id %s)", id, id)))
			return
		}
		version, err := ifMatch(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			before, err := q.DeleteDefinition(r.Context(), id, store.Write{IfVersion: version})
			if err != nil {
				return change{}, orNotFound(err, "definition", id)
			}
			return change{action: "delete", resourceType: "definition", id: id, before: before}, nil
		})
		s.answer(w, r, ch, dry, err, func() {
			encode(w, http.StatusOK, wire.Deleted{Deleted: true, ID: id})
		})
	})
}

func (s *Server) handleSetEnabled() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, id := definitionID(r)
		raw := r.URL.Query().Get("enabled")
		enabled, err := strconv.ParseBool(raw)
		if err != nil {
			s.writeProblem(w, r, badRequest(fmt.Sprintf("enabled: must be true or false (got %q)", raw),
				validate.FieldError{Field: "enabled", Message: fmt.Sprintf("enabled: must be true or false (got %q)", raw)}))
			return
		}
		version, err := ifMatch(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		var after ratelimit.Definition
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			a, before, err := q.SetDefinitionEnabled(r.Context(), id, enabled, store.Write{Actor: actorName(r.Context()), IfVersion: version})
			if err != nil {
				return change{}, orNotFound(err, "definition", id)
			}
			after = a
			action := "disable"
			if enabled {
				action = "enable"
			}
			if before.Enabled == enabled {
				action = "unchanged"
			}
			return change{action: action, resourceType: "definition", id: id, before: before, after: a}, nil
		})
		s.answer(w, r, ch, dry, err, func() {
			setETag(w, after.Version)
			encode(w, http.StatusOK, shown(after))
		})
	})
}

// listLimit reads limit (1..10000); 0 when absent, meaning "everything".
func listLimit(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 10000 {
		return 0, badRequest(fmt.Sprintf("limit: must be between 1 and 10000 (got %q)", v))
	}
	return n, nil
}

func optionalBool(r *http.Request, name string) (*bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return nil, badRequest(fmt.Sprintf("%s: must be true or false (got %q)", name, v))
	}
	return &b, nil
}

func (s *Server) handleListDefinitions() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, err := listLimit(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		enabled, err := optionalBool(r, "enabled")
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		f := store.DefinitionFilter{Axis: q.Get("axis"), EntityType: q.Get("entity_type"), Name: q.Get("name"),
			Enabled: enabled, Group: q.Get("group"), After: q.Get("cursor")}
		if f.Name != "" && f.EntityType != "" {
			if n, err := validate.TargetName(f.EntityType, f.Name); err == nil {
				f.Name = n
			}
		}
		streamList(s, w, r, "definitions", limit, f.After, func(after string, n int) ([]ratelimit.Definition, error) {
			f.After, f.Limit = after, n
			defs, err := s.store.ListDefinitions(r.Context(), f)
			return shownAll(defs), err
		}, func(d ratelimit.Definition) string { return d.ID })
	})
}

// listChunk is how many rows a list reads per database round trip. The
// rows are read into memory and the connection is released before they
// are written, so a client that reads slowly (or not at all) holds a
// goroutine and at most one chunk, never a database connection.
const listChunk = 500

// chunkWriteTimeout bounds writing one chunk: a client that takes longer
// to read 500 rows is cut off rather than held for the server's whole
// write timeout.
const chunkWriteTimeout = 30 * time.Second

// listWriteDeadline bounds the write of a list read whole into memory (the
// audit log's pages, quarantine, tokens) as a chunk's: its connection is
// released already, and a client that does not read is cut off.
func listWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(chunkWriteTimeout))
}

// streamList writes {"<key>": [...], "next_cursor": "..."}: chunk by
// chunk, each read with page (rows after the cursor, at most n, in id
// order) and then written under its own write deadline, so memory does not
// grow with the list and no connection waits on the client. limit 0 is the
// whole list; otherwise the page holds limit rows and next_cursor is set
// when more follow. Each chunk is its own read: a list written while rows
// change shows every row in its state at one moment, not the whole list at
// one moment.
func streamList[T any](s *Server, w http.ResponseWriter, r *http.Request, key string, limit int, after string,
	page func(after string, n int) ([]T, error), cursorOf func(T) string) {
	var (
		written, started = 0, false
		cursor           = after
		next             string
		buf              bytes.Buffer
		enc              = json.NewEncoder(&buf)
		rc               = http.NewResponseController(w)
	)
	for {
		n := listChunk
		if limit > 0 {
			n = min(n, limit-written)
		}
		rows, err := page(cursor, n+1) // one more tells whether more follow
		if err != nil {
			if !started {
				s.writeProblem(w, r, err)
				return
			}
			// Headers are gone: cut the connection so the client sees a
			// truncated body, never a complete-looking partial list.
			s.log.Error("list aborted mid-stream", "request_id", requestID(r.Context()), "err", err)
			panic(http.ErrAbortHandler)
		}
		more := len(rows) > n
		if more {
			rows = rows[:n]
		}
		buf.Reset()
		if !started {
			fmt.Fprintf(&buf, `{%q:[`, key)
		}
		for _, v := range rows {
			if written > 0 {
				buf.WriteByte(',')
			}
			if err := enc.Encode(v); err != nil {
				s.log.Error("list row does not encode", "request_id", requestID(r.Context()), "err", err)
				panic(http.ErrAbortHandler)
			}
			written++
			cursor = cursorOf(v)
		}
		done := !more || (limit > 0 && written >= limit)
		if done {
			buf.WriteByte(']')
			if more {
				next = cursor
				fmt.Fprintf(&buf, `,"next_cursor":%q`, next)
			}
			buf.WriteString("}\n")
		}
		_ = rc.SetWriteDeadline(time.Now().Add(chunkWriteTimeout))
		if !started {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			// The client is gone or too slow; nothing more can reach it.
			s.log.Debug("list write failed", "request_id", requestID(r.Context()), "err", err)
			panic(http.ErrAbortHandler)
		}
		if done {
			return
		}
	}
}

// handleStatus says which definitions apply to a caller, a target, a
// path or a group. Everything but a group's own listing is read from the
// enforcer's plan of the call (enforce.Enforcer.Explain): the groups, the
// teams, everyone, networks, tool globs, server groups and routes are
// resolved by the code that decides, so status cannot disagree with a
// gateway's decision.
func (s *Server) handleStatus() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res := wire.StatusResult{Identity: q.Get("identity"), Username: q.Get("username"), ClientID: q.Get("client_id"), Team: strings.TrimSpace(q.Get("team")),
			Groups: []string{}, Definitions: []ratelimit.Definition{},
			Caller: []ratelimit.Definition{}, Target: []ratelimit.Definition{}, CallerTarget: []ratelimit.Definition{}}
		ctx := r.Context()
		seen := map[string]bool{}
		add := func(d ratelimit.Definition) {
			d = shown(d)
			if seen[d.ID] {
				return
			}
			seen[d.ID] = true
			res.Definitions = append(res.Definitions, d)
			switch d.Axis {
			case ratelimit.AxisCaller:
				res.Caller = append(res.Caller, d)
			case ratelimit.AxisTarget:
				res.Target = append(res.Target, d)
			case ratelimit.AxisCallerTarget:
				res.CallerTarget = append(res.CallerTarget, d)
			}
		}
		if res.Identity != "" {
			// A group named outright: its own definitions, a listing.
			res.Groups = []string{res.Identity}
			for _, axis := range []string{ratelimit.AxisCaller, ratelimit.AxisCallerTarget, ratelimit.AxisQuarantine} {
				f := store.DefinitionFilter{Axis: axis, EntityType: ratelimit.EntityGroup, Name: res.Identity}
				if err := s.store.EachDefinition(ctx, f, func(d ratelimit.Definition) error { add(d); return nil }); err != nil {
					s.writeProblem(w, r, err)
					return
				}
			}
		}
		call, named, err := statusCall(q, res.Identity == "")
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if named != nil {
			// A name no call can carry (a group, a server group, a
			// route tier or a descriptor): the definitions of that name.
			if err := s.store.EachDefinition(ctx, *named, func(d ratelimit.Definition) error { add(d); return nil }); err != nil {
				s.writeProblem(w, r, err)
				return
			}
		}
		if call == nil {
			encode(w, http.StatusOK, res)
			return
		}
		if s.enforcer == nil {
			s.writeProblem(w, r, errorf(http.StatusServiceUnavailable, "enforcement-unavailable", "Decisions are not served here",
				"this rlapi has no enforcer, and status is read from the enforcer's plan of the call"))
			return
		}
		plan, err := s.enforcer.Explain(ctx, *call)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		for _, g := range plan.Groups {
			if !slices.Contains(res.Groups, g.Name) {
				res.Groups = append(res.Groups, g.Name)
			}
		}
		if call.Username != "" || call.ClientID != "" || call.Team != "" || call.ClientIP != "" {
			res.MatchedBy = map[string]string{}
		}
		for _, pd := range plan.Definitions {
			add(pd.Definition)
			if pd.MatchedBy != "" && res.MatchedBy != nil {
				if _, ok := res.MatchedBy[pd.Definition.ID]; !ok {
					res.MatchedBy[pd.Definition.ID] = pd.MatchedBy
				}
			}
			if pd.OverriddenBy != "" {
				if res.OverriddenBy == nil {
					res.OverriddenBy = map[string]string{}
				}
				res.OverriddenBy[pd.Definition.ID] = pd.OverriddenBy
			}
			if pd.Matched != "" && !slices.ContainsFunc(res.Matches, func(m wire.StatusMatch) bool { return m.DefinitionID == pd.Definition.ID }) {
				res.Matches = append(res.Matches, wire.StatusMatch{DefinitionID: pd.Definition.ID, Pattern: pd.Matched})
			}
		}
		if plan.Stop != nil && plan.Stop.Reason == enforce.ReasonQuarantined {
			// The quarantine's own switch is a definition too.
			group := ratelimit.GroupQuarantineCallers
			if plan.Stop.Scope == "target" {
				group = ratelimit.GroupQuarantineTargets
			}
			f := store.DefinitionFilter{Axis: ratelimit.AxisQuarantine, EntityType: ratelimit.EntityGroup, Name: group}
			if err := s.store.EachDefinition(ctx, f, func(d ratelimit.Definition) error { add(d); return nil }); err != nil {
				s.writeProblem(w, r, err)
				return
			}
		}
		encode(w, http.StatusOK, res)
	})
}

// statusCall reads the call a status query describes: its caller
// (username, client_id, team, client_ip, unless a group is named instead),
// its target (entity_type mcp_server or a2a_agent and name; mcp_tool or
// a2a_skill names <target>:<tool>), and its method, path and kind. nil
// when the query names none of them. named is the definition filter of an
// entity_type no call carries (group, server_group, route, descriptor, and
// the user, client and team definitions naming one subject).
func statusCall(q url.Values, withCaller bool) (call *enforce.Call, named *store.DefinitionFilter, err error) {
	var c enforce.Call
	if withCaller {
		c.Username, c.ClientID, c.Team, c.ClientIP = q.Get("username"), q.Get("client_id"), strings.TrimSpace(q.Get("team")), q.Get("client_ip")
	}
	c.Method, c.Path, c.Kind = q.Get("method"), q.Get("path"), q.Get("kind")
	if et, name := q.Get("entity_type"), q.Get("name"); et != "" && name != "" {
		n, err := validate.TargetName(et, name)
		if err != nil {
			return nil, nil, err
		}
		switch et {
		case ratelimit.EntityMCPServer, ratelimit.EntityA2AAgent:
			c.TargetType, c.TargetName = et, n
		case ratelimit.EntityMCPTool, ratelimit.EntityA2ASkill:
			c.TargetType = ratelimit.EntityMCPServer
			if et == ratelimit.EntityA2ASkill {
				c.TargetType = ratelimit.EntityA2AAgent
			}
			c.TargetName, c.Tool = ratelimit.SplitToolName(n)
		case ratelimit.EntityUser, ratelimit.EntityClient, ratelimit.EntityTeam:
			// The definitions naming that one subject, on either caller axis.
			named = &store.DefinitionFilter{EntityType: et, Name: n}
		default:
			named = &store.DefinitionFilter{Axis: ratelimit.AxisTarget, EntityType: et, Name: n}
		}
	}
	if c == (enforce.Call{Method: c.Method, Kind: c.Kind}) {
		return nil, named, nil
	}
	norm, err := c.Normalize()
	if err != nil {
		return nil, nil, err
	}
	return &norm, named, nil
}

// orNotFound words a store ErrNotFound for the user.
func orNotFound(err error, what, id string) error {
	if isNotFoundErr(err) {
		return notFound(what, id)
	}
	return err
}
