package switchboard

import (
	"encoding/json"
	"time"
)

// PanelInstance is one panel open in a browser tab as the store keeps it,
// so that any replica can read it and the replica a tab (re)attaches to
// can rebuild it (issue 16). Doc is package panel's encoding of the
// instance (spec, values, unsaved marks, action outcomes, lease); the store
// keeps it byte for byte and never looks inside. Version grows with every
// change, and a write names the version it replaces (PanelInstancePut), so
// two writers never silently overwrite each other.
type PanelInstance struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	// Seq orders a tab's instances: the order they opened in.
	Seq       int64           `json:"seq"`
	Version   int64           `json:"version"`
	Doc       json.RawMessage `json:"doc"`
	UpdatedAt time.Time       `json:"updatedAt"`
}
