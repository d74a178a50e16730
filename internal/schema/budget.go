package schema

import (
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/switchboardhq/switchboard"
)

// MaxExpansion bounds how many subschemas one validation may visit, counted
// over the compiled schema with every $ref followed (a subschema reached by
// two paths counts twice): the validator walks each path, so a small
// document whose allOf branches all $ref the level below grows the work
// exponentially with its depth (1 KB, four branches over ten levels:
// about 10⁶ visits per validated value). The bound is the one OpenAPI
// imports expand $refs under (internal/openapi); real tool schemas stay
// far below it.
const MaxExpansion = 250_000

// expansion counts the subschemas a validation against s may visit,
// stopping once the count passes limit. A $ref back into a schema being
// counted (a recursive schema) counts once: its repetition is bounded by
// the value's own depth, which the strict JSON decoder limits.
func expansion(s *jsonschema.Schema, limit int) int {
	memo := map[*jsonschema.Schema]int{}
	onPath := map[*jsonschema.Schema]bool{}
	var walk func(*jsonschema.Schema) int
	walk = func(s *jsonschema.Schema) int {
		if s == nil {
			return 0
		}
		if n, ok := memo[s]; ok {
			return n
		}
		if onPath[s] {
			return 1
		}
		onPath[s] = true
		n := 1
		add := func(c *jsonschema.Schema) {
			if n <= limit {
				n += walk(c)
			}
		}
		addAny := func(v any) {
			switch c := v.(type) {
			case *jsonschema.Schema:
				add(c)
			case []*jsonschema.Schema:
				for _, x := range c {
					add(x)
				}
			}
		}
		add(s.Ref)
		add(s.RecursiveRef)
		if s.DynamicRef != nil {
			add(s.DynamicRef.Ref)
		}
		add(s.Not)
		for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
			for _, c := range list {
				add(c)
			}
		}
		for _, c := range []*jsonschema.Schema{s.If, s.Then, s.Else, s.PropertyNames, s.UnevaluatedProperties,
			s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema} {
			add(c)
		}
		for _, c := range s.Properties {
			add(c)
		}
		for _, c := range s.PatternProperties {
			add(c)
		}
		for _, c := range s.DependentSchemas {
			add(c)
		}
		for _, v := range s.Dependencies {
			addAny(v)
		}
		addAny(s.AdditionalProperties)
		addAny(s.Items)
		addAny(s.AdditionalItems)
		delete(onPath, s)
		n = min(n, limit+1)
		memo[s] = n
		return n
	}
	return walk(s)
}

// checkExpansion refuses a schema whose validation could visit more than
// MaxExpansion subschemas.
func checkExpansion(s *jsonschema.Schema) error {
	if n := expansion(s, MaxExpansion); n > MaxExpansion {
		return switchboard.Errorf(switchboard.CodeInvalidInput,
			"schema expands to over %d subschemas once its $refs are followed (nested allOf/anyOf/oneOf branches that $ref the same definitions multiply); validating a value would take too long: flatten it or share fewer branches", MaxExpansion)
	}
	return nil
}
