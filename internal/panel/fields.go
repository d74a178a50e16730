package panel

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// fieldRef is one declared field of an instance.
type fieldRef struct {
	form  *form
	field panelspec.FormField
}

// fieldsAt finds the declared fields at path (in the form node formID when
// it is not empty).
func (in *instance) fieldsAt(path, formID string) []fieldRef {
	var out []fieldRef
	for i := range in.forms {
		f := &in.forms[i]
		if formID != "" && f.node != formID {
			continue
		}
		for _, fld := range f.fields {
			if fld.Path == path {
				out = append(out, fieldRef{form: f, field: fld})
			}
		}
	}
	return out
}

// declaredPaths lists every field path of in (in formID when set).
func (in *instance) declaredPaths(formID string) []string {
	seen := map[string]bool{}
	for _, f := range in.forms {
		if formID != "" && f.node != formID {
			continue
		}
		for _, fld := range f.fields {
			seen[fld.Path] = true
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// field finds the one field at path a value is for. Several forms bound to
// different sources declaring the same path need formID to tell them apart.
func (in *instance) field(path, formID string) (fieldRef, *FieldError) {
	refs := in.fieldsAt(path, formID)
	if len(refs) == 0 {
		fe := &FieldError{Path: path, Code: switchboard.CodeInvalidInput, Message: "not a declared field of this panel"}
		if formID != "" && len(in.fieldsAt(path, "")) > 0 {
			fe.Message = fmt.Sprintf("not a field of form %q", formID)
		}
		fe.Suggestion = suggestPath(path, in.declaredPaths(formID))
		return fieldRef{}, fe
	}
	for _, r := range refs[1:] {
		if r.form.bind != refs[0].form.bind {
			return fieldRef{}, &FieldError{Path: path, Code: switchboard.CodeInvalidInput,
				Message: "several forms declare this field", Suggestion: "name the form node with form"}
		}
	}
	return refs[0], nil
}

// FieldError is one value panel.fill (or a tab's edit) could not apply.
type FieldError struct {
	Path       string           `json:"path"`
	Code       switchboard.Code `json:"code"`
	Message    string           `json:"message"`
	Suggestion string           `json:"suggestion,omitempty"`
}

// checkValue says whether v fits field. A tab's edit (partial) may leave a
// required field empty for now; a fill may not.
func checkValue(f panelspec.FormField, v any, partial bool) *FieldError {
	bad := func(format string, args ...any) *FieldError {
		return &FieldError{Path: f.Path, Code: switchboard.CodeSchemaViolation, Message: fmt.Sprintf(format, args...)}
	}
	if v == nil {
		if f.Required && !partial {
			return bad("%s is required", f.Label)
		}
		return nil
	}
	switch f.Kind {
	case panelspec.FieldText:
		s, ok := v.(string)
		if !ok {
			return bad("a text field takes a string, not %s", jsonType(v))
		}
		n := utf8.RuneCountInString(s)
		switch {
		case s == "" && f.Required && !partial:
			return bad("%s is required", f.Label)
		case f.MaxLength != nil && n > *f.MaxLength:
			return bad("at most %d characters (this is %d)", *f.MaxLength, n)
		case f.MinLength != nil && n < *f.MinLength && !partial:
			return bad("at least %d characters (this is %d)", *f.MinLength, n)
		case !f.Multiline && strings.ContainsAny(s, "\r\n"):
			return bad("a single-line field cannot hold line breaks")
		}
	case panelspec.FieldNumber:
		n, ok := v.(float64)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			return bad("a number field takes a number, not %s", jsonType(v))
		}
		if f.Min != nil && n < *f.Min {
			return bad("at least %v", *f.Min)
		}
		if f.Max != nil && n > *f.Max {
			return bad("at most %v", *f.Max)
		}
	case panelspec.FieldCheckbox:
		if _, ok := v.(bool); !ok {
			return bad("a checkbox takes true or false, not %s", jsonType(v))
		}
	case panelspec.FieldDate:
		s, ok := v.(string)
		if !ok {
			return bad("a date field takes a YYYY-MM-DD string, not %s", jsonType(v))
		}
		if s == "" {
			if f.Required && !partial {
				return bad("%s is required", f.Label)
			}
			return nil
		}
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return bad("%q is not a calendar date (YYYY-MM-DD)", s)
		}
	case panelspec.FieldSelect:
		var allowed []string
		for _, o := range f.Options {
			if sameScalar(o.Value, v) {
				return nil
			}
			allowed = append(allowed, fmt.Sprintf("%v", o.Value))
		}
		fe := bad("%v is not one of the options", v)
		fe.Suggestion = "use one of " + strings.Join(allowed, ", ")
		return fe
	}
	return nil
}

// sameScalar compares option values as JSON does (all numbers float64).
func sameScalar(a, b any) bool {
	switch x := a.(type) {
	case int:
		a = float64(x)
	case int64:
		a = float64(x)
	}
	return a == b
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}

// suggestPath names the closest declared path, or lists them.
func suggestPath(p string, declared []string) string {
	best, bestD := "", 1<<30
	for _, d := range declared {
		if dist := editDistance(strings.ToLower(p), strings.ToLower(d)); dist < bestD {
			best, bestD = d, dist
		}
	}
	if best != "" && bestD <= max(2, len(p)/3) {
		return fmt.Sprintf("did you mean %q?", best)
	}
	if len(declared) == 0 {
		return "this panel has no form fields"
	}
	return "declared fields: " + strings.Join(declared, ", ")
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
