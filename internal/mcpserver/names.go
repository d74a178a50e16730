package mcpserver

import (
	"strings"

	"github.com/switchboardhq/switchboard/internal/registry"
)

// Tool names on MCP. Catalog names are dot-namespaced ("tasks.create"), and
// while MCP's 2025-11-25 revision allows dots, model APIs behind the most
// common clients do not (Anthropic's and OpenAI's tool names allow only
// letters, digits, "_" and "-"). The catalog grammar never uses "-" (its
// segments are [a-z0-9_]), so "." ↔ "-" is a bijection between catalog
// names and their MCP names: one character for one, so lengths do not grow,
// and no escape sequence that a name could already contain ("__" could).
// Every mapped catalog name therefore contains a "-", and the meta tools'
// names contain none, so the two can never collide.
const (
	nameSep    = '.'
	mcpNameSep = '-'
)

// Meta tool names (deferred listing).
const (
	toolSearch   = "switchboard_search"
	toolDescribe = "switchboard_describe"
	toolCall     = "switchboard_call"
)

// names maps catalog names to MCP names and back. aliases add fixed pairs
// (Options.Aliases: tools whose MCP names a client dictates).
type names struct {
	toMCP   map[string]string // catalog → MCP, aliases only
	fromMCP map[string]string // MCP → catalog, aliases only
}

// mcpName returns the MCP name of a catalog tool.
func (n *names) mcpName(catalog string) string {
	if a, ok := n.toMCP[catalog]; ok {
		return a
	}
	return strings.ReplaceAll(catalog, string(nameSep), string(mcpNameSep))
}

// catalogName returns the catalog name an MCP name stands for, accepting
// the dotted form too (models copy names from descriptions and errors). ok
// is false when name cannot be a catalog name at all.
func (n *names) catalogName(name string) (string, bool) {
	if c, ok := n.fromMCP[name]; ok {
		return c, true
	}
	if strings.ContainsRune(name, mcpNameSep) && strings.ContainsRune(name, nameSep) {
		return "", false // one spelling or the other, so each name has two at most
	}
	c := strings.ReplaceAll(name, string(mcpNameSep), string(nameSep))
	if !registry.ValidName(c) {
		return "", false
	}
	if _, aliased := n.toMCP[c]; aliased {
		// An aliased tool answers only to its alias, so the mapping stays
		// one-to-one.
		return "", false
	}
	return c, true
}

func (n *names) alias(catalog, mcp string) {
	if n.toMCP == nil {
		n.toMCP, n.fromMCP = map[string]string{}, map[string]string{}
	}
	n.toMCP[catalog], n.fromMCP[mcp] = mcp, catalog
}

// validMCPName reports whether s fits what every common client accepts:
// letters, digits, "_" and "-", 1 to 128 characters.
func validMCPName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
