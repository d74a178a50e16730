package switchboard

import "context"

// Progress is one report on a call in flight: how far it got and, above
// all for a model waiting on it, a message saying what it is doing.
// Progress grows with every report; Total is zero when unknown.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

// ProgressFunc receives progress reports. It must not block.
type ProgressFunc func(Progress)

type progressKey struct{}

// WithProgress returns ctx carrying fn. A transport that can relay progress
// (MCP's notifications/progress) sets it before calling the broker; the
// parts of the call path that wait (a Go-function tool, a job, an approval,
// a browser tab) report through ReportProgress without knowing the
// transport.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress sends p to the ProgressFunc in ctx, if any.
func ReportProgress(ctx context.Context, p Progress) {
	if fn, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && fn != nil {
		fn(p)
	}
}
