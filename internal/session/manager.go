package session

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// Defaults for Options.
const (
	// DefaultHeartbeat is how often an idle stream gets a keep-alive comment.
	DefaultHeartbeat = 15 * time.Second
	// DefaultReconnect is how long a call named to a tab whose stream
	// dropped waits for the stream to come back before SESSION_GONE.
	DefaultReconnect = 5 * time.Second
	// DefaultMaxQueued bounds the events waiting to be written to one stream;
	// a reader that falls further behind is disconnected (it resumes).
	DefaultMaxQueued = 256
	// DefaultMaxResultBytes bounds one result POST.
	DefaultMaxResultBytes = 1 << 20
	// DefaultMaxTools bounds the tools one tab may advertise.
	DefaultMaxTools = 256
	// maxRetainedCancels bounds the cancel events kept for resume.
	maxRetainedCancels = 64
	// maxRunsPerSession bounds the run bindings kept for one tab.
	maxRunsPerSession = 1024
	// maxRunsElsewhere bounds the run bindings kept for tabs other
	// replicas hold (BindRun).
	maxRunsElsewhere = 4096
	// finalizeTimeout bounds a store read or write made off any request
	// (a reload, recording where a tab's stream is).
	finalizeTimeout = 5 * time.Second
)

// Options configures a Manager. Store is required.
type Options struct {
	Store switchboard.Store
	// Bus carries dispatches and completions; nil means a private
	// bus.NewLocal().
	Bus    bus.Bus
	Logger *slog.Logger
	// Replica is the serve process that opens the sessions
	// (Session.Replica).
	Replica string
	// Heartbeat is the keep-alive interval of event streams.
	Heartbeat time.Duration
	// Grace is how long the session of a tab whose stream dropped is kept
	// (its tools, its run bindings, its pending events) so a reload resumes
	// it; default 2 × Heartbeat.
	Grace time.Duration
	// Reconnect is how long a tab whose stream dropped may still take the
	// calls named to it: such a call waits at most this long for the stream
	// to come back, then fails with SESSION_GONE. A disconnected tab is
	// never offered for calls that do not name it. Default
	// DefaultReconnect, at most Grace.
	Reconnect      time.Duration
	MaxQueued      int
	MaxResultBytes int64
	MaxTools       int
	Now            func() time.Time
	// Catalog, if set, checks an advertisement against the catalog: the
	// registry refuses a tab's tool under an api tool's name
	// (registry.CheckAdvertised). nil checks nothing.
	Catalog Catalog
	// Presence shares which tabs this process holds with the other
	// replicas on the bus, so a call reaching any replica goes to the tab
	// (presence.go). The daemon turns it on; Shutdown stops it.
	Presence bool
}

// Catalog is what Advertise asks of the catalog (*registry.Registry).
type Catalog interface {
	CheckAdvertised(ctx context.Context, tools []switchboard.Tool) error
}

// Manager holds the live sessions of this process. Safe for concurrent use.
type Manager struct {
	store switchboard.Store
	bus   bus.Bus
	log   *slog.Logger
	opts  Options

	mu       sync.Mutex
	sessions map[string]*state
	byTool   map[string]map[string]*state // tool name → live advertisers
	runs     map[string]string            // run → bound session
	// runsElsewhere lists, oldest first, the runs bound to a tab another
	// replica holds (bindElsewhereLocked), the bound on their number.
	runsElsewhere []string
	delivered     map[string]func(error) // invocation → its Deliver's gone signal
	shared        map[[32]byte]*liveTool // advertised tools, shared by sessions
	closed        bool
	shutdown      chan struct{}
	watch         toolWatch // live-tool change signals (LiveTools)

	// Other replicas' tabs (presence.go), guarded by mu.
	replica      string
	remote       map[string]*remoteTab
	remoteTools  map[[32]byte]*liveTool
	presenceDone chan struct{} // nil unless Options.Presence
	presenceKick chan struct{} // announce now (MarkPanels); nil unless Options.Presence
}

var _ broker.Browser = (*Manager)(nil)

// New returns a Manager over opts.Store.
func New(opts Options) (*Manager, error) {
	if opts.Store == nil {
		return nil, errors.New("session: Options.Store is required")
	}
	if opts.Bus == nil {
		opts.Bus = bus.NewLocal()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.Grace <= 0 {
		opts.Grace = 2 * opts.Heartbeat
	}
	switch {
	case opts.Reconnect <= 0:
		opts.Reconnect = min(DefaultReconnect, opts.Grace)
	case opts.Reconnect > opts.Grace:
		return nil, fmt.Errorf("session: the reconnect window (%s) must not be longer than the keep window (%s)", opts.Reconnect, opts.Grace)
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = DefaultMaxQueued
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.MaxTools <= 0 {
		opts.MaxTools = DefaultMaxTools
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Manager{
		store:     opts.Store,
		bus:       opts.Bus,
		log:       opts.Logger,
		opts:      opts,
		sessions:  map[string]*state{},
		byTool:    map[string]map[string]*state{},
		runs:      map[string]string{},
		delivered: map[string]func(error){},
		shared:    map[[32]byte]*liveTool{},
		shutdown:  make(chan struct{}),

		replica:     cmp.Or(opts.Replica, randomHex(8)),
		remote:      map[string]*remoteTab{},
		remoteTools: map[[32]byte]*liveTool{},
	}
	if opts.Presence {
		if err := m.startPresence(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Reconnect is how long a call named to a tab whose stream dropped waits
// for it (Options.Reconnect).
func (m *Manager) Reconnect() time.Duration { return m.opts.Reconnect }

// Heartbeat is the keep-alive interval transports use on event streams.
func (m *Manager) Heartbeat() time.Duration { return m.opts.Heartbeat }

// MaxResultBytes is the largest result body the return path accepts.
func (m *Manager) MaxResultBytes() int64 { return m.opts.MaxResultBytes }

// Created is the answer to opening a session. The token is shown only here.
type Created struct {
	SessionID    string `json:"sessionId"`
	SessionToken string `json:"sessionToken"`
}

// Create opens an unscoped session for principal (see CreateFor).
func (m *Manager) Create(ctx context.Context, principal string) (Created, error) {
	return m.CreateFor(ctx, OpenRequest{Principal: principal})
}

// OpenRequest is what an app's backend opens a session with: the user it
// signed in and the scope it gives that user's assistant.
type OpenRequest struct {
	// Principal names the signed-in user (may be empty).
	Principal string   `json:"principal,omitempty"`
	Allow     []string `json:"allow,omitempty"`
	Deny      []string `json:"deny,omitempty"`
	switchboard.PanelScope
	// Canvas is the session's narrowing of the canvas policy, stored with
	// the session (Session.Canvas); the caller validates it (package
	// panel), this package only keeps it.
	Canvas json.RawMessage `json:"canvasPolicy,omitempty"`
}

// CreateFor opens a session for req.Principal with req's scope, checked as an
// agent token's is (a bad glob is INVALID_INPUT and opens nothing). The
// token is 256 random bits prefixed with the session id, so a token names
// its own session; only its SHA-256 is stored.
func (m *Manager) CreateFor(ctx context.Context, req OpenRequest) (Created, error) {
	principal := req.Principal
	if len(principal) > 256 {
		return Created{}, switchboard.Errorf(switchboard.CodeInvalidInput, "principal is longer than 256 bytes")
	}
	for _, g := range append(append([]string(nil), req.Allow...), req.Deny...) {
		if err := scope.CheckGlob(g); err != nil {
			return Created{}, err
		}
	}
	if err := scope.CheckPanelScope(req.PanelScope); err != nil {
		return Created{}, err
	}
	id := "ses_" + randomHex(16)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // crypto/rand.Read never fails on supported platforms
	token := id + "." + base64.RawURLEncoding.EncodeToString(secret)
	s := switchboard.Session{ID: id, TokenHash: hashToken(token), Principal: principal, CreatedAt: m.opts.Now(), Replica: m.opts.Replica,
		Scope: switchboard.SessionScope{Allow: req.Allow, Deny: req.Deny, PanelScope: req.PanelScope}, Canvas: req.Canvas}
	if err := m.store.SessionCreate(ctx, s); err != nil {
		return Created{}, err
	}
	return Created{SessionID: id, SessionToken: token}, nil
}

// Authenticate checks a session token and returns the session it belongs
// to. An unknown session or wrong token is UNAUTHORIZED; a closed session is
// SESSION_GONE, so the SDK knows to stop reconnecting.
func (m *Manager) Authenticate(ctx context.Context, token string) (string, error) {
	id, _, ok := strings.Cut(token, ".")
	if !ok || !strings.HasPrefix(id, "ses_") {
		return "", switchboard.Errorf(switchboard.CodeUnauthorized, "not a session token")
	}
	m.mu.Lock()
	st := m.sessions[id]
	m.mu.Unlock()
	var want string
	if st != nil {
		want = st.tokenHash
	} else {
		s, err := m.store.SessionGet(ctx, id)
		if err != nil {
			if switchboard.CodeOf(err) == switchboard.CodeNotFound {
				return "", switchboard.Errorf(switchboard.CodeUnauthorized, "the session token is not valid")
			}
			return "", err
		}
		if !s.ClosedAt.IsZero() {
			if tokenEqual(s.TokenHash, token) {
				return "", switchboard.Errorf(switchboard.CodeSessionGone, "session %s was closed; open a new one", id)
			}
			return "", switchboard.Errorf(switchboard.CodeUnauthorized, "the session token is not valid")
		}
		want = s.TokenHash
	}
	if !tokenEqual(want, token) {
		return "", switchboard.Errorf(switchboard.CodeUnauthorized, "the session token is not valid")
	}
	return id, nil
}

// Close ends a session for good: its stream ends (on whichever replica
// holds it), its tools are withdrawn, calls waiting on it fail with
// SESSION_GONE, and its token stops working.
func (m *Manager) Close(ctx context.Context, id string) error {
	if err := m.store.SessionClose(ctx, id, m.opts.Now()); err != nil {
		return err
	}
	m.mu.Lock()
	st := m.sessions[id]
	m.mu.Unlock()
	if st != nil {
		m.end(st, nil, "the session was closed")
	} else {
		m.publishGone(id, "the session was closed")
	}
	// Whoever else keeps a state of the tab ends it (state.onDispatch),
	// and every replica forgets the tab's presence at once.
	if m.opts.Presence {
		m.publishPresence(presenceMsg{From: m.replica, ID: id, Gone: true, Closed: true})
	}
	if err := m.bus.Publish(context.WithoutCancel(ctx), topicDispatch(id), encodeDispatch(msgEnd, m.replica, nil)); err != nil {
		m.log.Warn("tell other replicas the session was closed", "session", id, "err", err)
	}
	return nil
}

// Shutdown ends every stream and tells every delivered call that this
// daemon is going (the broker records UNAVAILABLE), so a graceful HTTP
// shutdown completes. Sessions stay open in
// the store; tabs reconnect to the next daemon.
func (m *Manager) Shutdown() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	close(m.shutdown)
	for _, signal := range m.delivered {
		signal(errShutdown()) // the broker ends each call UNAVAILABLE
	}
	states := make([]*state, 0, len(m.sessions))
	for _, st := range m.sessions {
		states = append(states, st)
	}
	m.mu.Unlock()
	if m.presenceDone != nil {
		<-m.presenceDone // the others are told this replica's tabs are gone
	}
	for _, st := range states {
		st.mu.Lock()
		if st.timer != nil {
			st.timer.Stop()
		}
		c := st.conn
		st.mu.Unlock()
		if c != nil {
			c.end(switchboard.Errorf(switchboard.CodeUnavailable, "the daemon is shutting down"))
		}
	}
}

// Live reports how many sessions have a connected stream.
func (m *Manager) Live() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, st := range m.sessions {
		if st.connected() {
			n++
		}
	}
	return n
}

func hashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func tokenEqual(hash, token string) bool {
	return subtle.ConstantTimeCompare([]byte(hash), []byte(hashToken(token))) == 1
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Open reports how many requests dispatched to session id are still
// unanswered in its log (zero when this process does not hold it).
func (m *Manager) Open(id string) int {
	m.mu.Lock()
	st := m.sessions[id]
	m.mu.Unlock()
	if st == nil {
		return 0
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	n := 0
	for _, ev := range st.log {
		if ev.kind == KindRequest {
			n++
		}
	}
	return n
}
