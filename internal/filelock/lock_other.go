//go:build !unix

// Package filelock takes an exclusive lock on a file across processes.
package filelock

// Lock does not lock where flock is missing: callers say what that costs
// them (two CLI commands may spend one refresh token twice; two first npm
// installs may race).
func Lock(string) (func(), error) { return func() {}, nil }
