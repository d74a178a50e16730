package panel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Chat surfaces. An MCP client that declared MCP Apps shows a panel
// itself, inside its chat (internal/mcpserver/apps.go), so it needs no
// browser tab of the app. When such a client opens or composes a panel and
// no tab shows panels, the instance belongs to the caller's chat surface:
// an id of its own ("chat_" and a digest of the principal's Key, that is
// the agent and the user it acts for) that stands where a tab's session id
// stands, in the instance, its stored row and every snapshot. So the
// approvals, the canvas policy, leases, the validator and the ledger are
// those of every panel: only the place it is shown differs.
//
// A surface is its principal's alone: anyone else reads its instances as
// not found (seesSession). It lives while that principal keeps calling
// with a client that shows panels, and ends SurfaceIdle after the last
// such call, dropping its instances like a tab that is gone. Its id
// depends on the principal only, so the same agent for the same user finds
// its panels again from its next MCP session (a reconnect, a new chat, a
// sessionless 2026-07-28 request); after a restart the stored instances
// come back on the principal's next call.

// DefaultSurfaceIdle is how long a chat surface outlives its principal's
// last call.
const DefaultSurfaceIdle = 24 * time.Hour

const surfacePrefix = "chat_"

// isSurface reports whether a session id names a chat surface (a tab's is
// "ses_…").
func isSurface(id string) bool { return strings.HasPrefix(id, surfacePrefix) }

// surfaceID is principal p's chat surface.
func surfaceID(p switchboard.Principal) string {
	sum := sha256.Sum256([]byte(p.Key()))
	return surfacePrefix + hex.EncodeToString(sum[:16])
}

// surfaces are the live chat surfaces of this replica.
type surfaces struct {
	idle time.Duration

	mu     sync.Mutex
	m      map[string]*surface
	closed bool
}

type surface struct {
	user  string // the principal's ActsFor: who the surface shows panels to
	last  time.Time
	timer *time.Timer
	gone  map[int]func()
	next  int
}

func newSurfaces(idle time.Duration) *surfaces {
	return &surfaces{idle: idle, m: map[string]*surface{}}
}

// touch keeps p's surface for idle from now, opening it if needed, and
// returns its id.
func (b *surfaces) touch(p switchboard.Principal) string {
	id := surfaceID(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return id
	}
	sf := b.m[id]
	if sf == nil {
		sf = &surface{user: p.ActsFor(), gone: map[int]func(){}}
		b.m[id] = sf
		sf.timer = time.AfterFunc(b.idle, func() { b.expire(id, sf) })
	}
	sf.last = time.Now()
	return id
}

// expire ends the surface unless a call came since its timer was set.
func (b *surfaces) expire(id string, sf *surface) {
	b.mu.Lock()
	if b.m[id] != sf {
		b.mu.Unlock()
		return
	}
	if left := b.idle - time.Since(sf.last); left > 0 {
		sf.timer.Reset(left)
		b.mu.Unlock()
		return
	}
	delete(b.m, id)
	fns := make([]func(), 0, len(sf.gone))
	for _, fn := range sf.gone {
		fns = append(fns, fn)
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

func (b *surfaces) live(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m[id] != nil
}

func (b *surfaces) watchGone(id string, fn func()) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sf := b.m[id]
	if sf == nil {
		return nil, switchboard.Errorf(switchboard.CodeSessionGone, "chat surface %s is gone", id)
	}
	n := sf.next
	sf.next++
	sf.gone[n] = fn
	return func() {
		b.mu.Lock()
		delete(sf.gone, n)
		b.mu.Unlock()
	}, nil
}

func (b *surfaces) user(id string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if sf := b.m[id]; sf != nil {
		return sf.user, nil
	}
	return "", switchboard.Errorf(switchboard.CodeSessionGone, "chat surface %s is gone", id)
}

// close stops every timer; the service drops the instances itself.
func (b *surfaces) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for id, sf := range b.m {
		sf.timer.Stop()
		delete(b.m, id)
	}
}

// surfaceTabs is Options.Tabs with the chat surfaces beside the tabs: a
// surface is connected while it lives, has no event stream (its view
// reads the instance through the client's tool calls) and is held by the
// replica it lives on.
type surfaceTabs struct {
	Tabs
	b *surfaces
}

func (t surfaceTabs) SendHere(ctx context.Context, id, kind string, data []byte) error {
	if isSurface(id) {
		return nil
	}
	return t.Tabs.SendHere(ctx, id, kind, data)
}

func (t surfaceTabs) Connected(id string) bool {
	if isSurface(id) {
		return t.b.live(id)
	}
	return t.Tabs.Connected(id)
}

func (t surfaceTabs) WatchGone(id string, fn func()) (func(), error) {
	if isSurface(id) {
		return t.b.watchGone(id, fn)
	}
	return t.Tabs.WatchGone(id, fn)
}

func (t surfaceTabs) User(ctx context.Context, id string) (string, error) {
	if isSurface(id) {
		return t.b.user(id)
	}
	return t.Tabs.User(ctx, id)
}

func (t surfaceTabs) Elsewhere(id string) string {
	if isSurface(id) {
		return ""
	}
	return t.Tabs.Elsewhere(id)
}

func (t surfaceTabs) MarkPanels(id string) {
	if !isSurface(id) {
		t.Tabs.MarkPanels(id)
	}
}

// ownSurface is the chat surface of the caller in ctx, kept alive by this
// call, when the caller's client shows panels itself (Options.ShowsPanels).
func (s *Service) ownSurface(ctx context.Context) (string, bool) {
	if s.opts.ShowsPanels == nil || !s.opts.ShowsPanels(ctx) {
		return "", false
	}
	p, ok := switchboard.PrincipalFrom(ctx)
	if !ok || p.Kind == switchboard.PrincipalSession {
		return "", false
	}
	return s.surfaces.touch(p), true
}

// seesSession reports whether the caller in ctx may see what session id
// shows: a tab's panels as its panel scope allows (the tab itself only
// its own, instance), a chat surface's only its principal, or an
// in-process caller with none.
func seesSession(ctx context.Context, id string) bool {
	if !isSurface(id) {
		return true
	}
	p, ok := switchboard.PrincipalFrom(ctx)
	return !ok || p.Kind != switchboard.PrincipalSession && surfaceID(p) == id
}

// Several replicas: a chat surface has no one holder the way a tab has
// the replica its stream is on, since a sessionless (2026-07-28) client's
// requests may reach any replica, and each replica they reach keeps the
// surface and a working copy of its panels. The store's compare-and-swap
// already keeps one replica's write from overwriting another's (a stale
// copy is dropped and the change runs again on the stored state); these
// two keep reads and the end of a surface right as well.

// surfaceStale reports whether in, this replica's copy of a chat
// surface's panel, is older than the stored one (another replica changed
// it, or closed it), so that it is read again from the store. One store
// read per access, only with several replicas (a bus).
func (s *Service) surfaceStale(ctx context.Context, in *instance) bool {
	if s.remote == nil || s.store == nil || !isSurface(in.session) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	r, err := s.store.PanelInstanceGet(ctx, in.id)
	if err != nil {
		return switchboard.CodeOf(err) == switchboard.CodeNotFound
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return r.Version != in.stored
}

// surfaceInUseElsewhere reports whether a chat surface that ended here
// had one of its panels changed, within the idle window, by another
// replica: its stored panels are then that replica's to end.
func (s *Service) surfaceInUseElsewhere(id string) bool {
	if s.remote == nil || !isSurface(id) {
		return false
	}
	ctx, cancel := context.WithTimeout(s.base, storeTimeout)
	defer cancel()
	recs, err := s.store.PanelInstanceList(ctx, id)
	if err != nil {
		return true // kept: a surface's panels are not deleted on a guess
	}
	since := time.Now().Add(-s.opts.SurfaceIdle)
	for _, r := range recs {
		if r.UpdatedAt.After(since) {
			return true
		}
	}
	return false
}
