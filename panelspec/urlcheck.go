package panelspec

import (
	"html"
	"strings"
	"unicode"
)

// URL policy. A URL prop may be http, https or relative; a link may also be
// mailto; an image may also be a data: URL of a raster image (PNG, JPEG,
// GIF, WebP). Everything else is refused, including every data: URL in a
// link, data:image/svg+xml (SVG can carry script) and javascript:, in any
// disguise. The check is deliberately more suspicious than a browser: it
// decodes HTML entities and percent-encoding (repeatedly) and drops every
// control, whitespace and invisible format character before reading the
// scheme, so "java\tscript:", "JaVaScRiPt:", "&#106;avascript:" and
// "%6Aavascript:" all read as "javascript:". The browser renderer checks
// again before it sets an attribute.

// URL contexts.
const (
	urlLink  = "link"
	urlImage = "image"
)

var rasterImageTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/jpg": true, "image/gif": true, "image/webp": true,
}

// checkURL returns why raw is not allowed in context, or "".
func checkURL(raw, context string) string {
	n := raw
	if !plainURL(raw) {
		n = normalizeURL(raw)
	} else if i := strings.IndexAny(raw, ":/?#"); i > 0 && raw[i] == ':' {
		// Only the scheme and, for data:, the media type need lower case.
		n = strings.ToLower(raw[:min(len(raw), 64)]) + raw[min(len(raw), 64):]
	}
	scheme := schemeOf(n)
	switch {
	case scheme == "" && (strings.HasPrefix(n, "//") || strings.HasPrefix(n, "\\") || strings.HasPrefix(n, "/\\") || strings.HasPrefix(n, "\\/")):
		// Browsers read "//host", "\\host" and "/\\host" as another site
		// with this page's scheme: not a relative URL at all.
		return "a URL starting with // or a backslash points at another site; write it in full (https://host/...) or as a path (/...)"
	case scheme == "":
		return ""
	case scheme == "http" || scheme == "https":
		if hasUserinfo(n) {
			return "a URL with user information (user@host) can disguise which site it opens; remove the part before @"
		}
		return ""
	case scheme == "mailto" && context == urlLink:
		return ""
	case scheme == "data" && context == urlImage:
		return checkDataImage(n)
	case scheme == "data":
		return "data: URLs are not allowed in links"
	}
	return "URL scheme " + quote(scheme+":") + " is not allowed; use http, https, mailto or a relative URL"
}

// hasUserinfo reports whether the authority of an absolute http(s) URL
// carries user information ("https://bank.example@evil.test/").
func hasUserinfo(n string) bool {
	_, rest, ok := strings.Cut(n, ":")
	if !ok {
		return false
	}
	rest = strings.TrimLeft(rest, "/\\")
	if i := strings.IndexAny(rest, "/\\?#"); i >= 0 {
		rest = rest[:i]
	}
	return strings.Contains(rest, "@")
}

// checkDataImage accepts only base64 raster images.
func checkDataImage(n string) string {
	rest := n[len("data:"):]
	comma := strings.IndexByte(rest, ',')
	if comma < 0 {
		return "malformed data: URL"
	}
	meta, payload := rest[:comma], rest[comma+1:]
	mime, params, _ := strings.Cut(meta, ";")
	if !rasterImageTypes[mime] {
		return "data: images must be PNG, JPEG, GIF or WebP, not " + quote(mime)
	}
	if params != "base64" {
		return "data: images must be base64 encoded"
	}
	for i := 0; i < len(payload); i++ {
		if c := payload[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return "data: image payload is not base64"
		}
	}
	return ""
}

// plainURL reports whether raw has nothing normalizeURL would change
// except letter case: printable ASCII without '&', '%' or spaces. Long data:
// URLs are plain, and this keeps them from being copied three times.
func plainURL(raw string) bool {
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= 0x20 || c >= 0x7f || c == '&' || c == '%' {
			return false
		}
	}
	return true
}

// normalizeURL undoes the encodings a scheme can hide behind and removes
// every character a browser might skip, then lower-cases the result.
func normalizeURL(s string) string {
	for range 4 {
		prev := s
		if strings.IndexByte(s, '&') >= 0 {
			s = html.UnescapeString(s)
		}
		if strings.IndexByte(s, '%') >= 0 {
			s = percentDecode(s)
		}
		if s == prev {
			break
		}
	}
	s = strings.Map(func(r rune) rune {
		if r <= 0x20 || (r >= 0x7f && r <= 0x9f) || unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	return strings.ToLower(s)
}

// percentDecode decodes every valid %XX sequence and leaves others alone.
func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// schemeOf returns the scheme of a normalized URL, or "" for a relative one.
func schemeOf(n string) string {
	i := strings.IndexAny(n, ":/?#")
	if i <= 0 || n[i] != ':' {
		return ""
	}
	return n[:i]
}

// isURLKey reports whether a prop name denotes a URL by convention, so
// custom and unknown types get the URL check without declaring x-url.
func isURLKey(k string) bool {
	switch k {
	case "href", "src", "url", "uri", "formAction", "formaction", "poster", "background":
		return true
	}
	if len(k) < 4 {
		return false
	}
	switch k[len(k)-1] {
	case 'l', 'L', 'f', 'c', 'i', 'I':
	default:
		return false
	}
	for _, suf := range []string{"Url", "URL", "Href", "Src", "Uri", "URI"} {
		if strings.HasSuffix(k, suf) {
			return true
		}
	}
	return false
}
