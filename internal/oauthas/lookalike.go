package oauthas

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// wellKnownClients are names users trust on a consent page. A client
// that registers a name that only looks like one of them (Cl4ude,
// "Сlaude" with a Cyrillic С, "Curs0r") is refused; one that calls itself
// exactly that is allowed to register (names are self-asserted), and the
// consent page says so.
var wellKnownClients = []string{
	"Claude", "Claude Desktop", "Claude Code", "ChatGPT", "OpenAI", "Visual Studio Code", "VS Code",
	"GitHub Copilot", "Cursor", "Windsurf", "Zed", "MCP Inspector", "Goose", "Gemini", "switchboard",
}

// confusables maps characters that render like a Latin letter to it: the
// common Cyrillic and Greek homoglyphs and the digit swaps impersonators
// use. It is a short list on purpose: it only has to catch a name that
// collides with the few well-known names above.
var confusables = map[rune]rune{
	'а': 'a', 'в': 'b', 'с': 'c', 'е': 'e', 'ё': 'e', 'һ': 'h', 'і': 'i', 'ј': 'j', 'к': 'k', 'м': 'm', 'н': 'h',
	'о': 'o', 'р': 'p', 'ѕ': 's', 'т': 't', 'у': 'y', 'х': 'x', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w',
	'α': 'a', 'β': 'b', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x',
	'0': 'o', '1': 'l', '3': 'e', '4': 'a', '5': 's', '7': 't', '|': 'l', '!': 'i', '$': 's', '@': 'a',
	'ı': 'i', 'ℓ': 'l',
}

// skeleton folds name to what it looks like: compatibility-normalized,
// lower case, accents dropped, homoglyphs mapped, rn read as m, I as l,
// separators and invisible characters removed.
func skeleton(name string) string {
	var b strings.Builder
	for _, c := range norm.NFKD.String(name) {
		switch {
		case unicode.Is(unicode.Mn, c), unicode.Is(unicode.Cf, c), unicode.IsSpace(c), c == '-', c == '_', c == '.', c == '·':
			continue
		}
		if c == 'I' {
			c = 'l'
		}
		c = unicode.ToLower(c)
		if m, ok := confusables[c]; ok {
			c = m
		}
		b.WriteRune(c)
	}
	s := strings.ReplaceAll(b.String(), "rn", "m")
	return strings.ReplaceAll(s, "vv", "w")
}

// lookalike returns the well-known name that name imitates without being
// it (case and spacing aside), or "".
func lookalike(name string) string {
	sk := skeleton(name)
	if sk == "" {
		return ""
	}
	for _, known := range wellKnownClients {
		if skeleton(known) != sk {
			continue
		}
		if sameName(name, known) {
			return "" // the name itself (case and spacing aside), not a look-alike
		}
		return known
	}
	return ""
}

// claimsWellKnown reports whether name is exactly a well-known client's:
// the consent page reminds the user that names are not verified.
func claimsWellKnown(name string) bool {
	for _, known := range wellKnownClients {
		if sameName(name, known) {
			return true
		}
	}
	return false
}

// sameName compares names ignoring case and spaces.
func sameName(a, b string) bool {
	return strings.EqualFold(strings.Join(strings.Fields(a), ""), strings.Join(strings.Fields(b), ""))
}
