package mcpserver

import (
	"context"
	"log/slog"
)

// demoted are go-sdk log messages logged at INFO once per event that an
// operator does not want to read at INFO: "resource updated notification
// sent" is written for every resources/updated the daemon publishes, even
// to no subscriber, and made up 41 of 93 lines of a short demo session.
var demoted = map[string]bool{
	"resource updated notification sent": true,
}

// sdkLogger returns the logger handed to the go-sdk: log, with the SDK's
// per-notification INFO lines lowered to DEBUG. The SDK takes only a
// *slog.Logger, so the level is changed at the handler boundary.
func sdkLogger(log *slog.Logger) *slog.Logger {
	return slog.New(demoteHandler{log.Handler()})
}

type demoteHandler struct{ next slog.Handler }

func (h demoteHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h demoteHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo && demoted[r.Message] {
		if !h.next.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.next.Handle(ctx, r)
}

func (h demoteHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return demoteHandler{h.next.WithAttrs(as)}
}

func (h demoteHandler) WithGroup(name string) slog.Handler {
	return demoteHandler{h.next.WithGroup(name)}
}
