package mcpserver

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSDKResourceUpdatedLogsAtDebug publishes a resources/updated through
// the real go-sdk server: at INFO the SDK's per-notification line is gone,
// at DEBUG it is there, at level DEBUG; other SDK lines keep their level.
func TestSDKResourceUpdatedLogsAtDebug(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))
		e := newEnv(t, Options{Logger: log})
		if err := e.mcp.sdk.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: DigestURI}); err != nil {
			t.Fatal(err)
		}
		sdkLogger(log).Info("some other sdk line")
		out := buf.String()
		got := strings.Contains(out, "resource updated notification sent")
		if level == slog.LevelInfo && got {
			t.Errorf("at INFO the per-notification line was logged:\n%s", out)
		}
		if level == slog.LevelDebug && !strings.Contains(out, `level=DEBUG msg="resource updated notification sent"`) {
			t.Errorf("at DEBUG the per-notification line is missing or not at DEBUG:\n%s", out)
		}
		if !strings.Contains(out, `level=INFO msg="some other sdk line"`) {
			t.Errorf("another SDK line lost its level:\n%s", out)
		}
	}
}
