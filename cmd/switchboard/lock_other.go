//go:build !unix

package main

// lockFile does not lock where flock is missing: two commands refreshing
// one sign-in at the same moment may spend its refresh token twice, which
// revokes the grant (log in again).
func lockFile(string) (func(), error) { return func() {}, nil }
