package benchkit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/switchboardhq/switchboard"
)

// RetrievalSet is one public tool-retrieval set (shared/benchdata/toolret)
// with its tool names mapped to switchboard's name grammar.
type RetrievalSet struct {
	Name    string
	Tools   []switchboard.Tool
	Queries []RetrievalQuery
	// Source maps each switchboard name back to the set's own name.
	Source map[string]string
}

// RetrievalQuery is one query and the switchboard names of its gold tools.
type RetrievalQuery struct {
	QID, Subset, Query string
	Gold               []string
}

// BenchdataDir returns shared/benchdata: $SWITCHBOARD_BENCHDATA, else
// ../../shared/benchdata from this package's directory (the repo's sibling
// shared/ checkout). ok is false when neither exists.
func BenchdataDir() (dir string, ok bool) {
	dir = os.Getenv("SWITCHBOARD_BENCHDATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "benchdata")
	}
	st, err := os.Stat(dir)
	return dir, err == nil && st.IsDir()
}

// LoadRetrievalSet reads tools.jsonl and queries.jsonl from dir. Tools are
// registered as read-only api tools.
func LoadRetrievalSet(dir string) (*RetrievalSet, error) {
	set := &RetrievalSet{Name: filepath.Base(dir), Source: map[string]string{}}
	toName := map[string]string{}
	err := readJSONL(filepath.Join(dir, "tools.jsonl"), func(line []byte) error {
		var t struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(line, &t); err != nil {
			return err
		}
		name := uniqueName(ToolName(t.Name), set.Source)
		set.Source[name], toName[t.Name] = t.Name, name
		schema := t.InputSchema
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		schema, err := visibleKeys(schema)
		if err != nil {
			return fmt.Errorf("tool %s: %w", t.Name, err)
		}
		set.Tools = append(set.Tools, switchboard.Tool{
			Name: name, Description: t.Description, InputSchema: schema,
			Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead,
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = readJSONL(filepath.Join(dir, "queries.jsonl"), func(line []byte) error {
		var q struct {
			QID, Subset, Query string
			Gold               []string
		}
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		rq := RetrievalQuery{QID: q.QID, Subset: q.Subset, Query: q.Query}
		for _, g := range q.Gold {
			name, ok := toName[g]
			if !ok {
				return fmt.Errorf("query %s: gold tool %q is not in tools.jsonl", q.QID, g)
			}
			rq.Gold = append(rq.Gold, name)
		}
		set.Queries = append(set.Queries, rq)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return set, nil
}

// visibleKeys drops control and format characters from the schema's member
// names and from the property names it lists as required: the daemon refuses
// such names from outside (a tool input could never carry them), and a few
// ToolBench schemas have them by accident ("date\t").
func visibleKeys(schema json.RawMessage) (json.RawMessage, error) {
	if !strings.ContainsFunc(string(schema), func(r rune) bool { return r < 0x20 || r == '\\' || r >= 0x80 }) {
		return schema, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(schema)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(cleanKeys(v, false))
}

func cleanKeys(v any, required bool) any {
	visible := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				return -1
			}
			return r
		}, s)
	}
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			ck := visible(k)
			if _, dup := out[ck]; dup && ck != k {
				continue // the clean name already exists: keep that one
			}
			out[ck] = cleanKeys(e, k == "required")
		}
		return out
	case []any:
		for i, e := range v {
			if s, ok := e.(string); ok && required {
				v[i] = visible(s)
			} else {
				v[i] = cleanKeys(e, false)
			}
		}
		return v
	}
	return v
}

func readJSONL(path string, each func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if err := each(sc.Bytes()); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// NameGrammar is the tool-name grammar: lowercase dot-separated segments of
// [a-z0-9_].
var NameGrammar = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)

// ToolName maps a source name into the name grammar: camelCase humps become
// underscores ("getPowerOutput" → "get_power_output"), other characters
// outside [a-z0-9_.] become underscores, empty segments become "x". The
// mapping is not injective in general; LoadRetrievalSet makes it so and
// keeps the way back.
func ToolName(src string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range src {
		switch {
		case unicode.IsUpper(r):
			if unicode.IsLower(prev) || unicode.IsDigit(prev) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
		case r == '.' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		prev = r
	}
	segs := strings.Split(b.String(), ".")
	for i, s := range segs {
		for strings.Contains(s, "__") {
			s = strings.ReplaceAll(s, "__", "_")
		}
		if s = strings.Trim(s, "_"); s == "" {
			s = "x"
		}
		segs[i] = s
	}
	return strings.Join(segs, ".")
}

func uniqueName(name string, taken map[string]string) string {
	if _, dup := taken[name]; !dup {
		return name
	}
	for i := 2; ; i++ {
		if n := fmt.Sprintf("%s_%d", name, i); taken[n] == "" {
			return n
		}
	}
}
