package activity

import (
	"encoding/json"

	"github.com/switchboardhq/switchboard"
)

// Call is what a tool.call entry's details say of a call's end
// (internal/broker/record.go writes them), as the metrics and the
// telemetry read them.
type Call struct {
	Status     string  `json:"status"`
	Surface    string  `json:"surface"`
	DurationMs float64 `json:"durationMs"`
	Code       string  `json:"code"`
}

// CallOf reads the call e records; ok is false for an entry whose details
// name no status. A call written before entries had a surface is an api
// call.
func CallOf(e switchboard.ActivityEntry) (c Call, ok bool) {
	if e.Verb != VerbToolCall || json.Unmarshal(e.Details, &c) != nil || c.Status == "" {
		return Call{}, false
	}
	if c.Surface == "" {
		c.Surface = string(switchboard.SurfaceAPI)
	}
	return c, true
}

// Labels are the class and transport c is counted under: lookup's answer
// for tool ("other" for what it no longer knows), and transport "browser"
// for a call a tab ran, whatever the catalog holds now.
func (c Call) Labels(tool string, lookup func(name string) (class, transport string, ok bool)) (class, transport string) {
	class, transport = "other", "other"
	if lookup != nil {
		if cl, tr, ok := lookup(tool); ok {
			class, transport = cl, tr
		}
	}
	if c.Surface == string(switchboard.SurfaceBrowser) {
		transport = "browser"
	}
	return class, transport
}
