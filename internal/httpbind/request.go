package httpbind

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/propagation"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/tracing"
)

// build maps input onto a request for b.
func (c *Client) build(ctx context.Context, b *switchboard.HTTPBinding, input []byte) (*http.Request, error) {
	fields, err := decodeObject(input)
	if err != nil {
		return nil, err
	}
	method := strings.ToUpper(b.Method)
	if method == "" {
		method = http.MethodPost
	}
	target, err := fillURL(b.URL, fields)
	if err != nil {
		return nil, err
	}
	var body []byte
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodDelete:
		if len(fields) > 0 {
			target = appendQuery(target, fields)
		}
	default:
		if body, err = encodeBody(fields); err != nil {
			return nil, err
		}
	}
	req, err := newRequest(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	for name, v := range b.Headers {
		val := v.Value
		if v.Env != "" {
			var ok bool
			if val, ok = c.lookup(v.Env); !ok || val == "" {
				// A daemon configuration problem, not the caller's input:
				// the tool cannot run here until the variable is set.
				return nil, switchboard.Errorf(switchboard.CodeToolUnavailable,
					"header %s of this tool's binding reads environment variable %s, which is not set in the daemon's environment; set it and restart the daemon", name, v.Env)
			}
		}
		req.Header.Set(name, val)
	}
	// The trace context is the call's: the backend's spans continue the
	// call's execute_tool span (W3C traceparent), never a binding's header.
	req.Header.Del("Traceparent")
	req.Header.Del("Tracestate")
	tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	// After the binding's headers: the key must be the call's, always.
	if k, ok := ctx.Value(keyCtx{}).(string); ok && k != "" {
		req.Header.Set(IdempotencyHeader, k)
	}
	if x := b.TokenExchange; x != nil {
		tok, err := c.exchanged(ctx, *x)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	// And the assertion: who acts for whom is the daemon's to say, never a
	// header the binding could set.
	req.Header.Del(AssertionHeader)
	if c.assert != nil {
		call, _ := ctx.Value(callCtx{}).(Call)
		call.Audience = b.Audience
		if call.Audience == "" {
			call.Audience = req.URL.Scheme + "://" + req.URL.Host
		}
		tok, err := c.assert(ctx, call)
		if err != nil {
			return nil, switchboard.Errorf(switchboard.CodeUnavailable, "sign the request's assertion: %v", err)
		}
		req.Header.Set(AssertionHeader, tok)
	}
	return req, nil
}

// exchanged is the provider's token for the caller's user and x's
// audience, from the caller's own OAuth token.
func (c *Client) exchanged(ctx context.Context, x switchboard.TokenExchange) (string, error) {
	subject, _ := ctx.Value(subjectCtx{}).(string)
	if subject == "" {
		return "", switchboard.Errorf(switchboard.CodeUnauthorized,
			"this tool's backend takes a token for the user, exchanged from the caller's own OAuth access token; this call has none to exchange (only an MCP client signed in at the daemon's identity provider does, while its request is open — not an agent token, the admin token, a tab, or a call resumed after a restart)")
	}
	if c.exchange == nil {
		return "", switchboard.Errorf(switchboard.CodeToolUnavailable,
			"this tool's binding exchanges the caller's token at the identity provider, and the daemon has no exchange client: start serve with --oauth-exchange-client and $SWITCHBOARD_OAUTH_EXCHANGE_SECRET")
	}
	return c.exchange(ctx, subject, x)
}

type subjectCtx struct{}

// WithSubjectToken returns ctx carrying the caller's OAuth access token,
// which a binding with tokenExchange trades for the backend's. It lives
// only in memory, for the call's life in this process: never stored,
// logged or sent anywhere but the provider's token endpoint.
func WithSubjectToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, subjectCtx{}, token)
}

// AssertionHeader carries the signed "who acts for whom" of the call
// (package assertion); the same name as assertion.Header.
const AssertionHeader = "Switchboard-Assertion"

// Call is what a request is made for, as the assertion says it. Audience
// is filled from the binding (its audience, else its URL's origin).
type Call struct {
	Caller     switchboard.Principal
	Tool       string
	Invocation string
	Audience   string
}

type callCtx struct{}

// WithCall returns ctx carrying the call an assertion is signed for.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callCtx{}, c)
}

// IdempotencyHeader carries a call's stable key to the backend (the
// Stripe convention): a backend that honours it runs a retried request
// once.
const IdempotencyHeader = "Idempotency-Key"

type keyCtx struct{}

// WithIdempotencyKey returns ctx carrying the key that Call sends as the
// Idempotency-Key header: the same for every request made for one
// invocation, whoever retries it.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtx{}, key)
}

// decodeObject decodes the input object keeping each value's raw JSON, so
// numbers reach the backend exactly as the caller wrote them.
func decodeObject(input []byte) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	input = bytes.TrimSpace(input)
	if len(input) == 0 || bytes.Equal(input, []byte("null")) {
		return fields, nil
	}
	if err := json.Unmarshal(input, &fields); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "tool input must be a JSON object: %v", err)
	}
	return fields, nil
}

// fillURL substitutes {field} placeholders. In the path a placeholder is
// required; in the query a `k={field}` pair is dropped when the field is
// absent or null. Used fields are removed from fields.
func fillURL(tmpl string, fields map[string]json.RawMessage) (string, error) {
	path, query, hasQuery := strings.Cut(tmpl, "?")
	var b strings.Builder
	b.Grow(len(tmpl) + 16)
	// Placeholders fill the path only: never the scheme or host, which
	// would let the input aim the request at any server.
	rest := path
	if i := strings.Index(path, "://"); i >= 0 {
		end := len(path)
		if j := strings.IndexByte(path[i+3:], '/'); j >= 0 {
			end = i + 3 + j
		}
		if strings.ContainsAny(path[:end], "{}") {
			return "", switchboard.Errorf(switchboard.CodeToolUnavailable, "the binding URL has a placeholder in its scheme or host; register the tool again with placeholders only in the path and query")
		}
		b.WriteString(path[:end])
		rest = path[end:]
	}
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			b.WriteString(rest)
			break
		}
		name := rest[i+1 : i+j]
		b.WriteString(rest[:i])
		raw, ok := fields[name]
		if !ok || isNull(raw) {
			return "", switchboard.Errorf(switchboard.CodeInvalidInput,
				"the binding URL needs input field %q for its path; give it a value", name).
				WithDetails(map[string]any{"pointer": "/" + pointerEscape(name)})
		}
		s, err := scalarText(name, raw)
		if err != nil {
			return "", err
		}
		// PathEscape keeps "." and "..", which a backend would resolve as
		// path steps: /projects/../tasks reaches another route.
		if s == "." || s == ".." || s == "" {
			return "", switchboard.Errorf(switchboard.CodeInvalidInput,
				"input field %q fills a path segment and cannot be %q", name, s).
				WithDetails(map[string]any{"pointer": "/" + pointerEscape(name)})
		}
		b.WriteString(url.PathEscape(s))
		delete(fields, name)
		rest = rest[i+j+1:]
	}
	if !hasQuery {
		return b.String(), nil
	}
	var pairs []string
	for _, pair := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(pair, "=")
		if !strings.HasPrefix(v, "{") || !strings.HasSuffix(v, "}") {
			if pair != "" {
				pairs = append(pairs, pair)
			}
			continue
		}
		name := v[1 : len(v)-1]
		raw, ok := fields[name]
		delete(fields, name)
		if !ok || isNull(raw) {
			continue
		}
		vals, err := queryValues(name, raw)
		if err != nil {
			return "", err
		}
		for _, s := range vals {
			pairs = append(pairs, k+"="+url.QueryEscape(s))
		}
	}
	if len(pairs) > 0 {
		b.WriteByte('?')
		b.WriteString(strings.Join(pairs, "&"))
	}
	return b.String(), nil
}

// appendQuery adds the remaining fields as query parameters, in name order
// so requests are reproducible: arrays repeat their key (form, explode),
// objects travel as JSON text, null is left out.
func appendQuery(target string, fields map[string]json.RawMessage) string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	q := url.Values{}
	for _, k := range names {
		raw := fields[k]
		if isNull(raw) {
			continue
		}
		vals, err := queryValues(k, raw)
		if err != nil { // an object or nested array: send it as JSON text
			vals = []string{string(bytes.TrimSpace(raw))}
		}
		q[k] = vals
	}
	if len(q) == 0 {
		return target
	}
	sep := "?"
	if strings.Contains(target, "?") {
		sep = "&"
	}
	return target + sep + q.Encode()
}

// encodeBody renders the remaining fields as a JSON object, keys sorted.
func encodeBody(fields map[string]json.RawMessage) ([]byte, error) {
	if len(fields) == 0 {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "encode the request body: %v", err)
	}
	return b, nil
}

// scalarText renders a string, number or boolean for a URL.
func scalarText(name string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", switchboard.Errorf(switchboard.CodeInvalidInput, "input field %q: %v", name, err)
		}
		return s, nil
	case '{', '[':
		return "", switchboard.Errorf(switchboard.CodeInvalidInput,
			"input field %q fills a URL placeholder, so it must be a string, number or boolean", name).
			WithDetails(map[string]any{"pointer": "/" + pointerEscape(name)})
	}
	return string(raw), nil // number, true, false
}

// queryValues renders a scalar or an array of scalars as query values.
func queryValues(name string, raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		s, err := scalarText(name, raw)
		return []string{s}, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "input field %q: %v", name, err)
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		if isNull(it) {
			continue
		}
		s, err := scalarText(name, it)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func pointerEscape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return pointerEscaper.Replace(s)
}

// pointerEscaper is built once: building one per call cost microseconds.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
