package main

import (
	"strings"
	"testing"
)

// A replica timeout under two heartbeats is a usage error (exit 2) that
// names both flags, said before anything is opened; the defaults are
// checked too (a timeout under two default beats).
func TestServeReplicaTimingIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"both":              {"--replica-heartbeat", "1s", "--replica-timeout", "1500ms"},
		"default heartbeat": {"--replica-timeout", "9s"},
	} {
		code, _, errs := run(t, append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:1"}, args...)...)
		if code != 2 || !strings.Contains(errs, "--replica-timeout") || !strings.Contains(errs, "twice --replica-heartbeat") {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 naming both flags", name, code, errs)
		}
	}
}
