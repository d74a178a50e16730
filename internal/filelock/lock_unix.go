//go:build unix

// Package filelock takes an exclusive lock on a file across processes:
// the CLI's sign-in refresh and the tests' one-time npm installs each
// need one writer at a time.
package filelock

import (
	"os"
	"syscall"
)

// Lock takes an exclusive lock on path (created 0600 if missing) with
// flock, released by the returned func or when the process exits.
func Lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
