// Package redact masks secrets: object members whose key names a secret,
// token-looking strings anywhere, and the same in log records.
package redact

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
)

// Redacted replaces a secret.
const Redacted = "[redacted]"

// secretKeys are object keys whose string values are secrets, compared
// lowercase with '-' and '_' removed, as substrings ("X-Api-Key" holds
// "apikey"). Non-string values (counts such as "inputTokens": 12) are kept.
var secretKeys = []string{
	"password", "passwd", "passphrase", "secret", "token", "apikey", "authorization",
	"cookie", "credential", "privatekey", "accesskey", "sessionkey", "signature", "bearer",
}

// secretValues are token-looking strings redacted wherever they appear:
// provider API keys (OpenAI, Anthropic, Stripe), bearer credentials, JWTs, cloud and chat tokens,
// switchboard's own tokens, and key=value pairs naming a secret.
var secretValues = regexp.MustCompile(strings.Join([]string{
	`\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}`,                                     // OpenAI, Anthropic
	`\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}`,                                 // Stripe secret and restricted keys
	`\bwhsec_[A-Za-z0-9+/=]{16,}`,                                                // webhook signing secrets (Stripe, Svix)
	`(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}`,                                      // Authorization values
	`(?i)\bbasic\s+[A-Za-z0-9+/=]{12,}`,                                          // basic auth
	`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+`,                  // JWT
	`\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}`,                     // GitHub
	`\bxox[abprs]-[A-Za-z0-9-]{10,}`,                                             // Slack
	`\bAKIA[0-9A-Z]{16}\b`,                                                       // AWS access key id
	`\bAIza[0-9A-Za-z_-]{35}\b`,                                                  // Google API key
	`\b(?:sbt|ses)_[0-9a-f]{16,}\.[A-Za-z0-9_-]{20,}`,                            // switchboard tokens
	`(?i)\b(?:password|passwd|secret|token|api[_-]?key|session|sid)=[^\s&;,"']+`, // key=value
}, "|"))

// String masks token-looking substrings of s.
func String(s string) string {
	if !secretValues.MatchString(s) {
		return s
	}
	return secretValues.ReplaceAllStringFunc(s, func(m string) string {
		// Keep the name of a key=value pair, so a reader sees what was hidden.
		if i := strings.IndexByte(m, '='); i > 0 && !strings.HasPrefix(m, "eyJ") {
			return m[:i+1] + Redacted
		}
		return Redacted
	})
}

// JSON returns doc with secrets masked: string values under secret-named
// keys and token-looking strings anywhere. Invalid JSON is returned masked
// as a string would be. The result keeps no formatting of doc.
func JSON(doc json.RawMessage) json.RawMessage { return redactJSON(doc, true) }

// Values returns doc with token-looking strings masked wherever they
// appear, but no value masked for its key's name alone. It is for
// declarations such as a JSON Schema, whose keys under "properties" name
// fields ("password": {"type": "string"}) rather than hold secrets, yet
// whose "default" or "examples" may still carry a literal token.
func Values(doc json.RawMessage) json.RawMessage { return redactJSON(doc, false) }

// redactJSON masks doc; byKey says strings under secret-named keys are
// masked too.
func redactJSON(doc json.RawMessage, byKey bool) json.RawMessage {
	if len(bytes.TrimSpace(doc)) == 0 {
		return doc
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // keep large numbers exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return json.RawMessage(String(string(doc)))
	}
	v, changed := redactValue(v, false, byKey)
	if !changed {
		return doc
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// redactValue masks v; secret says v sits under a secret-named key, byKey
// that keys naming a secret mask what they hold.
func redactValue(v any, secret, byKey bool) (any, bool) {
	switch x := v.(type) {
	case string:
		if secret && x != "" {
			return Redacted, true
		}
		r := String(x)
		return r, r != x
	case map[string]any:
		changed := false
		for k, val := range x {
			nv, c := redactValue(val, secret || byKey && IsSecretKey(k), byKey)
			if c {
				x[k], changed = nv, true
			}
		}
		return x, changed
	case []any:
		changed := false
		for i, val := range x {
			nv, c := redactValue(val, secret, byKey)
			if c {
				x[i], changed = nv, true
			}
		}
		return x, changed
	}
	return v, false
}

// IsSecretKey reports whether an object key or header name names a secret.
// A key that names the identifier of a secret ("tokenId", "credential_ids")
// does not: an id is how a secret is listed and revoked, not the secret
// itself. Its value is still masked if it looks like a token.
func IsSecretKey(k string) bool {
	n := strings.ToLower(keySeparators.Replace(k))
	if strings.HasSuffix(n, "id") || strings.HasSuffix(n, "ids") {
		return false
	}
	for _, s := range secretKeys {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// keySeparators drops what may separate the words of a key. It is built
// once: IsSecretKey runs for every key of every redacted value, and
// building a Replacer costs microseconds.
var keySeparators = strings.NewReplacer("-", "", "_", "", " ", "")

// Handler wraps h so log records never carry secrets: the
// message, string attributes and attributes under secret-named keys are
// masked. The daemon wraps its logger with it.
func Handler(h slog.Handler) slog.Handler { return redactingHandler{h} }

type redactingHandler struct{ h slog.Handler }

func (r redactingHandler) Enabled(ctx context.Context, l slog.Level) bool { return r.h.Enabled(ctx, l) }

func (r redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r redactingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = redactAttr(a)
	}
	return redactingHandler{r.h.WithAttrs(out)}
}

func (r redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{r.h.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if IsSecretKey(a.Key) && v.String() != "" {
			return slog.String(a.Key, Redacted)
		}
		return slog.String(a.Key, String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, x := range g {
			out[i] = redactAttr(x)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, String(x.Error()))
		case json.RawMessage:
			return slog.String(a.Key, string(JSON(x)))
		case []byte:
			return slog.String(a.Key, String(string(x)))
		case interface{ String() string }:
			return slog.String(a.Key, String(x.String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
