package main

import (
	"strings"
	"testing"
	"time"
)

// TestStoreRetentionConfig: store.retention takes durations beside url and
// durability; a value that is not a duration is refused in the file's
// terms.
func TestStoreRetentionConfig(t *testing.T) {
	var cfg serveConfig
	file := "store:\n  durability: power\n  retention: {invocations: 48h, idempotencyKeys: 2h, runs: 10m}\n"
	if err := decodeConfig("f.yaml", []byte(file), &cfg); err != nil {
		t.Fatal(err)
	}
	if r := cfg.Store.Retention; r.Invocations != 48*time.Hour || r.IdempotencyKeys != 2*time.Hour || r.Runs != 10*time.Minute || cfg.Store.Durability != "power" {
		t.Fatalf("decoded %+v", cfg.Store)
	}
	err := decodeConfig("f.yaml", []byte("store: {retention: {invocations: a month}}\n"), &cfg)
	if err == nil || !strings.Contains(err.Error(), "f.yaml") || !strings.Contains(err.Error(), "retention") {
		t.Fatalf("bad duration: %v", err)
	}
}
