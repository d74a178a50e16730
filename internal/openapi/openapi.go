// Package openapi turns an OpenAPI 3 document into api tools with HTTP
// bindings, so a newcomer can point switchboard at a running backend and
// call its operations from curl, the CLI and Go. It parses with
// github.com/getkin/kin-openapi (Swagger 2.0 documents are converted to
// OpenAPI 3 first) and never follows external references.
//
// Every operation becomes one tool or one Skip that says why not:
//   - name: NAMESPACE.VERB, both snake_case; the namespace is --namespace,
//     else the operation's first tag, else the first path segment; the verb
//     is the operationId, else the method and the path ("get_pets_by_id");
//   - description from summary and description; summary from summary;
//   - inputSchema: path, query and header parameters plus the JSON request
//     body's properties merged at the top level, $refs inlined (recursion is
//     cut and noted), OpenAPI 3.0 keywords translated to JSON Schema;
//   - binding: --base-url + path, with query parameters of body-carrying
//     methods as optional `name={name}` URL pairs;
//   - class read for GET and HEAD, mutate otherwise; DELETE asks for
//     approval (hitl).
//
// Import returns the tools and the report; registering them is the
// caller's job (the CLI sends them to the daemon).
package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/registry"
	"github.com/switchboardhq/switchboard/internal/yamlbudget"
)

// DefaultMaxDepth bounds how deep schemas are inlined.
const DefaultMaxDepth = 16

// Budgets of one import (docs/api-tools.md, "Budgets"). A document is
// untrusted input: YAML aliases and $refs are references, and inlining
// them can multiply a few kilobytes into gigabytes, so every stage that
// follows references counts what it expands and stops at a budget.
const (
	// DefaultMaxSchemaNodes bounds the JSON Schema nodes the import emits
	// across all tools once $refs, allOf and the rest are inlined: a
	// large real API (hundreds of operations) stays well under it, a
	// fan-out of refs (four properties each referring to the next level,
	// fourteen levels) does not.
	DefaultMaxSchemaNodes = 250_000
	// DefaultTimeout bounds one import's wall time.
	DefaultTimeout = 30 * time.Second
)

// Options configures Import.
type Options struct {
	// BaseURL is where the API is served, e.g. http://127.0.0.1:8080/api/v3;
	// it replaces the document's servers. Empty means the first server URL,
	// which must then be absolute.
	BaseURL string
	// Namespace, when set, is the namespace of every tool (instead of tags).
	Namespace string
	// Headers are added to every binding, e.g. {"X-Api-Key": {"env": "KEY"}}.
	Headers map[string]switchboard.HeaderValue
	// MaxDepth bounds schema nesting; deeper parts are cut. Default
	// DefaultMaxDepth.
	MaxDepth int
	// Document bounds the document as read (bytes, depth, YAML aliases
	// expanded); zero fields take yamlbudget's defaults.
	Document yamlbudget.Budget
	// MaxSchemaNodes bounds the schema nodes emitted once $refs are
	// inlined; past it the import fails with PAYLOAD_TOO_LARGE. Default
	// DefaultMaxSchemaNodes.
	MaxSchemaNodes int
	// Timeout bounds the import; past it the import fails with
	// INVALID_INPUT. Default DefaultTimeout.
	Timeout time.Duration
}

// Skip is an operation that was not imported, and why.
type Skip struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	OperationID string `json:"operationId,omitempty"`
	Reason      string `json:"reason"`
}

// Note is something a reader of the import should know about an imported
// tool (a dropped optional parameter, a cut recursive schema, needed
// credentials). Tool is empty for notes about the whole document.
type Note struct {
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message"`
}

// Result is what Import produced.
type Result struct {
	Title   string             `json:"title"`
	Version string             `json:"version"`
	BaseURL string             `json:"baseUrl"`
	Tools   []switchboard.Tool `json:"tools"`
	Skipped []Skip             `json:"skipped"`
	Notes   []Note             `json:"notes"`
}

// Import maps the OpenAPI document in data (YAML or JSON) to tools.
func Import(ctx context.Context, data []byte, opts Options) (*Result, error) {
	for name, v := range opts.Headers {
		if v.Env == "" && registry.SensitiveHeader(name) {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput,
				"header %s looks like a credential; pass it as %s=env:VAR so its value is read from the daemon's environment and never stored", name, name)
		}
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.MaxSchemaNodes <= 0 {
		opts.MaxSchemaNodes = DefaultMaxSchemaNodes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	doc, err := load(ctx, data, opts.Document)
	if err != nil {
		return nil, err
	}
	res := &Result{Tools: []switchboard.Tool{}, Skipped: []Skip{}, Notes: []Note{}}
	if doc.Info != nil {
		res.Title, res.Version = doc.Info.Title, doc.Info.Version
	}
	if err := doc.Validate(ctx, openapi3.DisableExamplesValidation(), openapi3.DisableSchemaDefaultsValidation()); err != nil {
		res.Notes = append(res.Notes, Note{Message: "the document does not fully validate (imported anyway): " + firstLine(err.Error())})
	}
	if res.BaseURL, err = baseURL(doc, opts.BaseURL); err != nil {
		return nil, err
	}
	im := &importer{ctx: ctx, doc: doc, opts: opts, res: res, names: map[string]bool{}}
	if err := im.run(); err != nil {
		return nil, err
	}
	im.report()
	return res, nil
}

// load parses data as OpenAPI 3, or as Swagger 2.0 converted to OpenAPI 3.
// The document is decoded under its budget first (yamlbudget, as manifests
// are): kin-openapi expands YAML aliases as it decodes, so only a document
// whose expansion fits is handed to it.
func load(ctx context.Context, data []byte, budget yamlbudget.Budget) (*openapi3.T, error) {
	tree, err := yamlbudget.Decode(ctx, data, budget)
	if err != nil {
		var se *yamlbudget.SyntaxError
		if errors.As(err, &se) {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "not a YAML or JSON document: %v", se)
		}
		return nil, err
	}
	var probe struct {
		Swagger string `json:"swagger"`
		OpenAPI string `json:"openapi"`
	}
	if top, ok := tree.(map[string]any); ok {
		probe.Swagger, probe.OpenAPI = scalarString(top["swagger"]), scalarString(top["openapi"])
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	loader.Context = ctx
	switch {
	case strings.HasPrefix(probe.OpenAPI, "3."):
		doc, err := loader.LoadFromData(data)
		if err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "cannot read the OpenAPI document: %v", err)
		}
		return doc, nil
	case probe.Swagger == "2.0":
		js, err := json.Marshal(jsonable(tree))
		if err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "YAML cannot be represented as JSON: %v", err)
		}
		var v2 openapi2.T
		if err := json.Unmarshal(js, &v2); err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "cannot read the Swagger 2.0 document: %v", err)
		}
		doc, err := openapi2conv.ToV3(&v2)
		if err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "cannot convert the Swagger 2.0 document to OpenAPI 3: %v", err)
		}
		if err := loader.ResolveRefsIn(doc, nil); err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "cannot resolve references: %v", err)
		}
		return doc, nil
	}
	return nil, switchboard.Errorf(switchboard.CodeInvalidInput,
		"not an OpenAPI document: expected a top-level \"openapi: 3.x\" (or \"swagger: 2.0\") field")
}

// scalarString reads a version field as written: "openapi: 3.1" is a
// YAML float.
func scalarString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

// jsonable turns YAML's map[any]any into JSON objects.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
	}
	return v
}

var serverVarRE = regexp.MustCompile(`\{([^}]+)\}`)

// baseURL picks the flag, else the first server with its variables at their
// defaults. It must be an absolute http(s) URL.
func baseURL(doc *openapi3.T, flag string) (string, error) {
	u := strings.TrimSpace(flag)
	from := "--base-url"
	if u == "" && len(doc.Servers) > 0 && doc.Servers[0] != nil {
		s := doc.Servers[0]
		u = serverVarRE.ReplaceAllStringFunc(s.URL, func(m string) string {
			if v, ok := s.Variables[m[1:len(m)-1]]; ok && v != nil {
				return v.Default
			}
			return m
		})
		from = "the document's first server"
	}
	if u == "" {
		return "", switchboard.Errorf(switchboard.CodeInvalidInput, "the document names no server; pass --base-url with the API's address, e.g. http://127.0.0.1:8080")
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", switchboard.Errorf(switchboard.CodeInvalidInput,
			"%s %q is not an absolute http(s) URL; pass --base-url with the API's full address, e.g. http://127.0.0.1:8080%s", from, u, strings.TrimSuffix(u, "/"))
	}
	return strings.TrimSuffix(u, "/"), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
