package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/schema"
	"github.com/switchboardhq/switchboard/internal/search"
)

// Bounds enforced at the door.
const (
	MaxNameLen        = 128
	MaxDescriptionLen = 8 << 10
	MaxSummaryLen     = 200
	MaxSchemaBytes    = 256 << 10
	MaxTimeoutMs      = 10 * 60 * 1000
	MaxUIFieldLen     = 200
	MaxUIDetailsBytes = 4 << 10
)

// nameRE is the tool name grammar: two or more dot-separated lowercase
// segments of letters, digits and _ (each starting with a letter or digit),
// e.g. "tasks.create", "media.album.rename" or "v2.users.get".
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_]*(\.[a-z0-9][a-z0-9_]*)+$`)

// ValidName reports whether name fits the grammar.
func ValidName(name string) bool { return len(name) <= MaxNameLen && nameRE.MatchString(name) }

// harnessRE is the grammar of a runtime binding's name (Tool.Harness).
var harnessRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

var httpMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// Check validates one declaration and fills its defaults in place (surface
// api, approval none, cost cheap, an object input schema, a summary derived
// from the description). Origin and Version are cleared: only the registry
// sets them. The session package uses Check for advertised browser tools.
func Check(t *switchboard.Tool) error {
	t.Origin, t.Version = nil, 0
	if !ValidName(t.Name) {
		return switchboard.Errorf(switchboard.CodeInvalidInput,
			"tool name %q is not valid: use two or more dot-separated lowercase segments of letters, digits and _, such as \"tasks.create\" (at most %d characters)", t.Name, MaxNameLen)
	}
	t.Description = strings.TrimSpace(t.Description)
	switch {
	case t.Description == "":
		return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: description is empty; say what the tool does and when to use it", t.Name)
	case len(t.Description) > MaxDescriptionLen:
		return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: description is %d bytes; the limit is %d", t.Name, len(t.Description), MaxDescriptionLen)
	case !utf8.ValidString(t.Description) || !utf8.ValidString(t.Summary):
		return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: description is not valid UTF-8", t.Name)
	}
	t.Summary = strings.TrimSpace(t.Summary)
	if strings.ContainsAny(t.Summary, "\n\r") || len(t.Summary) > MaxSummaryLen {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: summary must be one line of at most %d bytes", t.Name, MaxSummaryLen)
	}
	if t.Summary == "" {
		t.Summary = search.SummaryOf(*t)
	}
	if t.Surface == "" {
		t.Surface = switchboard.SurfaceAPI
	}
	if t.Approval == "" {
		t.Approval = switchboard.ApprovalNone
	}
	if t.CostClass == "" {
		t.CostClass = switchboard.CostCheap
	}
	if err := checkEnums(t); err != nil {
		return err
	}
	if err := checkSchemas(t); err != nil {
		return err
	}
	if err := checkUI(t); err != nil {
		return err
	}
	if t.Harness != "" && !harnessRE.MatchString(t.Harness) {
		return switchboard.Errorf(switchboard.CodeInvalidInput,
			"tool %s: harness %q is not valid: name one runtime binding (\"loop\", \"aisdk\", \"mcp\" or the host's own) in lowercase letters, digits, _ and - (at most 32)", t.Name, t.Harness)
	}
	if t.TimeoutMs < 0 || t.TimeoutMs > MaxTimeoutMs || t.MaxConcurrency < 0 {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: timeoutMs must be within 0..%d and maxConcurrency at least 0", t.Name, MaxTimeoutMs)
	}
	if t.Surface == switchboard.SurfaceBrowser {
		return checkBrowser(t)
	}
	return checkBinding(t)
}

// checkUI bounds the presentation hints: one-line strings of visible
// characters (they are drawn in consoles and chat cards) and details that
// are one small JSON object.
func checkUI(t *switchboard.Tool) error {
	if t.UI == nil {
		return nil
	}
	for _, f := range []struct{ name, v string }{{"title", t.UI.Title}, {"rendererId", t.UI.RendererID}, {"displayGroup", t.UI.DisplayGroup}} {
		if len(f.v) > MaxUIFieldLen || !utf8.ValidString(f.v) || strings.ContainsFunc(f.v, invisible) {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: ui.%s must be one line of visible characters, at most %d bytes", t.Name, f.name, MaxUIFieldLen)
		}
	}
	if d := bytes.TrimSpace(t.UI.Details); len(d) > 0 {
		if len(d) > MaxUIDetailsBytes {
			return switchboard.Errorf(switchboard.CodePayloadTooLarge, "tool %s: ui.details is %d bytes; the limit is %d", t.Name, len(d), MaxUIDetailsBytes)
		}
		if d[0] != '{' || !json.Valid(d) {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: ui.details must be a JSON object", t.Name)
		}
	}
	return nil
}

func invisible(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }

func checkEnums(t *switchboard.Tool) error {
	bad := func(field string, v any, allowed string) error {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: %s %q is not one of %s", t.Name, field, v, allowed)
	}
	switch t.Surface {
	case switchboard.SurfaceAPI, switchboard.SurfaceBrowser:
	default:
		return bad("surface", t.Surface, "api, browser")
	}
	switch t.Class {
	case switchboard.ClassRead, switchboard.ClassUI, switchboard.ClassMutate, switchboard.ClassJob:
	case "":
		return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: class is required (read, ui, mutate or job); it decides approval policy", t.Name)
	default:
		return bad("class", t.Class, "read, ui, mutate, job")
	}
	switch t.Approval {
	case switchboard.ApprovalNone, switchboard.ApprovalHITL, switchboard.ApprovalUserOnly:
	default:
		return bad("approval", t.Approval, "none, hitl, user-only")
	}
	switch t.CostClass {
	case switchboard.CostCheap, switchboard.CostExpensive:
	default:
		return bad("costClass", t.CostClass, "cheap, expensive")
	}
	return nil
}

func checkSchemas(t *switchboard.Tool) error {
	if len(bytes.TrimSpace(t.InputSchema)) == 0 || bytes.Equal(bytes.TrimSpace(t.InputSchema), []byte("null")) {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if len(t.InputSchema) > MaxSchemaBytes || len(t.OutputSchema) > MaxSchemaBytes {
		return switchboard.Errorf(switchboard.CodePayloadTooLarge, "tool %s: a schema is larger than %d bytes", t.Name, MaxSchemaBytes)
	}
	var top struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(t.InputSchema, &top); err != nil || top.Type != "object" {
		return switchboard.Errorf(switchboard.CodeSchemaViolation,
			`tool %s: inputSchema must be a JSON Schema object with "type": "object" (tool arguments are always an object)`, t.Name)
	}
	if _, err := schema.Compile(t.InputSchema); err != nil {
		return switchboard.Errorf(switchboard.CodeSchemaViolation, "tool %s: inputSchema: %s", t.Name, switchboard.AsError(err).Message)
	}
	if len(bytes.TrimSpace(t.OutputSchema)) > 0 {
		if _, err := schema.Compile(t.OutputSchema); err != nil {
			return switchboard.Errorf(switchboard.CodeSchemaViolation, "tool %s: outputSchema: %s", t.Name, switchboard.AsError(err).Message)
		}
	}
	return nil
}

// checkBrowser enforces the exemption: a browser tool moves the view and
// nothing else, so it must say so and may not claim a mutating class.
func checkBrowser(t *switchboard.Tool) error {
	if !t.ViewStateOnly {
		return switchboard.Errorf(switchboard.CodeExemptionViolation,
			"browser tool %s must assert viewStateOnly: true; anything that changes lasting state is an api tool", t.Name)
	}
	if t.Class == switchboard.ClassMutate || t.Class == switchboard.ClassJob {
		return switchboard.Errorf(switchboard.CodeExemptionViolation,
			"browser tool %s has class %s; browser tools may only be read or ui — declare the mutation as an api tool", t.Name, t.Class)
	}
	if t.Binding != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "browser tool %s cannot have a binding: the tab that advertises it executes it", t.Name)
	}
	return nil
}

func checkBinding(t *switchboard.Tool) error {
	if t.Binding == nil || t.Binding.HTTP == nil {
		return nil
	}
	h := t.Binding.HTTP
	h.Method = strings.ToUpper(h.Method)
	if h.Method == "" {
		h.Method = "POST"
	}
	if !httpMethods[h.Method] {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: binding method %q is not an HTTP method switchboard calls", t.Name, h.Method)
	}
	u, err := url.Parse(strings.NewReplacer("{", "", "}", "").Replace(h.URL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		hint := ""
		if strings.HasPrefix(h.URL, "/") {
			hint = " (a path-only URL in a manifest file is resolved against the daemon's address by `switchboard tools register` and `serve --manifest`; over the API, send it absolute)"
		}
		return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: binding url %q must be an absolute http(s) URL%s", t.Name, h.URL, hint)
	}
	for k, v := range h.Headers {
		if k == "" || (v.Env == "" && v.Value == "") {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: header %q needs a value or an env reference", t.Name, k)
		}
	}
	if h.TimeoutMs < 0 || h.TimeoutMs > MaxTimeoutMs {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: binding timeoutMs must be within 0..%d", t.Name, MaxTimeoutMs)
	}
	return checkHTTPBinding(t)
}

// batchIssue is one rejected element of a batch.
type batchIssue struct {
	Index   int              `json:"index"`
	Name    string           `json:"name,omitempty"`
	Code    switchboard.Code `json:"code"`
	Message string           `json:"message"`
}

// CheckBatch checks every tool of a batch and reports every problem at once.
// Duplicate names in one batch are a CONFLICT.
func CheckBatch(tools []switchboard.Tool) error {
	if len(tools) == 0 {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "no tools given")
	}
	var issues []batchIssue
	seen := map[string]int{}
	for i := range tools {
		if err := Check(&tools[i]); err != nil {
			e := switchboard.AsError(err)
			issues = append(issues, batchIssue{i, tools[i].Name, e.Code, e.Message})
			continue
		}
		if j, dup := seen[tools[i].Name]; dup {
			issues = append(issues, batchIssue{i, tools[i].Name, switchboard.CodeConflict,
				fmt.Sprintf("tool %s is declared twice in one batch (elements %d and %d)", tools[i].Name, j, i)})
		}
		seen[tools[i].Name] = i
	}
	if len(issues) == 0 {
		return nil
	}
	msg := issues[0].Message
	if len(issues) > 1 {
		msg = fmt.Sprintf("%s (and %d more problems; nothing was registered)", msg, len(issues)-1)
	} else {
		msg += " (nothing was registered)"
	}
	return (&switchboard.Error{Code: issues[0].Code, Message: msg}).WithDetails(map[string]any{"issues": issues})
}
