package daemon_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestNoModelLogSaysBothWays: the log line of a daemon without models
// names the way to give them for serve and for a Go program (which has no
// --config), by the Options field's real name.
func TestNoModelLogSaysBothWays(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := &lockedBuffer{}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: wsToken, Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	var line string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "no assistant model configured") {
			line = l
		}
	}
	for _, want := range []string{"models: section", "--config", "daemon.Options.Models"} {
		if !strings.Contains(line, want) {
			t.Errorf("the no-model log line %q does not say %q", line, want)
		}
	}
}
