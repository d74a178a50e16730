package httpbind

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/redact"
)

// TextResult is the result of a 2xx answer with a textual, non-JSON body
// (text/plain, text/csv, text/markdown, application/xml, ...): the text is
// kept and its type named, so a caller never mistakes it for JSON.
type TextResult struct {
	ContentType string `json:"contentType"`
	Text        string `json:"text"`
}

// decodeResponse turns a complete answer into a result or a coded error:
//   - a status outside 2xx is UPSTREAM_ERROR with the status and a bounded
//     excerpt of the body;
//   - an empty body (204, or 200 with nothing) is the result null;
//   - a JSON body (by content type, or untyped but parsing as JSON) is the
//     result as sent;
//   - a textual body is wrapped as TextResult;
//   - HTML and binary bodies are UPSTREAM_ERROR: HTML on a 2xx almost always
//     means the binding URL points at the web front end, and binary data has
//     no faithful JSON form.
func decodeResponse(req *http.Request, resp *http.Response, body []byte) ([]byte, error) {
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	mt = strings.ToLower(mt)
	// What the backend wrote reaches callers and models: the content type
	// and status text are masked like the body (see upstream).
	ct = redact.String(ct)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, upstream(req, resp, body, ct,
			"the backend answered %s %s with %s", req.Method, redactURL(req), redact.String(resp.Status))
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || req.Method == http.MethodHead {
		return []byte("null"), nil
	}
	switch {
	case isJSONType(mt) || ((mt == "" || mt == "text/plain") && looksJSON(trimmed)):
		if !json.Valid(trimmed) {
			return nil, upstream(req, resp, body, ct,
				"the backend answered %s %s with %s but its body is not valid JSON", req.Method, redactURL(req), ct)
		}
		return trimmed, nil
	case mt == "text/html" || mt == "application/xhtml+xml":
		return nil, upstream(req, resp, body, ct,
			"the backend answered %s %s with an HTML page, not JSON; check that the binding URL points at the API and not at the web front end", req.Method, redactURL(req))
	case isTextType(mt) && utf8.Valid(body):
		b, err := json.Marshal(TextResult{ContentType: ct, Text: string(body)})
		if err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInternal, "wrap text answer: %v", err)
		}
		return b, nil
	}
	if ct == "" {
		ct = "no Content-Type"
	}
	return nil, upstream(req, resp, body, ct,
		"the backend answered %s %s with %s, which is neither JSON nor text; switchboard tools return JSON", req.Method, redactURL(req), ct)
}

// looksJSON accepts an untyped or text/plain body that is a JSON object or
// array: sloppy backends (and net/http's sniffing) label JSON as text.
func looksJSON(b []byte) bool {
	return len(b) > 0 && (b[0] == '{' || b[0] == '[') && json.Valid(b)
}

func isJSONType(mt string) bool {
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "text/json"
}

func isTextType(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"):
		return true
	case mt == "application/xml", strings.HasSuffix(mt, "+xml"), mt == "application/yaml",
		mt == "application/x-yaml", mt == "application/javascript", mt == "application/x-ndjson":
		return true
	}
	return false
}

// upstream builds an UPSTREAM_ERROR carrying the status, content type and a
// bounded, valid-UTF-8 excerpt of the body. The request's headers are never
// included: they may hold secrets. The excerpt goes to the caller (and to a
// model), so secrets in the body are masked as the ledger masks them:
// before it is cut, so that a cut neither hides a JSON member's key nor
// leaves the head of a secret.
func upstream(req *http.Request, resp *http.Response, body []byte, ct, format string, args ...any) error {
	return switchboard.Errorf(switchboard.CodeUpstreamError, format, args...).WithDetails(map[string]any{
		"status":      resp.StatusCode,
		"contentType": ct,
		"excerpt":     excerpt(body),
		"url":         redactURL(req),
	})
}

// excerpt returns at most ExcerptBytes of body as valid UTF-8, its secrets
// masked (by key and value if it is JSON, by value otherwise); a body that
// is not text is described, not quoted.
func excerpt(body []byte) string {
	b := bytes.TrimSpace(body)
	if probe := b[:min(len(b), ExcerptBytes)]; bytes.IndexByte(probe, 0) >= 0 || !utf8.Valid(probe[:max(0, len(probe)-utf8.UTFMax)]) {
		return fmt.Sprintf("[%d bytes of binary data]", len(body))
	}
	if json.Valid(b) {
		b = redact.JSON(b)
	} else {
		b = []byte(redact.String(strings.ToValidUTF8(string(b), "\uFFFD")))
	}
	cut := len(b) > ExcerptBytes
	if cut {
		b = b[:ExcerptBytes]
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.Valid(b); i++ {
			b = b[:len(b)-1] // do not split the last rune
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if cut {
		s += "…"
	}
	return s
}
