package openapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/registry"
)

// methods in the order operations are visited within a path.
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}

// importer walks a document once.
type importer struct {
	ctx   context.Context
	doc   *openapi3.T
	opts  Options
	res   *Result
	names map[string]bool
	// security maps a credential hint to the tools that want it.
	security map[string][]string
	// spent counts the schema nodes emitted so far, against
	// opts.MaxSchemaNodes: every converter of the import shares it.
	spent expansion
}

// skipError says why an operation cannot become a tool.
type skipError string

func (e skipError) Error() string { return string(e) }

func skipf(format string, args ...any) error { return skipError(fmt.Sprintf(format, args...)) }

func (im *importer) run() error {
	if im.doc.Paths == nil {
		return nil
	}
	paths := im.doc.Paths.Map()
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	slices.Sort(keys)
	for _, path := range keys {
		item := paths[path]
		if item == nil {
			continue
		}
		ops := item.Operations()
		for _, m := range methods {
			op := ops[m]
			if op == nil {
				continue
			}
			var notes []string
			tool, err := im.operation(path, m, item, op, &notes)
			if err := im.spent.err; err != nil {
				return err
			}
			if err != nil {
				im.res.Skipped = append(im.res.Skipped, Skip{Method: m, Path: path, OperationID: op.OperationID, Reason: err.Error()})
				continue
			}
			im.names[tool.Name] = true
			im.securityNotes(tool.Name, op)
			im.res.Tools = append(im.res.Tools, tool)
			for _, n := range notes {
				im.res.Notes = append(im.res.Notes, Note{Tool: tool.Name, Message: n})
			}
		}
	}
	return nil
}

// operation maps one operation. notes collects what the reader should know.
func (im *importer) operation(path, method string, item *openapi3.PathItem, op *openapi3.Operation, notes *[]string) (switchboard.Tool, error) {
	switch method {
	case "OPTIONS", "TRACE":
		return switchboard.Tool{}, skipf("%s is not a method switchboard calls", method)
	}
	im.spent.init(im.ctx, im.opts.MaxSchemaNodes, method+" "+path)
	conv := &converter{maxDepth: im.opts.MaxDepth, notes: notes, spent: &im.spent}
	props := map[string]any{}
	var required []string
	in := map[string]string{} // property name → where it goes
	var queryPairs []string

	for _, p := range mergeParams(item.Parameters, op.Parameters) {
		where := p.In
		if where == openapi3.ParameterInHeader && im.hasHeader(p.Name) {
			continue // supplied by a configured binding header
		}
		if err := supported(p, method); err != nil {
			if p.Required || where == openapi3.ParameterInPath {
				return switchboard.Tool{}, err
			}
			*notes = append(*notes, fmt.Sprintf("optional %s parameter %q left out: %v", where, p.Name, err))
			continue
		}
		if prev, dup := in[p.Name]; dup {
			return switchboard.Tool{}, skipf("parameter %q appears both in %s and in %s; one input field cannot fill both", p.Name, prev, where)
		}
		s := conv.schema(p.Schema, 0, true)
		if p.Description != "" {
			s["description"] = p.Description
		}
		if p.Deprecated {
			s["deprecated"] = true
		}
		props[p.Name] = s
		in[p.Name] = where
		if p.Required || where == openapi3.ParameterInPath {
			required = append(required, p.Name)
		}
		if where == openapi3.ParameterInQuery && hasBody(method) {
			queryPairs = append(queryPairs, p.Name+"={"+p.Name+"}")
		}
	}

	additional := false
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		body := op.RequestBody.Value
		if !hasBody(method) {
			return switchboard.Tool{}, skipf("a request body on %s cannot be sent: for GET, HEAD and DELETE the binding sends fields as the query string", method)
		}
		mt, media := jsonMedia(body.Content)
		if media == nil {
			return switchboard.Tool{}, skipf("the request body is only %s; HTTP bindings send JSON", strings.Join(contentTypes(body.Content), ", "))
		}
		obj, err := conv.object(media.Schema)
		if err != nil {
			return switchboard.Tool{}, skipf("the %s request body %v; HTTP bindings send the input's remaining fields as one JSON object", mt, err)
		}
		for _, name := range sortedKeys(obj.props) {
			if where, clash := in[name]; clash {
				*notes = append(*notes, fmt.Sprintf("body property %q has the name of a %s parameter; the field fills the %s parameter and is not sent in the body", name, where, where))
				continue
			}
			props[name] = obj.props[name]
			in[name] = "body"
		}
		if body.Required {
			for _, r := range obj.required {
				if in[r] == "body" {
					required = append(required, r)
				}
			}
		}
		additional = obj.additional
	}

	input := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		slices.Sort(required)
		input["required"] = slices.Compact(required)
	}
	if !additional {
		input["additionalProperties"] = false
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return switchboard.Tool{}, skipf("its input schema cannot be encoded: %v", err)
	}
	if len(raw) > registry.MaxSchemaBytes {
		return switchboard.Tool{}, skipf("its input schema is %d bytes after inlining references; the limit is %d", len(raw), registry.MaxSchemaBytes)
	}

	url := im.res.BaseURL + path
	if len(queryPairs) > 0 {
		url += "?" + strings.Join(queryPairs, "&")
	}
	t := switchboard.Tool{
		Name:        im.name(path, method, op, notes),
		Description: description(path, method, op),
		Summary:     summary(op.Summary),
		InputSchema: raw,
		Surface:     switchboard.SurfaceAPI,
		Class:       switchboard.ClassMutate,
		Approval:    switchboard.ApprovalNone,
		Binding: &switchboard.Binding{HTTP: &switchboard.HTTPBinding{
			Method: method, URL: url, Headers: im.opts.Headers,
		}},
	}
	if method == http.MethodGet || method == http.MethodHead {
		t.Class = switchboard.ClassRead
	}
	if method == http.MethodDelete {
		t.Approval = switchboard.ApprovalHITL
	}
	if len(op.Callbacks) > 0 {
		*notes = append(*notes, "callbacks are not imported")
	}
	if err := registry.Check(&t); err != nil {
		return switchboard.Tool{}, skipf("the mapped tool is not valid: %s", switchboard.AsError(err).Message)
	}
	return t, nil
}

// mergeParams applies operation parameters over path-level ones (same name
// and location), keeping the document's order.
func mergeParams(pathLevel, opLevel openapi3.Parameters) []*openapi3.Parameter {
	var out []*openapi3.Parameter
	key := func(p *openapi3.Parameter) string { return p.In + "\x00" + p.Name }
	seen := map[string]int{}
	for _, list := range []openapi3.Parameters{pathLevel, opLevel} {
		for _, ref := range list {
			if ref == nil || ref.Value == nil {
				continue
			}
			p := ref.Value
			if i, ok := seen[key(p)]; ok {
				out[i] = p
				continue
			}
			seen[key(p)] = len(out)
			out = append(out, p)
		}
	}
	return out
}

// supported says whether a binding can carry parameter p.
func supported(p *openapi3.Parameter, method string) error {
	switch p.In {
	case openapi3.ParameterInCookie:
		return skipf("cookie parameter %q cannot be sent: HTTP bindings send no cookies", p.Name)
	case openapi3.ParameterInHeader:
		return skipf("header parameter %q cannot be filled from the input: HTTP bindings send fixed headers (configure one with --header)", p.Name)
	}
	if p.Schema == nil || p.Schema.Value == nil {
		return skipf("%s parameter %q has no schema (content-encoded parameters are not supported)", p.In, p.Name)
	}
	s := p.Schema.Value
	isArray := s.Type != nil && s.Type.Is(openapi3.TypeArray)
	isObject := s.Type != nil && s.Type.Is(openapi3.TypeObject) || len(s.Properties) > 0
	switch p.In {
	case openapi3.ParameterInPath:
		if isArray || isObject {
			return skipf("path parameter %q is an array or object; a URL segment takes one value", p.Name)
		}
		if p.Style != "" && p.Style != openapi3.SerializationSimple {
			return skipf("path parameter %q uses style %s; only simple is supported", p.Name, p.Style)
		}
	case openapi3.ParameterInQuery:
		if isObject {
			return skipf("query parameter %q is an object; HTTP bindings send scalar or repeated query values", p.Name)
		}
		if p.Style != "" && p.Style != openapi3.SerializationForm {
			return skipf("query parameter %q uses style %s; only form is supported", p.Name, p.Style)
		}
		if isArray && p.Explode != nil && !*p.Explode {
			return skipf("query parameter %q is an array with explode: false (comma-joined); HTTP bindings repeat the name per value", p.Name)
		}
	}
	return nil
}

func hasBody(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodDelete
}

func (im *importer) hasHeader(name string) bool {
	for h := range im.opts.Headers {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

// jsonMedia picks the JSON media type of a body, if there is one.
func jsonMedia(c openapi3.Content) (string, *openapi3.MediaType) {
	for _, mt := range []string{"application/json", "application/json; charset=utf-8"} {
		if m := c[mt]; m != nil {
			return mt, m
		}
	}
	for _, mt := range contentTypes(c) {
		base, _, _ := strings.Cut(mt, ";")
		base = strings.TrimSpace(strings.ToLower(base))
		if strings.HasSuffix(base, "+json") || base == "*/*" || base == "application/*" {
			return mt, c[mt]
		}
	}
	return "", nil
}

func contentTypes(c openapi3.Content) []string { return sortedKeys(c) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// securityNotes records which credentials an operation wants, unless a
// configured header already supplies them; report turns them into one
// note per scheme.
func (im *importer) securityNotes(tool string, op *openapi3.Operation) {
	reqs := im.doc.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	if len(reqs) == 0 || im.doc.Components == nil {
		return
	}
	var wants []string
	for _, req := range reqs {
		if len(req) == 0 {
			return // an empty requirement makes security optional
		}
		for name := range req {
			ref := im.doc.Components.SecuritySchemes[name]
			if ref == nil || ref.Value == nil {
				continue
			}
			s := ref.Value
			switch {
			case s.Type == "apiKey" && s.In == "header":
				if im.hasHeader(s.Name) {
					return
				}
				wants = append(wants, fmt.Sprintf("%s (an API key in header %s): pass --header %s=env:VAR", name, s.Name, s.Name))
			case s.Type == "http" || s.Type == "oauth2" || s.Type == "openIdConnect":
				if im.hasHeader("Authorization") {
					return
				}
				wants = append(wants, fmt.Sprintf("%s (%s): pass --header Authorization=env:VAR, VAR holding the whole value, e.g. \"Bearer ...\"", name, s.Type))
			default:
				wants = append(wants, fmt.Sprintf("%s (%s in %s): not supported by HTTP bindings", name, s.Type, s.In))
			}
		}
	}
	for _, w := range wants {
		if im.security == nil {
			im.security = map[string][]string{}
		}
		im.security[w] = append(im.security[w], tool)
	}
}

// report adds the document-level notes gathered while walking.
func (im *importer) report() {
	for _, w := range sortedKeys(im.security) {
		tools := im.security[w]
		im.res.Notes = append(im.res.Notes, Note{Message: fmt.Sprintf("%d imported operation(s) accept credentials %s (%s)", len(tools), w, strings.Join(clipList(tools, 5), ", "))})
	}
}

func clipList(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(slices.Clone(xs[:n]), fmt.Sprintf("and %d more", len(xs)-n))
}
