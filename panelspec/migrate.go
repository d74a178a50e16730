package panelspec

import (
	"fmt"
	"strconv"

	"github.com/switchboardhq/switchboard"
)

// Version 0 is the pre-release format, kept readable so specs saved by early
// hosts still open. It differed from version 1 in two ways:
//
//   - Nodes were nested: "root" held the root node object itself and each
//     node's "children" held node objects, each with an optional "id".
//     Version 1 uses a flat map so that patches, repair hints and pointers
//     address a node by a stable id instead of a path that shifts when a
//     sibling is inserted.
//   - A link's props were {"url", "text"}; they are now {"href", "label"}.
//
// migrateV0 flattens the tree depth first, keeping explicit ids and minting
// "n1", "n2", ... (skipping ids already taken) for the rest, renames the
// link props, and leaves everything else (sources, state, actions, unknown
// keys) in place for the version 1 checks. Issues found afterwards point
// into the migrated document.
func migrateV0(v val, maxNodes int) (val, *parseFail) {
	// Version 0 specs are rare, so the migration works on plain maps.
	out, f := migrateV0Map(v.toAny().(map[string]any), maxNodes)
	if f != nil {
		return val{}, f
	}
	return fromAny(out), nil
}

func migrateV0Map(doc map[string]any, maxNodes int) (map[string]any, *parseFail) {
	root, ok := doc["root"].(map[string]any)
	if !ok {
		return nil, &parseFail{code: switchboard.CodeSpecParse, pointer: "/root", msg: "a version 0 spec needs the root node object under \"root\""}
	}
	m := &migration{taken: map[string]bool{}, nodes: map[string]any{}, maxNodes: maxNodes}
	if f := m.collectIDs(root, "/root"); f != nil {
		return nil, f
	}
	rootID, f := m.flatten(root, "/root")
	if f != nil {
		return nil, f
	}
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		out[k] = v
	}
	out["v"] = float64(Version)
	out["root"] = rootID
	out["nodes"] = m.nodes
	return out, nil
}

type migration struct {
	taken    map[string]bool
	nodes    map[string]any
	next     int
	count    int
	maxNodes int
}

// collectIDs records explicit ids first, so minted ids never collide with an
// id that appears later in the tree.
func (m *migration) collectIDs(n map[string]any, p string) *parseFail {
	m.count++
	if m.count > m.maxNodes {
		return &parseFail{code: switchboard.CodeSpecBudget, pointer: p, msg: fmt.Sprintf("more than %d nodes", m.maxNodes)}
	}
	if id, ok := n["id"].(string); ok {
		if m.taken[id] {
			return &parseFail{code: switchboard.CodeSpecParse, pointer: p + "/id", msg: fmt.Sprintf("duplicate node id %s", quote(id))}
		}
		m.taken[id] = true
	}
	kids, _ := n["children"].([]any)
	for i, k := range kids {
		child, ok := k.(map[string]any)
		if !ok {
			return &parseFail{code: switchboard.CodeSpecParse, pointer: fmt.Sprintf("%s/children/%d", p, i), msg: "a version 0 child must be a node object"}
		}
		if f := m.collectIDs(child, fmt.Sprintf("%s/children/%d", p, i)); f != nil {
			return f
		}
	}
	return nil
}

func (m *migration) flatten(n map[string]any, p string) (string, *parseFail) {
	id, ok := n["id"].(string)
	if _, has := n["id"]; has && !ok {
		return "", &parseFail{code: switchboard.CodeSpecParse, pointer: p + "/id", msg: "a node id must be a string"}
	}
	if !ok {
		for {
			m.next++
			id = "n" + strconv.Itoa(m.next)
			if !m.taken[id] {
				break
			}
		}
		m.taken[id] = true
	}
	node := make(map[string]any, len(n))
	for k, v := range n {
		switch k {
		case "id", "children":
		default:
			node[k] = v
		}
	}
	if node["type"] == TypeLink {
		if props, ok := node["props"].(map[string]any); ok {
			node["props"] = renameProps(props, map[string]string{"url": "href", "text": "label"})
		}
	}
	if kids, ok := n["children"].([]any); ok {
		ids := make([]any, 0, len(kids))
		for i, k := range kids {
			cid, f := m.flatten(k.(map[string]any), fmt.Sprintf("%s/children/%d", p, i))
			if f != nil {
				return "", f
			}
			ids = append(ids, cid)
		}
		node["children"] = ids
	} else if c, has := n["children"]; has {
		node["children"] = c // not an array: the version 1 checks report it
	}
	m.nodes[id] = node
	return id, nil
}

// renameProps returns props with old names replaced by new ones, unless the
// new name is already present (then both stay, and the props check reports
// the old one as unknown).
func renameProps(props map[string]any, renames map[string]string) map[string]any {
	out := make(map[string]any, len(props))
	for k, v := range props {
		if nk, ok := renames[k]; ok {
			if _, clash := props[nk]; !clash {
				out[nk] = v
				continue
			}
		}
		out[k] = v
	}
	return out
}
