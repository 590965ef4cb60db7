package httpgate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rlctl/rlctl/pkg/enforce"
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
// as enforce.PathSegments normalizes it (query and fragment dropped,
// percent-decoded once, backslashes as slashes, lower-cased, segment
// parameters and empty and dot segments dropped, what text cannot carry
// percent-encoded), so that every spelling a gateway or a backend may read
// as the same path is counted as that path (a client must not dodge its
// limit by writing /SRV/MCP, /srv/mc%70, /srv;x/mcp or /srv\mcp). A name
// is therefore always valid UTF-8 without control characters, and
// normalizing it again changes nothing.
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
	raw, segs := enforce.PathSegments(uri)
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
