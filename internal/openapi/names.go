package openapi

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/switchboardhq/switchboard/internal/registry"
)

// name builds NAMESPACE.VERB for an operation, unique within the import.
func (im *importer) name(path, method string, op *openapi3.Operation, notes *[]string) string {
	ns := ""
	if im.opts.Namespace != "" {
		var segs []string
		for _, s := range strings.Split(im.opts.Namespace, ".") {
			if s = snake(s); s != "" {
				segs = append(segs, s)
			}
		}
		ns = strings.Join(segs, ".")
	}
	if ns == "" && len(op.Tags) > 0 {
		ns = snake(op.Tags[0])
	}
	if ns == "" {
		for _, seg := range strings.Split(path, "/") {
			if seg != "" && !strings.HasPrefix(seg, "{") {
				ns = snake(seg)
				break
			}
		}
	}
	if ns == "" {
		ns = "api"
	}
	verb := snake(op.OperationID)
	if verb == "" {
		verb = pathVerb(method, path)
	}
	max := registry.MaxNameLen - len(ns) - 1 - 4 // room for a _NN suffix
	if len(verb) > max {
		verb = strings.TrimRight(verb[:max], "_")
	}
	name := ns + "." + verb
	base := name
	for i := 2; im.names[name]; i++ {
		name = fmt.Sprintf("%s_%d", base, i)
	}
	if name != base {
		*notes = append(*notes, fmt.Sprintf("named %s because %s was taken by another operation", name, base))
	}
	return name
}

// pathVerb names an operation without an operationId: the method and the
// path, parameters as by_NAME: GET /pets/{id}/photos → get_pets_by_id_photos.
func pathVerb(method, path string) string {
	parts := []string{strings.ToLower(method)}
	for _, seg := range strings.Split(path, "/") {
		switch {
		case seg == "":
		case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}"):
			parts = append(parts, "by", snake(seg[1:len(seg)-1]))
		default:
			parts = append(parts, snake(seg))
		}
	}
	return snake(strings.Join(parts, "_"))
}

// snake turns addPet, list-data-sets, "find pet by id" or HTTPServer into
// add_pet, list_data_sets, find_pet_by_id, http_server: the segment grammar
// of tool names ([a-z][a-z0-9_]*).
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	under := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
			b.WriteByte('_')
		}
	}
	for i, r := range rs {
		switch {
		case unicode.IsUpper(r):
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i > 0 && i+1 < len(rs) && unicode.IsUpper(rs[i-1]) && unicode.IsLower(rs[i+1])
			if prevLower || nextLower {
				under()
			}
			b.WriteRune(unicode.ToLower(r))
		case r < 128 && (unicode.IsLower(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
		default:
			under()
		}
	}
	out := strings.Trim(b.String(), "_")
	if out != "" && !unicode.IsLower(rune(out[0])) {
		out = "n" + out // segments start with a letter
	}
	return out
}

// description joins summary and description; an operation with neither is
// described by its method and path.
func description(path, method string, op *openapi3.Operation) string {
	sum, desc := strings.TrimSpace(op.Summary), strings.TrimSpace(op.Description)
	var d string
	switch {
	case sum != "" && desc != "" && !strings.HasPrefix(desc, sum):
		d = sum + "\n\n" + desc
	case desc != "":
		d = desc
	case sum != "":
		d = sum
	default:
		d = method + " " + path
	}
	if op.Deprecated {
		d = "Deprecated. " + d
	}
	if len(d) > registry.MaxDescriptionLen {
		d = strings.ToValidUTF8(d[:registry.MaxDescriptionLen-3], "") + "..."
	}
	return d
}

// summary keeps a one-line summary that fits; the registry derives one
// otherwise.
func summary(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > registry.MaxSummaryLen {
		return ""
	}
	return s
}
