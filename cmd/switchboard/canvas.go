package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"syscall"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/internal/httpapi"
	"github.com/switchboardhq/switchboard/internal/preview"
)

// canvasOptions fills the daemon's canvas policy (the config file's
// canvasPolicy, its preset replaced by --canvas-policy while its gates
// still apply) and, with --preview-addr, starts the sandboxed preview
// origin on a listener of its own: a different origin from the app and
// the API by construction (docs/panels.md, "The preview tier").
func (f *serveFlags) canvasOptions(ctx context.Context, opts *daemon.Options, main net.Listener, log *slog.Logger) (*http.Server, error) {
	opts.Canvas = f.canvas
	if f.canvasPreset != "" {
		opts.Canvas.Preset = f.canvasPreset
	}
	if err := opts.Canvas.Validate(); err != nil {
		return nil, usageError{fmt.Errorf("--canvas-policy %q: use guarded or open", f.canvasPreset), "switchboard serve"}
	}
	if f.previewAddr == "" {
		if opts.Canvas.AllowCodePreview != nil && *opts.Canvas.AllowCodePreview {
			log.WarnContext(ctx, "canvasPolicy.allowCodePreview is set but code preview stays off: no --preview-addr to serve it from")
		}
		return nil, nil
	}
	ln, err := net.Listen("tcp", f.previewAddr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "cannot listen on --preview-addr %s: the address is already in use; pass another", f.previewAddr)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on --preview-addr %s: %w", f.previewAddr, err)
	}
	ma, pa := main.Addr().(*net.TCPAddr), ln.Addr().(*net.TCPAddr)
	if ma != nil && pa != nil && ma.IP.Equal(pa.IP) {
		log.InfoContext(ctx, "the preview origin shares the daemon's host, so the browser sends it this host's cookies (it never reads them; the sandbox hides them from the code); a host of its own such as 127.0.0.2 isolates it fully", "preview", ln.Addr().String())
	}
	var ancestors []string
	if ma != nil && ma.IP.IsLoopback() {
		// The console is served at each host the daemon accepts, its own
		// address too when that is a loopback alias.
		for _, h := range loopbackHosts(ma.IP) {
			ancestors = append(ancestors, "http://"+net.JoinHostPort(h, strconv.Itoa(ma.Port)))
		}
		ancestors = append(ancestors, f.allowOrigins...)
	}
	srv := preview.New("http://"+ln.Addr().String(), &preview.Options{FrameAncestors: ancestors})
	opts.Previews, opts.PreviewOrigin = srv, srv.Origin()
	hs := httpapi.NewHTTPServer(srv.Handler(), &httpapi.ServerOptions{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)})
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("preview origin stopped", "err", err)
		}
	}()
	log.InfoContext(ctx, "sandboxed code preview origin", "addr", srv.Origin())
	return hs, nil
}
