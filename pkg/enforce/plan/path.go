package plan

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RoutePath is the path route definitions are matched against: the
// request URI's path normalized as PathSegments normalizes it (query and
// fragment dropped, percent-decoded once, backslashes as slashes,
// lower-cased, segment parameters and empty and dot segments dropped),
// written "/" + the segments joined by "/". /Auth//Email/./Login?x=1 is
// /auth/email/login; the root is "/". Normalizing it again changes
// nothing.
func RoutePath(uri string) string {
	_, segs := PathSegments(uri)
	return "/" + strings.Join(segs, "/")
}

// PathSegments reads a request URI (nginx's $request_uri: path and query,
// as the client sent them) as limits read it. raw is the path as sent: the
// query and fragment dropped, an absolute URI (http://host/path) reduced
// to its path. segments is that path normalized, one way, so that every
// spelling a gateway or a backend may read as the same path is counted as
// that path (a client must not dodge its limit by writing /SRV/MCP,
// /srv/mc%70, /srv;x/mcp or /srv\mcp):
//
//  1. the query and fragment are dropped, an absolute URI is reduced to
//     its path (raw);
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
//     segment is therefore always valid UTF-8 without control characters
//     or '/', and normalizing it again changes nothing.
//
// RoutePath joins the segments; pkg/httpgate names a call's target from
// them.
func PathSegments(uri string) (raw string, segments []string) {
	raw = uri
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if !strings.HasPrefix(raw, "/") {
		// An absolute-form request target, or garbage.
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			raw = u.EscapedPath()
		}
	}
	return raw, normalizeSegments(raw)
}

// normalizeSegments applies steps 2 to 7 of PathSegments to a raw path
// and returns its segments.
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
