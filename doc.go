// Package switchboard is the domain of the switchboard daemon: the wire
// contract shared by every transport (tool descriptors, manifests, search,
// browser actions, invocations, activity entries, the assistant's run,
// harness and follow-up records, the error envelope and its frozen codes,
// the protocol version) and the Store port that the sqlite and
// postgres drivers implement.
//
// The package imports no driver and no transport. The other public
// packages are daemon (embed switchboard in a Go program), client (typed
// Go client of the HTTP API), sqlite and postgres (Store drivers),
// panelspec (the panel spec and the data adapter port), assertion
// (verifying what a backend receives) and agui (AG-UI wire types); the
// engine is internal.
package switchboard

// ProtocolVersion is the version of the wire contract carried in manifests,
// browser action requests and results. It changes only when a wire type
// changes incompatibly.
const ProtocolVersion = "2026-11-30"
