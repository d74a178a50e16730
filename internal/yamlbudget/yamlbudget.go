// Package yamlbudget decodes untrusted YAML (and JSON, which is YAML)
// documents under explicit budgets of bytes, depth, nodes and expanded
// bytes, and a deadline. Every reader of a document a user hands the
// daemon or the CLI (manifests, OpenAPI documents) decodes through it, so
// all of them refuse the same expansion bombs with the same errors.
//
// YAML aliases are references: a 1 KB document whose anchors alias the
// level below four times, eleven levels deep, parses into a few dozen
// nodes but decodes into millions. The parse (into yaml.Node, which keeps
// aliases as references) is linear in the input; Decode then walks the
// tree as a decoder would, following every alias, and stops as soon as a
// budget is spent, before anything is expanded. Only a document within
// its budget is decoded, so decoding it costs at most the budget.
package yamlbudget

import (
	"context"
	"errors"

	"go.yaml.in/yaml/v4"

	"github.com/switchboardhq/switchboard"
)

// Defaults for a document read from a file or a request body.
const (
	// DefaultBytes bounds the document as sent.
	DefaultBytes = 32 << 20
	// DefaultDepth bounds nesting (mappings and sequences), aliases
	// followed.
	DefaultDepth = 256
	// DefaultNodes bounds the nodes of the decoded document, every alias
	// expanded: a legitimate 32 MiB document has well under a million.
	DefaultNodes = 2_000_000
	// DefaultExpandedBytes bounds the scalar bytes of the decoded document,
	// every alias expanded: twice the largest document, so an anchor
	// reused now and then fits but a fan-out does not.
	DefaultExpandedBytes = 2 * DefaultBytes
)

// checkEvery is how many nodes the walk visits between deadline checks.
const checkEvery = 4096

// Budget bounds one document. Zero fields take the defaults.
type Budget struct {
	Bytes         int
	Depth         int
	Nodes         int
	ExpandedBytes int64
}

func (b Budget) withDefaults() Budget {
	if b.Bytes <= 0 {
		b.Bytes = DefaultBytes
	}
	if b.Depth <= 0 {
		b.Depth = DefaultDepth
	}
	if b.Nodes <= 0 {
		b.Nodes = DefaultNodes
	}
	if b.ExpandedBytes <= 0 {
		b.ExpandedBytes = DefaultExpandedBytes
	}
	return b
}

// SyntaxError is a document that is not YAML. Line and Column (1-based)
// are 0 when the parser did not say where.
type SyntaxError struct {
	Line, Column int
	Message      string
	Err          error
}

func (e *SyntaxError) Error() string { return e.Err.Error() }
func (e *SyntaxError) Unwrap() error { return e.Err }

// Decode parses data and decodes it into a Go value (maps, slices,
// scalars, as yaml.Unmarshal into an any would) when it fits b and ctx
// has not expired. A document over a budget is PAYLOAD_TOO_LARGE (its
// size, or its size once aliases are expanded) or INVALID_INPUT (too
// deep, or the deadline passed), with a message naming the budget; a
// document that is not YAML is a *SyntaxError.
func Decode(ctx context.Context, data []byte, b Budget) (any, error) {
	root, err := Parse(ctx, data, b)
	if err != nil {
		return nil, err
	}
	var v any
	if err := root.Decode(&v); err != nil {
		return nil, syntaxError(err)
	}
	return v, nil
}

// Parse is Decode's first half: the node tree of data, checked against b.
// A caller that decodes into its own types decodes the returned node.
func Parse(ctx context.Context, data []byte, b Budget) (*yaml.Node, error) {
	b = b.withDefaults()
	if len(data) > b.Bytes {
		return nil, switchboard.Errorf(switchboard.CodePayloadTooLarge,
			"the document is %d bytes; the limit is %d", len(data), b.Bytes)
	}
	if err := ctx.Err(); err != nil {
		return nil, expired(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(err)
	}
	w := walker{ctx: ctx, b: b}
	if err := w.walk(&root, 0); err != nil {
		return nil, err
	}
	return &root, nil
}

func syntaxError(err error) error {
	se := &SyntaxError{Message: err.Error(), Err: err}
	var le *yaml.LoadError
	if errors.As(err, &le) {
		se.Message = le.Message
		if le.Mark.Line > 0 {
			se.Line, se.Column = le.Mark.Line, le.Mark.Column
		}
	}
	return se
}

func expired(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "reading the document took longer than its time budget; it is too large or too intricate to import")
	}
	return switchboard.Errorf(switchboard.CodeCancelled, "reading the document was cancelled")
}

// walker visits the tree as a decoder would: an alias is visited as the
// node it names, every time it occurs.
type walker struct {
	ctx    context.Context
	b      Budget
	nodes  int
	scalar int64
}

func (w *walker) walk(n *yaml.Node, depth int) error {
	if n == nil {
		return nil
	}
	w.nodes++
	if w.nodes > w.b.Nodes {
		return switchboard.Errorf(switchboard.CodePayloadTooLarge,
			"the document expands to more than %d nodes once its aliases are followed (anchors and aliases that repeat each other multiply); write the repeated parts out, or split the document", w.b.Nodes)
	}
	if w.nodes%checkEvery == 0 {
		if err := w.ctx.Err(); err != nil {
			return expired(err)
		}
	}
	switch n.Kind {
	case yaml.AliasNode:
		return w.walk(n.Alias, depth)
	case yaml.ScalarNode:
		w.scalar += int64(len(n.Value))
		if w.scalar > w.b.ExpandedBytes {
			return switchboard.Errorf(switchboard.CodePayloadTooLarge,
				"the document expands to more than %d bytes of values once its aliases are followed; write the repeated parts out, or split the document", w.b.ExpandedBytes)
		}
		return nil
	case yaml.MappingNode, yaml.SequenceNode:
		if depth >= w.b.Depth {
			return switchboard.Errorf(switchboard.CodeInvalidInput,
				"the document nests deeper than %d levels", w.b.Depth)
		}
		depth++
	}
	for _, c := range n.Content {
		if err := w.walk(c, depth); err != nil {
			return err
		}
	}
	return nil
}
