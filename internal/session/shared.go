package session

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strings"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/schema"
)

// Every tab of one app advertises the same tools, so advertised tools are
// shared between sessions: one descriptor and one set of compiled schemas
// per distinct declaration, counted by the sessions that hold it. This is
// most of what keeps an idle tab cheap (compiled schemas dominate).

// liveTool is one distinct advertised declaration (Origin unset) with its
// compiled schemas, shared by refs sessions.
type liveTool struct {
	key         [32]byte
	tool        switchboard.Tool
	input, outp *schema.Schema
	refs        int
}

// keyOf fingerprints a checked declaration.
func keyOf(t switchboard.Tool) ([32]byte, error) {
	t.Origin = nil
	b, err := json.Marshal(t)
	if err != nil {
		return [32]byte{}, switchboard.Errorf(switchboard.CodeInvalidInput, "tool %s: %v", t.Name, err)
	}
	return sha256.Sum256(b), nil
}

// compileTool builds a new shared entry (no lock held: compiling is slow).
func compileTool(key [32]byte, t switchboard.Tool) (*liveTool, error) {
	t.Origin = nil
	lt := &liveTool{key: key, tool: t}
	var err error
	if lt.input, err = schema.Compile(t.InputSchema); err != nil {
		return nil, err
	}
	if len(t.OutputSchema) > 0 {
		if lt.outp, err = schema.Compile(t.OutputSchema); err != nil {
			return nil, err
		}
	}
	return lt, nil
}

// retainLocked returns the shared entry for key, taking a reference; lt is
// used when no entry exists yet. Caller holds m.mu.
func (m *Manager) retainLocked(lt *liveTool) *liveTool {
	if have := m.shared[lt.key]; have != nil {
		have.refs++
		return have
	}
	lt.refs = 1
	m.shared[lt.key] = lt
	return lt
}

// releaseLocked drops st's references to its tools. Caller holds m.mu.
func (m *Manager) releaseLocked(st *state) {
	for _, lt := range st.tools {
		if lt.refs--; lt.refs <= 0 {
			delete(m.shared, lt.key)
		}
	}
}

// listLocked returns st's tools as this tab advertised them, by name.
// Caller holds m.mu.
func (st *state) listLocked() []switchboard.Tool {
	out := make([]switchboard.Tool, 0, len(st.tools))
	for _, lt := range st.tools {
		out = append(out, st.withOrigin(lt))
	}
	slices.SortFunc(out, func(a, b switchboard.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (st *state) withOrigin(lt *liveTool) switchboard.Tool { return withOrigin(st.id, lt) }

// withOrigin is lt as session id advertises it.
func withOrigin(id string, lt *liveTool) switchboard.Tool {
	t := lt.tool
	t.Origin = &switchboard.Origin{Source: switchboard.SourceSession, SessionID: id}
	return t
}
