package benchkit

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// Vocabulary of the synthetic catalog: the areas, objects and operations of
// ordinary SaaS apps, so term frequencies look like a real catalog's (a few
// very common words such as "list" and "user", a long tail of rarer ones).
var (
	synthApps = []string{"crm", "docs", "deck", "billing", "support", "hr", "calendar", "mail",
		"wiki", "tasks", "storage", "analytics", "chat", "shop", "inventory", "forms",
		"design", "video", "sheets", "devops", "security", "marketing", "legal", "travel"}
	synthAreas = []string{"accounts", "admin", "reports", "settings", "sharing", "files", "teams",
		"projects", "comments", "exports", "imports", "audit", "search", "webhooks",
		"templates", "labels", "integrations", "notifications", "permissions", "views"}
	synthVerbs = []string{"get", "list", "create", "update", "delete", "archive", "restore",
		"export", "import", "share", "assign", "approve", "reject", "publish", "schedule",
		"cancel", "merge", "duplicate", "move", "rename", "sync", "search", "tag", "invite",
		"remove", "enable", "disable", "send", "preview", "download"}
	synthNouns = []string{"user", "team", "project", "task", "document", "folder", "file",
		"invoice", "payment", "customer", "order", "ticket", "comment", "label", "report",
		"dashboard", "chart", "meeting", "event", "calendar", "message", "channel", "thread",
		"contact", "lead", "deal", "pipeline", "campaign", "template", "form", "response",
		"page", "slide", "deck", "sheet", "row", "column", "snapshot", "backup", "webhook",
		"token", "role", "permission", "policy", "vendor", "product", "shipment", "refund",
		"subscription", "plan", "coupon", "article", "attachment", "note", "reminder", "survey",
		"asset", "release", "deployment", "incident"}
	synthAdjectives = []string{"active", "archived", "shared", "recent", "pending", "overdue",
		"draft", "published", "private", "public", "starred", "assigned", "unread", "failed",
		"scheduled", "expired", "primary", "external", "internal", "flagged"}
	synthQualifiers = []string{"in the current workspace", "for a given account", "by its identifier",
		"across all projects", "within a date range", "owned by the caller", "for the selected team",
		"matching a filter", "in bulk", "with optional pagination"}
	synthDetails = []string{
		"Results are ordered by last modification time, newest first.",
		"Requires the caller to have editor access.",
		"Deleted items remain recoverable for thirty days.",
		"Large exports run as a background job and return a job identifier.",
		"Use the cursor from the previous response to fetch the next page.",
		"Timestamps are ISO 8601 in UTC.",
		"Fails with NOT_FOUND when the item does not exist.",
		"Notifies watchers by email unless silent is set.",
		"Rate limited to sixty calls per minute per token.",
		"Returns the updated item.",
	}
	synthParams = []struct{ name, typ, desc string }{
		{"id", "string", "Identifier of the %s."},
		{"%s_id", "string", "Identifier of the %s."},
		{"name", "string", "Display name of the %s."},
		{"query", "string", "Free-text filter applied to %s names and descriptions."},
		{"limit", "integer", "Maximum number of %s items to return."},
		{"cursor", "string", "Opaque cursor from a previous page."},
		{"status", "string", "Only %s items in this state."},
		{"owner_email", "string", "Email address of the %s owner."},
		{"since", "string", "Only %s items changed after this time."},
		{"until", "string", "Only %s items changed before this time."},
		{"format", "string", "Output format of the exported %s."},
		{"notify", "boolean", "Whether to notify watchers of the %s."},
		{"tags", "array", "Labels to attach to the %s."},
		{"description", "string", "Long description of the %s."},
		{"due_date", "string", "Date by which the %s is due."},
		{"priority", "integer", "Priority of the %s, 1 (highest) to 5."},
	}
)

// SyntheticCatalog returns n distinct tools, deterministic for a seed: app
// and area namespaces, verb_noun names, two- to four-sentence descriptions
// and one to six input properties with descriptions (some nested, some
// enums); about one tool in ten is a browser tool.
func SyntheticCatalog(n int, seed uint64) []switchboard.Tool {
	r := rand.New(rand.NewPCG(seed, 0x5b))
	tools := make([]switchboard.Tool, 0, n)
	seen := make(map[string]bool, n)
	for i := 0; len(tools) < n; i++ {
		// Big catalogs are many apps, each a few hundred tools.
		app := pick(r, synthApps)
		if n > 1000 {
			app = fmt.Sprintf("%s%d", app, r.IntN(max(n/300, 1)))
		}
		area, verb, noun := pick(r, synthAreas), pick(r, synthVerbs), pick(r, synthNouns)
		name := fmt.Sprintf("%s.%s.%s_%s", app, area, verb, noun)
		if seen[name] {
			continue
		}
		seen[name] = true
		tools = append(tools, synthTool(r, name, verb, noun))
	}
	return tools
}

func synthTool(r *rand.Rand, name, verb, noun string) switchboard.Tool {
	adj, qual := pick(r, synthAdjectives), pick(r, synthQualifiers)
	var d strings.Builder
	if verb == "list" || verb == "search" {
		fmt.Fprintf(&d, "%s %s %s.", capitalize(verbPhrase(verb)), adj, plural(noun, true))
	} else {
		fmt.Fprintf(&d, "%s %s %s %s.", capitalize(verbPhrase(verb)), article(adj), adj, noun)
	}
	fmt.Fprintf(&d, " Works %s and applies to %s %s.", qual, pick(r, synthAdjectives), plural(pick(r, synthNouns), true))
	for k := r.IntN(3); k > 0; k-- {
		d.WriteString(" " + pick(r, synthDetails))
	}
	t := switchboard.Tool{
		Name: name, Description: d.String(), InputSchema: synthSchema(r, noun),
		Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead,
	}
	switch verb {
	case "get", "list", "search", "preview", "download":
	case "export", "import", "sync":
		t.Class = switchboard.ClassJob
	default:
		t.Class = switchboard.ClassMutate
	}
	if r.IntN(10) == 0 {
		t.Surface, t.Class, t.ViewStateOnly = switchboard.SurfaceBrowser, switchboard.ClassUI, true
	}
	if r.IntN(2) == 0 {
		// Half the tools declare a summary, as a hand-written catalog would.
		t.Summary = fmt.Sprintf("%s %s.", capitalize(verb), plural(noun, verb == "list" || verb == "search"))
	}
	return t
}

func synthSchema(r *rand.Rand, noun string) json.RawMessage {
	props := map[string]any{}
	var required []string
	for k := 1 + r.IntN(6); k > 0; k-- {
		p := synthParams[r.IntN(len(synthParams))]
		name := p.name
		if strings.Contains(name, "%s") {
			name = fmt.Sprintf(name, noun)
		}
		if _, dup := props[name]; dup {
			continue
		}
		desc := p.desc
		if strings.Contains(desc, "%s") {
			desc = fmt.Sprintf(desc, noun)
		}
		prop := map[string]any{"type": p.typ, "description": desc}
		switch name {
		case "format":
			prop["enum"] = []string{"pdf", "csv", "json", "xlsx"}
		case "status":
			prop["enum"] = []string{"open", "pending", "closed"}
		case "tags":
			prop["items"] = map[string]any{"type": "string"}
		}
		props[name] = prop
		if r.IntN(2) == 0 {
			required = append(required, name)
		}
	}
	if r.IntN(5) == 0 {
		props["options"] = map[string]any{"type": "object", "properties": map[string]any{
			"dry_run": map[string]any{"type": "boolean", "description": "Validate without applying changes."},
			"locale":  map[string]any{"type": "string", "description": "Language of generated text."},
		}}
	}
	schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		schema["required"] = required
	}
	b, err := json.Marshal(schema)
	if err != nil {
		panic(err) // only maps of strings: cannot fail
	}
	return b
}

// SyntheticQueries returns n queries in the catalog's vocabulary, from
// terse keyword queries to the long requests agents write.
func SyntheticQueries(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 0x9e))
	qs := make([]string, n)
	for i := range qs {
		verb, noun := pick(r, synthVerbs), pick(r, synthNouns)
		switch i % 4 {
		case 0:
			qs[i] = verb + " " + noun
		case 1:
			qs[i] = fmt.Sprintf("%s %s %s", verb, pick(r, synthAdjectives), plural(noun, true))
		case 2:
			qs[i] = fmt.Sprintf("I need to %s the %s %s %s", verb, pick(r, synthAdjectives), noun, pick(r, synthQualifiers))
		default:
			qs[i] = fmt.Sprintf("Please %s every %s %s, then %s the %s and %s a %s for the %s team",
				verb, pick(r, synthAdjectives), noun, pick(r, synthVerbs), pick(r, synthNouns),
				pick(r, synthVerbs), pick(r, synthNouns), pick(r, synthAreas))
		}
	}
	return qs
}

func pick(r *rand.Rand, s []string) string { return s[r.IntN(len(s))] }

func capitalize(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// verbPhrase turns a verb into a third-person description opener.
func verbPhrase(v string) string {
	switch {
	case strings.HasSuffix(v, "h") || strings.HasSuffix(v, "s"):
		return v + "es"
	}
	return v + "s"
}

func article(adj string) string {
	if strings.ContainsRune("aeiou", rune(adj[0])) {
		return "an"
	}
	return "a"
}

func plural(noun string, many bool) string {
	switch {
	case !many:
		return noun
	case strings.HasSuffix(noun, "y"):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s") || strings.HasSuffix(noun, "ch"):
		return noun + "es"
	}
	return noun + "s"
}
