package activity

import (
	"net/http"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/redact"
)

// plainHeaders are headers whose literal values are protocol, not
// credentials, and stay readable in a binding diff; every other literal
// header value is masked whatever its name (X-Tenant: … can be a key too).
var plainHeaders = map[string]bool{"Accept": true, "Accept-Language": true, "Content-Type": true, "User-Agent": true}

// bindingFields names what differs between two bindings, on the unmasked
// values: "http", "go", "method", "url", "timeoutMs", "headers.NAME".
func bindingFields(b, a *switchboard.Binding) []string {
	var bh, ah *switchboard.HTTPBinding
	var out []string
	if b != nil {
		bh = b.HTTP
	}
	if a != nil {
		ah = a.HTTP
	}
	if (b != nil && b.Go) != (a != nil && a.Go) {
		out = append(out, "go")
	}
	switch {
	case bh == nil && ah == nil:
		return out
	case bh == nil || ah == nil:
		return append(out, "http")
	}
	if bh.Method != ah.Method {
		out = append(out, "method")
	}
	if bh.URL != ah.URL {
		out = append(out, "url")
	}
	if bh.TimeoutMs != ah.TimeoutMs {
		out = append(out, "timeoutMs")
	}
	names := map[string]bool{}
	for n := range bh.Headers {
		names[n] = true
	}
	for n := range ah.Headers {
		names[n] = true
	}
	var changed []string
	for n := range names {
		x, okx := bh.Headers[n]
		y, oky := ah.Headers[n]
		if okx != oky || x != y {
			changed = append(changed, "headers."+n)
		}
	}
	slices.Sort(changed)
	return append(out, changed...)
}

// bindingView is a binding as the ledger may show it: header names and
// environment variable names kept ({"env": "NAME"} is where a secret is
// read from, not the secret), literal header values masked (but for
// plainHeaders), and the URL's credentials and query values masked.
func bindingView(b *switchboard.Binding) any {
	if b == nil {
		return nil
	}
	v := map[string]any{}
	if b.Go {
		v["go"] = true
	}
	if h := b.HTTP; h != nil {
		hv := map[string]any{"method": h.Method, "url": maskURL(h.URL)}
		if h.TimeoutMs != 0 {
			hv["timeoutMs"] = h.TimeoutMs
		}
		if len(h.Headers) > 0 {
			hs := map[string]any{}
			for n, val := range h.Headers {
				switch {
				case val.Env != "":
					hs[n] = map[string]string{"env": val.Env}
				case plainHeaders[http.CanonicalHeaderKey(n)]:
					hs[n] = redact.String(val.Value)
				default:
					hs[n] = redact.Redacted
				}
			}
			hv["headers"] = hs
		}
		v["http"] = hv
	}
	return v
}

// maskURL masks the userinfo of u (https://user:pass@host) and the value
// of every query parameter but a {field} template, keeping names: a
// binding's literal query values are the operator's constants, api keys
// among them. The rest is masked as any string is. Braces in templates
// rule out url.Parse's re-encoding, so this works on the text.
func maskURL(u string) string {
	rest, query, hasQuery := strings.Cut(u, "?")
	if i := strings.Index(rest, "://"); i >= 0 {
		host := rest[i+3:]
		end := strings.IndexByte(host, '/')
		if end < 0 {
			end = len(host)
		}
		if at := strings.LastIndexByte(host[:end], '@'); at >= 0 {
			rest = rest[:i+3] + redact.Redacted + host[at:]
		}
	}
	if hasQuery {
		frag := ""
		if q, f, ok := strings.Cut(query, "#"); ok {
			query, frag = q, "#"+f
		}
		parts := strings.Split(query, "&")
		for i, p := range parts {
			name, val, ok := strings.Cut(p, "=")
			if ok && !(strings.HasPrefix(val, "{") && strings.HasSuffix(val, "}")) && val != "" {
				parts[i] = name + "=" + redact.Redacted
			}
		}
		rest += "?" + strings.Join(parts, "&") + frag
	}
	return redact.String(rest)
}
