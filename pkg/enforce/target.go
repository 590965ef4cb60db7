package enforce

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// ErrDisguisedControlPlane is ClassifyURI's answer for a path that is the
// control plane (/api) only once normalized: /%61pi/x/mcp, /API/x/mcp,
// /api;v=1/x. The control plane is never limited, so a spelling that
// reaches it only after decoding, case folding or dropping parameters would
// be a way around every limit: gateways refuse such paths.
var ErrDisguisedControlPlane = errors.New("the path names the control plane (/api) only in a disguised spelling")

// TargetFromURI classifies a request URI (nginx's $request_uri: path and
// query, as the client sent them) the way the reference gateway routes:
//
//   - /agent/<path>: the A2A agent "/<path>";
//   - a path ending in /mcp, /sse or /messages: the MCP server named by
//     the path before that suffix, without its outer slashes
//     (/peer/x/mcp is "peer/x");
//   - /api and /api/...: the control plane, never limited;
//   - anything else: no target.
//
// targetType is "" when there is no target. The path is normalized first,
// one way, so that every spelling a gateway or a backend may read as the
// same path is counted as that path (a client must not dodge its limit by
// writing /SRV/MCP, /srv/mc%70, /srv;x/mcp or /srv\mcp):
//
//  1. the query and fragment are dropped, an absolute URI
//     (http://host/path) is reduced to its path;
//  2. percent-encoding is decoded once (%2F is a slash);
//  3. a backslash is a slash;
//  4. the path is lower-cased (target names are case-insensitive:
//     internal/validate stores them lower-cased);
//  5. in each segment, parameters (from the first ';') are dropped and
//     surrounding whitespace is trimmed;
//  6. empty and "." segments are dropped and ".." removes the segment
//     before it;
//  7. what text cannot carry or a name must not contain is written back
//     percent-encoded, in lower-case hex: '%' itself as %25, control
//     characters (NUL included) and bytes that are not UTF-8 as %xx. A
//     name is therefore always valid UTF-8 without control characters, and
//     normalizing it again changes nothing.
//
// A path that is the control plane only after normalization is classified
// as the data-plane path it normalizes to; ClassifyURI reports it so that a
// gateway can refuse it instead.
func TargetFromURI(uri string) (targetType, name string) {
	targetType, name, _ = ClassifyURI(uri)
	return targetType, name
}

// ClassifyURI is TargetFromURI, with ErrDisguisedControlPlane for a path
// that reaches the control plane only in a disguised spelling. The control
// plane is /api or /api/... written literally, as the client sent it; any
// other spelling of it (encoded letters, other case, parameters,
// backslashes, dot segments or repeated slashes in front) is reported, with
// the data-plane target its normalized path names ("api/x" for
// /%61pi/x/mcp).
func ClassifyURI(uri string) (targetType, name string, err error) {
	return Classifier{}.Classify(uri)
}

// Classifier says which request paths name an MCP server or an A2A agent
// (ClassifyURI's rules, made configuration: rlapi's --mcp-suffixes and
// --a2a-prefixes). Its zero value is the default: today's rules.
type Classifier struct {
	// MCPSuffixes are the last path segments that make the path before
	// them an MCP server (default mcp, sse, messages).
	MCPSuffixes []string
	// A2APrefixes are the first path segments that make the path after
	// them an A2A agent (default agent).
	A2APrefixes []string
}

// DefaultMCPSuffixes and DefaultA2APrefixes are Classifier's defaults.
var (
	DefaultMCPSuffixes = []string{"mcp", "sse", "messages"}
	DefaultA2APrefixes = []string{"agent"}
)

// ParseClassifier reads comma-separated segment lists (empty: the
// default), lower-cased as paths are; a segment that is empty or holds a
// '/' is an error naming which list.
func ParseClassifier(mcpSuffixes, a2aPrefixes string) (Classifier, error) {
	var c Classifier
	var err error
	if c.MCPSuffixes, err = segmentList("mcp suffixes", mcpSuffixes); err != nil {
		return c, err
	}
	c.A2APrefixes, err = segmentList("a2a prefixes", a2aPrefixes)
	return c, err
}

func segmentList(what, s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, part := range strings.Split(s, ",") {
		seg := strings.ToLower(strings.TrimSpace(part))
		if seg == "" || strings.ContainsAny(seg, "/\\?#;%") || seg == "." || seg == ".." || seg == "api" {
			return nil, fmt.Errorf("%s: %q is not a path segment (one name without '/', not api)", what, part)
		}
		out = append(out, seg)
	}
	return out, nil
}

// Classify is ClassifyURI by c's rules.
func (cl Classifier) Classify(uri string) (targetType, name string, err error) {
	raw := uri
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if !strings.HasPrefix(raw, "/") {
		// An absolute-form request target, or garbage.
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			raw = u.EscapedPath()
		}
	}
	segs := normalizeSegments(raw)
	if len(segs) > 0 && segs[0] == "api" {
		if raw == "/api" || strings.HasPrefix(raw, "/api/") {
			return "", "", nil
		}
		err = ErrDisguisedControlPlane
	}
	targetType, name = cl.classify(segs)
	return targetType, name, err
}

// IsControlPlane reports whether uri is the control plane, /api or
// /api/... written literally (query and fragment aside): never limited,
// by routes neither.
func IsControlPlane(uri string) bool {
	raw := uri
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	return raw == "/api" || strings.HasPrefix(raw, "/api/")
}

// classify names the target of a normalized path.
func (cl Classifier) classify(segs []string) (targetType, name string) {
	if len(segs) == 0 {
		return "", ""
	}
	prefixes, suffixes := cl.A2APrefixes, cl.MCPSuffixes
	if prefixes == nil {
		prefixes = DefaultA2APrefixes
	}
	if suffixes == nil {
		suffixes = DefaultMCPSuffixes
	}
	if slices.Contains(prefixes, segs[0]) {
		if len(segs) == 1 {
			return "", ""
		}
		return ratelimit.EntityA2AAgent, "/" + strings.Join(segs[1:], "/")
	}
	if slices.Contains(suffixes, segs[len(segs)-1]) {
		if len(segs) == 1 {
			return "", ""
		}
		return ratelimit.EntityMCPServer, strings.Join(segs[:len(segs)-1], "/")
	}
	return "", ""
}

// normalizeSegments applies steps 2 to 7 of TargetFromURI to a raw path and
// returns its segments.
func normalizeSegments(raw string) []string {
	b := []byte(raw)
	dec := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '%' && i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]) {
			c = unhex(b[i+1])<<4 | unhex(b[i+2])
			i += 2
		}
		if c == '\\' {
			c = '/'
		}
		dec = append(dec, c)
	}
	var segs []string
	for _, seg := range strings.Split(lower(dec), "/") {
		if i := strings.IndexByte(seg, ';'); i >= 0 {
			seg = seg[:i]
		}
		seg = strings.TrimFunc(seg, unicode.IsSpace)
		switch seg {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, escapeSegment(seg))
		}
	}
	return segs
}

// lower lower-cases the valid UTF-8 in b, keeping any other byte as it is
// (strings.ToLower would turn it into U+FFFD, merging distinct paths).
func lower(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			sb.WriteByte(b[0])
		} else {
			sb.WriteRune(unicode.ToLower(r))
		}
		b = b[size:]
	}
	return sb.String()
}

// escapeSegment writes '%', control characters and bytes that are not
// UTF-8 percent-encoded.
func escapeSegment(s string) string {
	const hex = "0123456789abcdef"
	var sb strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '%' || unicode.IsControl(r) || (r == utf8.RuneError && size <= 1) {
			for _, c := range []byte(s[i : i+size]) {
				sb.WriteByte('%')
				sb.WriteByte(hex[c>>4])
				sb.WriteByte(hex[c&0xf])
			}
		} else {
			sb.WriteString(s[i : i+size])
		}
		i += size
	}
	return sb.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
