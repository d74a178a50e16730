package manifest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/switchboardhq/switchboard"
)

// DefaultDebounce is how long a Watcher waits after the last change before
// reloading, so an editor's write-rename-chmod burst is one reload.
const DefaultDebounce = 200 * time.Millisecond

// Registrar is what a Watcher needs from the catalog; *registry.Registry
// satisfies it.
type Registrar interface {
	Register(ctx context.Context, source switchboard.Source, tools []switchboard.Tool) ([]switchboard.Tool, error)
	Unregister(ctx context.Context, source switchboard.Source, name string) error
}

// WatchOptions configures a Watcher. A nil *WatchOptions means defaults.
type WatchOptions struct {
	// Source declares the file's tools; default host.
	Source   switchboard.Source
	Debounce time.Duration
	Logger   *slog.Logger
	// OnReload, when set, is told the outcome of every reload attempt after
	// the first Load (consoles, tests).
	OnReload func(Reload)
	// Base resolves the file's path-only binding URLs (see Resolve): the
	// daemon's own URL. Empty leaves them as written (the registry then
	// refuses them).
	Base string
}

// Reload is the outcome of applying the file once.
type Reload struct {
	Registered []string // names the file declares now
	Removed    []string // names it declared before and no longer does
	Unchanged  bool     // the content had not changed; nothing was done
	Err        error    // the file was not applied; the previous catalog stays
}

// Watcher keeps the catalog in step with one manifest file: `switchboard
// serve --manifest FILE`. Load applies the file once; Start reloads it after
// every change. A reload registers the file's tools (all or nothing, like
// `tools register`) and then unregisters the tools an earlier version of
// the file declared and this one does not, so deleting a tool from the file
// deletes it from the catalog. A file that does not parse or does not
// validate is logged and ignored: the previous catalog stays in force.
//
// The Watcher remembers which names the file declared only while the
// process runs: a tool removed from the file while the daemon was stopped
// stays registered until it is deleted (`switchboard tools` or the API).
type Watcher struct {
	path string
	reg  Registrar
	opts WatchOptions

	mu     sync.Mutex
	names  []string          // declared by the last applied version
	sum    [sha256.Size]byte // content of the last applied version
	failed [sha256.Size]byte // content of the last version that failed
	stop   func()
}

// NewWatcher returns a Watcher for the manifest at path.
func NewWatcher(path string, reg Registrar, opts *WatchOptions) *Watcher {
	var o WatchOptions
	if opts != nil {
		o = *opts
	}
	if o.Source == "" {
		o.Source = switchboard.SourceHost
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return &Watcher{path: path, reg: reg, opts: o}
}

// Load reads and applies the file now. At start, a bad file is an error
// the caller should refuse to start with.
func (w *Watcher) Load(ctx context.Context) (Reload, error) {
	r := w.apply(ctx)
	return r, r.Err
}

// apply loads the file and brings the catalog in step with it.
func (w *Watcher) apply(ctx context.Context) Reload {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, err := os.ReadFile(w.path)
	if err != nil {
		return Reload{Err: switchboard.Errorf(switchboard.CodeInvalidInput, "read manifest %s: %w", w.path, err)}
	}
	sum := sha256.Sum256(b)
	if (sum == w.sum && w.names != nil) || sum == w.failed {
		return Reload{Unchanged: true, Registered: slices.Clone(w.names)}
	}
	m, err := Load(w.path)
	if err != nil {
		w.failed = sum // report a bad version once, not on every event
		return Reload{Err: err}
	}
	if w.opts.Base != "" {
		Resolve(&m, w.opts.Base)
	}
	if len(m.Panels)+len(m.Adapters) > 0 {
		// The watcher keeps the catalog in step with the file; panels and
		// adapters are the app's to declare (tools register, the API).
		w.failed = sum
		return Reload{Err: switchboard.Errorf(switchboard.CodeInvalidInput,
			"%s: serve --manifest registers tools only; declare its panels and adapters with `switchboard tools register %s`", w.path, w.path)}
	}
	tools, err := w.reg.Register(ctx, w.opts.Source, m.Tools)
	if err != nil {
		if switchboard.CodeOf(err) != switchboard.CodeUnavailable { // a store fault may pass; retry on the next event
			w.failed = sum
		}
		e := switchboard.AsError(err)
		return Reload{Err: &switchboard.Error{Code: e.Code, Message: w.path + ": " + e.Message, Details: e.Details}}
	}
	now := make([]string, len(tools))
	for i, t := range tools {
		now[i] = t.Name
	}
	slices.Sort(now)
	var removed, kept []string
	for _, name := range w.names {
		if _, found := slices.BinarySearch(now, name); found {
			continue
		}
		err := w.reg.Unregister(ctx, w.opts.Source, name)
		if err != nil && switchboard.CodeOf(err) != switchboard.CodeToolNotFound {
			// Try again on the next reload.
			w.opts.Logger.WarnContext(ctx, "manifest reload: unregister a removed tool", "tool", name, "err", err)
			kept = append(kept, name)
			continue
		}
		removed = append(removed, name)
	}
	w.names = append(now, kept...)
	slices.Sort(w.names)
	w.sum = sum
	return Reload{Registered: now, Removed: removed}
}

// Start watches the file's directory (editors replace files by renaming,
// so watching the file itself would lose it) and reloads after each burst
// of changes until ctx ends or Stop is called. The watch is in place when
// Start returns.
func (w *Watcher) Start(ctx context.Context) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch manifest: %w", err)
	}
	if err := fw.Add(filepath.Dir(w.path)); err != nil {
		fw.Close()
		return fmt.Errorf("watch manifest directory: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w.mu.Lock()
	w.stop = func() { cancel(); <-done }
	w.mu.Unlock()
	go func() {
		defer close(done)
		defer fw.Close()
		w.loop(ctx, fw)
	}()
	return nil
}

// Stop ends the watch and waits for it.
func (w *Watcher) Stop() {
	w.mu.Lock()
	stop := w.stop
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func (w *Watcher) loop(ctx context.Context, fw *fsnotify.Watcher) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			if w.relevant(ev) {
				timer.Reset(w.opts.Debounce)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return
			}
			w.opts.Logger.WarnContext(ctx, "manifest watch", "err", err)
		case <-timer.C:
			w.reload(ctx)
		}
	}
}

// relevant reports whether a directory event may have changed the file:
// an event on the file's own name (a write, a rename onto it, a removal),
// or on a ".."-prefixed name, which is how Kubernetes swaps a mounted
// ConfigMap's symlinks. Other files in the directory (a log file beside the
// manifest) are ignored, so their writes cannot trigger reloads.
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	base := filepath.Base(ev.Name)
	return base == filepath.Base(w.path) || strings.HasPrefix(base, "..")
}

func (w *Watcher) reload(ctx context.Context) {
	r := w.apply(ctx)
	switch {
	case r.Err != nil:
		if errors.Is(r.Err, os.ErrNotExist) {
			w.opts.Logger.WarnContext(ctx, "manifest file is gone; keeping the tools it declared", "file", w.path)
		} else {
			w.opts.Logger.ErrorContext(ctx, "manifest not reloaded; the previous catalog stays in force", "file", w.path, "err", r.Err)
		}
	case r.Unchanged:
	default:
		w.opts.Logger.InfoContext(ctx, "manifest reloaded", "file", w.path, "tools", len(r.Registered), "removed", r.Removed)
	}
	if w.opts.OnReload != nil && !r.Unchanged {
		w.opts.OnReload(r)
	}
}
