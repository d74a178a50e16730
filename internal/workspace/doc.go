// Package workspace is the world model every agent reads: the agent
// sessions at work (agents.go), the contexts the user's tabs report
// (contexts.go) and the token-budgeted WorkspaceDigest compiled from them
// and from the jobs, approvals and ledger (digest.go). The daemon builds one
// and hands it to every transport; the wire records are in the root package
// (workspace.go).
package workspace
