// Package switchboard is the domain of the switchboard daemon: the wire
// contract shared by every transport (tool descriptors, manifests, search,
// browser actions, invocations, activity entries, the assistant's run,
// harness and follow-up records, the error envelope and its frozen codes,
// the protocol version) and the Store port that the sqlite and
// postgres drivers implement.
//
// The package imports no driver and no transport. Subpackages are named for
// what they provide: registry (catalog and search), broker (the one call
// path), session (live browser tabs), httpapi (HTTP transport), client (typed
// Go client of the HTTP API), sqlite and postgres (Store drivers), storetest
// (the conformance suite both drivers pass) and daemon (the composition root
// used by `switchboard serve` and by apps that embed switchboard).
package switchboard

// ProtocolVersion is the version of the wire contract carried in manifests,
// browser action requests and results. It changes only when a wire type
// changes incompatibly.
const ProtocolVersion = "2026-11-30"
