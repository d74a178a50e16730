package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Members is this replica among the replicas on one store, and the failure
// detector: it registers the replica (switchboard.Replica), heartbeats,
// watches the others and claims the dead ones. A claim is a
// compare-and-swap on the dead replica's beat count (Store.ReplicaClaim),
// so exactly one survivor wins it, and a replica that beat after the
// claimer last looked is never claimed; the winner resolves the dead
// replica's work (MembersOptions.TakeOver).
//
// A replica is found dead when:
//
//   - it stopped cleanly (Release): at the next round;
//   - on a store that holds locks (Locks: Postgres), the replica
//     registered holding a presence lock (Replica.PresenceLock) and that
//     lock is free at two consecutive probes (Probe apart): its process
//     died and Postgres ended its session; a connection that drops and
//     comes back within a probe is not a death. Both probes must see
//     this replica's own lock held, as must the probe before them, and
//     held again for at least lockSettle when it was found free: when
//     its own lock is free too, the outage is shared (a cut, a database
//     refusing connections), and claiming on it would have every replica
//     claim every other;
//   - its beats stood still for the longer of its timeout and this
//     replica's (Timeout), as seen while this replica could read the
//     store (an outage of the store stops every beat): the fallback, for
//     a replica hung but connected, one whose host vanished without
//     closing its connections, or any replica on a store without locks.
//
// A replica that finds itself claimed (its beat refused) stops: Lost.
type Members struct {
	id    string
	opts  MembersOptions
	st    switchboard.Store
	locks Locks  // nil: heartbeat only
	fence Fencer // nil: claimed replicas are not cut off
	log   *slog.Logger

	lost     chan struct{}
	lostOnce sync.Once
	release  func() // ends the presence lock
	relocked chan struct{}

	mu    sync.Mutex
	gone  map[string]chan struct{} // Gone's channels
	asked map[string]time.Time     // when Gone was first asked about an id not known dead
	dead  map[string]bool          // known gone
	live  map[string]bool          // registered and neither stopped nor claimed, at the last round

	// taking is the replicas whose takeover is running; takeMu runs
	// takeovers one at a time, off the watch goroutine, so that a long
	// one does not stop this replica's own beats (and get it claimed in
	// turn).
	taking map[string]bool
	takeMu sync.Mutex

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// Locks is a store that can hold a lock for as long as this process's
// connection to it lives (*postgres.Store). Members uses it when the store
// has it.
type Locks interface {
	// HoldLock takes lock name and keeps it until release (or the store
	// closes); a dropped connection is replaced and the lock retaken at
	// once, then relocked is called.
	HoldLock(ctx context.Context, name string, relocked func()) (release func(), err error)
	// LocksHeld reports which of names' locks are held now, by anyone.
	LocksHeld(ctx context.Context, names []string) (map[string]bool, error)
}

// Fencer is a store that can cut a claimed replica off (*postgres.Store):
// a replica that was only paused must not write once another resolved its
// work, and its open transactions must not hold the claimer up. Members
// uses it along with Locks (a store behind a transaction pooler has
// neither).
type Fencer interface {
	// Fence ties this process's sessions to replica id: none opens once id
	// is claimed or forgotten.
	Fence(id string) error
	// CutOff ends every session of replica id, rolling back what they had
	// open, and reports how many there were.
	CutOff(ctx context.Context, id string) (int, error)
	// FencedBy reports the claimer once the store refused this replica a
	// session because it was claimed (it cannot read its row any more).
	FencedBy() (string, bool)
}

// Defaults for MembersOptions.
const (
	DefaultHeartbeat = 5 * time.Second
	DefaultTimeout   = 30 * time.Second
	DefaultProbe     = time.Second
)

// MembersOptions tune Members. Zero durations mean the defaults.
type MembersOptions struct {
	Store switchboard.Store
	// Name is stable across restarts of one process: a start claims the
	// previous starts of its name at once (on a store with Locks, those
	// not holding their presence lock). Default: the host name.
	Name string
	// Addr is shown to operators.
	Addr string
	// Heartbeat is how often the replica beats (DefaultHeartbeat).
	Heartbeat time.Duration
	// Timeout is how long another replica's beats may stand still before
	// it is claimed (DefaultTimeout); at least twice Heartbeat.
	Timeout time.Duration
	// Probe is how often the others' presence locks are read and the
	// registry listed, on a store with Locks (DefaultProbe; never more
	// than Heartbeat).
	Probe time.Duration
	// NoLock keeps to heartbeats on a store with Locks (for a connection
	// pooler that does not keep sessions, where a session lock means
	// nothing).
	NoLock bool
	Logger *slog.Logger
	// TakeOver resolves the work of replica id, which this replica claimed,
	// and of owners (id and the replicas it had claimed without finishing:
	// ClaimedBy); an error leaves it claimed, to be retried at the next
	// round. It runs one at a time, on a goroutine beside the watch (which
	// goes on beating), after the claimed replica's sessions were cut off
	// (Fencer); when it succeeds the owners' rows are deleted.
	TakeOver func(ctx context.Context, id string, owners map[string]bool) error
}

// NewMembers names this start of the replica. Nothing is written until
// Register.
func NewMembers(o MembersOptions) (*Members, error) {
	if o.Name == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		o.Name = host
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Probe <= 0 {
		o.Probe = DefaultProbe
	}
	o.Probe = min(o.Probe, o.Heartbeat)
	if o.Timeout < 2*o.Heartbeat {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "the replica timeout (%s) must be at least twice the heartbeat (%s): raise --replica-timeout or lower --replica-heartbeat", o.Timeout, o.Heartbeat)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	m := &Members{id: "rep_" + hex.EncodeToString(b), opts: o, st: o.Store, log: o.Logger,
		lost: make(chan struct{}), relocked: make(chan struct{}, 1),
		gone: map[string]chan struct{}{}, asked: map[string]time.Time{}, dead: map[string]bool{}, live: map[string]bool{},
		taking: map[string]bool{}}
	if l, ok := o.Store.(Locks); ok && !o.NoLock {
		m.locks = l
		m.fence, _ = o.Store.(Fencer)
	}
	return m, nil
}

var _ Liveness = (*Members)(nil)

// Self is this replica's id, the owner recorded on its work.
func (m *Members) Self() string { return m.id }

// Lost is closed when a survivor claimed this replica while it ran: its
// work has been resolved elsewhere, so it must stop.
func (m *Members) Lost() <-chan struct{} { return m.lost }

// Gone returns a channel closed once replica id is known gone: it stopped,
// was claimed, or is not registered (judged at the next round after the
// call, so a replica registered just now is not taken for gone).
func (m *Members) Gone(id string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch, ok := m.gone[id]
	if !ok {
		ch = make(chan struct{})
		m.gone[id] = ch
		if m.dead[id] {
			close(ch)
		} else {
			m.asked[id] = time.Now()
		}
	}
	return ch
}

// markGone records that id is gone and closes its Gone channel.
func (m *Members) markGone(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.live, id)
	if m.dead[id] {
		return
	}
	m.dead[id] = true
	delete(m.asked, id)
	if ch, ok := m.gone[id]; ok {
		close(ch)
	}
}

// Register records this start (after taking its presence lock, so no
// survivor ever sees it registered without the lock) and claims the
// replicas whose work it resolves at once: earlier starts of its name,
// and replicas that stopped cleanly. It returns the owners for the
// start-up sweep: those, what they had claimed and not finished, and ""
// (work recorded before replicas were, by a single daemon).
func (m *Members) Register(ctx context.Context) (map[string]bool, error) {
	if m.locks != nil {
		release, err := m.locks.HoldLock(ctx, m.id, func() {
			select { // beat at once: a survivor's claim on the old count fails
			case m.relocked <- struct{}{}:
			default:
			}
		})
		if err != nil {
			return nil, fmt.Errorf("take the replica's presence lock: %w", err)
		}
		m.release = release
	}
	host, _ := os.Hostname()
	now := time.Now()
	if err := m.st.ReplicaRegister(ctx, switchboard.Replica{ID: m.id, Name: m.opts.Name, Addr: m.opts.Addr, Host: host,
		StartedAt: now, HeartbeatAt: now, TimeoutMs: m.opts.Timeout.Milliseconds(), PresenceLock: m.release != nil}); err != nil {
		m.unlock()
		return nil, fmt.Errorf("register replica: %w", err)
	}
	if m.fence != nil {
		if err := m.fence.Fence(m.id); err != nil {
			m.unlock()
			return nil, fmt.Errorf("tie the store's sessions to the replica: %w", err)
		}
	}
	list, err := m.st.ReplicaList(ctx)
	if err != nil {
		m.unlock()
		return nil, fmt.Errorf("list replicas: %w", err)
	}
	// A namesake still holding its presence lock is alive: two replicas
	// were given one name. It is left to the failure detector; claiming
	// it would stop a live replica.
	var alive map[string]bool
	if m.locks != nil {
		var names []string
		for _, o := range list {
			if o.ID != m.id && o.ClaimedBy == "" && o.StoppedAt.IsZero() && o.Name == m.opts.Name && o.PresenceLock {
				names = append(names, o.ID)
			}
		}
		if len(names) > 0 {
			alive, _ = m.locks.LocksHeld(ctx, names) // unreadable: claimed as without locks
		}
	}
	owners := map[string]bool{"": true}
	for _, o := range list {
		switch {
		case o.ID == m.id:
		case alive[o.ID]:
			m.log.Warn("another live replica has this replica's name; give each replica its own name (--replica-name)", "name", o.Name, "replica", o.ID, "addr", o.Addr)
		case o.ClaimedBy == "" && (o.Name == m.opts.Name || !o.StoppedAt.IsZero()):
			if _, err := m.st.ReplicaClaim(ctx, o.ID, m.id, o.Beats, now); err != nil {
				if switchboard.CodeOf(err) == switchboard.CodeConflict {
					continue // it beat since (a live namesake) or a survivor took it
				}
				m.unlock()
				return nil, fmt.Errorf("claim replica %s: %w", o.ID, err)
			}
			for id := range ClaimedBy(list, o.ID) {
				m.cutOff(ctx, id) // what it claimed too: its claimer may have died before cutting it off
				owners[id] = true
				m.markGone(id)
			}
		}
	}
	return owners, nil
}

// unlock ends the presence lock, if held.
func (m *Members) unlock() {
	if m.release != nil {
		m.release()
	}
}

// ClaimedBy is id and every replica it claimed (and they claimed, ...)
// whose row is still there: claims whose sweep did not finish.
func ClaimedBy(list []switchboard.Replica, id string) map[string]bool {
	out := map[string]bool{id: true}
	for grew := true; grew; {
		grew = false
		for _, o := range list {
			if o.ClaimedBy != "" && out[o.ClaimedBy] && !out[o.ID] {
				out[o.ID], grew = true, true
			}
		}
	}
	return out
}

// Forget deletes the rows of replicas whose work is resolved.
func (m *Members) Forget(ctx context.Context, owners map[string]bool) {
	for id := range owners {
		if id == "" || id == m.id {
			continue
		}
		if err := m.st.ReplicaDelete(ctx, id); err != nil && switchboard.CodeOf(err) != switchboard.CodeNotFound {
			m.log.Warn("could not forget a resolved replica; it is resolved again later", "replica", id, "err", err)
		}
	}
}

// Start beats and watches the other replicas until Stop.
func (m *Members) Start() {
	ctx, stop := context.WithCancel(context.Background())
	m.stop = stop
	m.wg.Go(func() {
		every := m.opts.Heartbeat
		if m.locks != nil {
			every = m.opts.Probe
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		// Its lock was taken in Register, a moment ago: held at the first
		// probe makes two in a row.
		w := &watch{seen: map[string]observed{}, free: map[string]int{}, ownHeld: 1}
		for {
			beat := false
			select {
			case <-ctx.Done():
				return
			case <-m.relocked:
				beat = true
			case <-tick.C:
			}
			if !m.round(ctx, w, beat) {
				return
			}
		}
	})
}

// Stop ends the watch (the daemon's Close). The presence lock stays held
// until Release, or until the store closes: until then the replica may
// still be answering requests for the work it owns.
func (m *Members) Stop() {
	if m.stop != nil {
		m.stop()
	}
	m.wg.Wait()
}

// Release records that this replica stopped cleanly, so that survivors
// take over its remaining work at once, and ends its presence lock.
func (m *Members) Release(ctx context.Context) error {
	defer m.unlock()
	select {
	case <-m.lost:
		return nil // claimed already
	default:
	}
	return m.st.ReplicaStop(ctx, m.id, time.Now())
}

// watch is what the watch loop remembers between rounds.
type watch struct {
	lastBeat time.Time
	// seen is each replica's last beat count and when it was first seen
	// at that count.
	seen map[string]observed
	// free: at how many consecutive probes a replica's presence lock was
	// found free.
	free map[string]int
	// ownHeld: at how many consecutive probes this replica's own lock was
	// found held, and since when (zero: since before the watch began).
	ownHeld      int
	ownHeldSince time.Time
}

// lockSettle is how long this replica's own lock must have been held
// again, after it was found free, before the others are judged by theirs:
// after an outage each replica retakes its lock at its own pace (the
// Postgres store retries every 250 ms, plus a connection), and two probes
// alone are not that long when Probe is short.
const lockSettle = time.Second

// observed is the last beat count seen of a replica and when (this
// process's clock) it was first seen at that count: staleness is judged
// on one clock, so replicas' clocks need not agree.
type observed struct {
	beats int64
	since time.Time
}

// round heartbeats when due, then claims and resolves any replica found
// dead. It reports false when this replica was itself claimed.
func (m *Members) round(ctx context.Context, w *watch, beat bool) bool {
	now := time.Now()
	if beat || now.Sub(w.lastBeat) >= m.opts.Heartbeat-m.opts.Probe/2 {
		if _, err := m.st.ReplicaHeartbeat(ctx, m.id, now); err != nil {
			if ctx.Err() != nil {
				return false
			}
			c := switchboard.CodeOf(err)
			if m.fence != nil {
				if _, fenced := m.fence.FencedBy(); fenced {
					c = switchboard.CodeConflict
				}
			}
			if c == switchboard.CodeConflict || c == switchboard.CodeNotFound {
				m.log.Error("another replica found this one dead and resolved its calls; stopping", "replica", m.id, "err", err)
				m.lostOnce.Do(func() { close(m.lost) })
				m.unlock()
				return false
			}
			m.log.Warn("replica heartbeat failed", "replica", m.id, "err", err)
		} else {
			w.lastBeat = now
		}
	}
	listedAt := time.Now()
	list, err := m.st.ReplicaList(ctx)
	if err != nil {
		// The others' beats and locks are watched afresh once the store
		// answers again: an outage that stopped this read stopped their
		// beats too (they could not write them), and stillness nobody
		// could see is no sign of death. Judged across it, every outage
		// longer than the timeout would have the first replica back
		// claim the others.
		clear(w.seen)
		clear(w.free)
		if ctx.Err() == nil {
			m.log.Warn("could not list replicas", "err", err)
		}
		return true
	}
	var held map[string]bool
	if m.locks != nil {
		names := make([]string, 0, len(list)+1)
		if m.release != nil {
			names = append(names, m.id)
		}
		for _, o := range list {
			if o.ID != m.id && o.ClaimedBy == "" && o.StoppedAt.IsZero() && o.PresenceLock {
				names = append(names, o.ID)
			}
		}
		if held, err = m.locks.LocksHeld(ctx, names); err != nil {
			// Cannot tell: this round judges by beats alone, and the
			// count starts again, so that probes on either side of an
			// outage of the database (when every lock is retaken) are
			// not taken for consecutive.
			held = nil
			clear(w.free)
			if ctx.Err() == nil {
				m.log.Warn("could not read the replicas' presence locks", "err", err)
			}
		}
		// Its own lock free, or retaken only since the last probe: this
		// replica's lock connection dropped too, so the others' free locks
		// more likely tell of the same outage (a cut, a database refusing
		// connections) than of deaths; judged by locks, every replica
		// would claim every other and the whole fleet would stop. The
		// others are judged by their locks again once its own has been
		// held at two probes in a row, which gives theirs time to be
		// retaken too; meanwhile beats still find the dead.
		if held != nil && m.release != nil {
			if held[m.id] {
				if w.ownHeld == 0 {
					w.ownHeldSince = now
				}
				w.ownHeld++
			} else {
				w.ownHeld = 0
			}
			if w.ownHeld < 2 || now.Sub(w.ownHeldSince) < lockSettle {
				held = nil
				clear(w.free)
			}
		}
	}
	listed := map[string]bool{}
	for _, o := range list {
		listed[o.ID] = true
		if o.ID == m.id {
			continue
		}
		switch {
		case o.ClaimedBy == m.id: // claimed earlier; its takeover did not finish
			m.markGone(o.ID)
			m.takeOver(ctx, list, o.ID)
		case o.ClaimedBy != "":
			m.markGone(o.ID)
		case !o.StoppedAt.IsZero():
			m.markGone(o.ID)
			m.claim(ctx, list, o, now, "it stopped")
		default:
			m.mu.Lock()
			m.live[o.ID] = true
			m.mu.Unlock()
			if held != nil && o.PresenceLock {
				if held[o.ID] {
					w.free[o.ID] = 0
				} else {
					w.free[o.ID]++
				}
				if w.free[o.ID] >= 2 {
					m.claim(ctx, list, o, now, "its presence lock was released: its connection to the database closed")
					continue
				}
			}
			ob, ok := w.seen[o.ID]
			if !ok || ob.beats != o.Beats {
				w.seen[o.ID] = observed{o.Beats, now}
				continue
			}
			// The longer of the two timeouts: a replica configured to
			// beat less often than this one is not taken for dead.
			if now.Sub(ob.since) >= max(m.opts.Timeout, time.Duration(o.TimeoutMs)*time.Millisecond) {
				m.claim(ctx, list, o, now, "its heartbeat stopped")
			}
		}
	}
	for id := range w.seen {
		if !listed[id] {
			delete(w.seen, id)
		}
	}
	for id := range w.free {
		if !listed[id] {
			delete(w.free, id)
		}
	}
	// Whoever was asked about before this round listed the replicas and
	// is not registered is gone: a replica registers before it owns
	// anything, so one that others know of was listed.
	m.mu.Lock()
	var unknown []string
	for id, at := range m.asked {
		if !listed[id] && id != m.id && at.Before(listedAt) {
			unknown = append(unknown, id)
		}
	}
	for id := range m.live {
		if !listed[id] {
			unknown = append(unknown, id)
		}
	}
	m.mu.Unlock()
	for _, id := range unknown {
		m.markGone(id)
	}
	return true
}

// claim takes over replica o if no other survivor (and no late beat of
// its own) got there first.
func (m *Members) claim(ctx context.Context, list []switchboard.Replica, o switchboard.Replica, now time.Time, reason string) {
	if _, err := m.st.ReplicaClaim(ctx, o.ID, m.id, o.Beats, now); err != nil {
		if switchboard.CodeOf(err) != switchboard.CodeConflict && ctx.Err() == nil {
			m.log.Warn("could not claim a dead replica", "replica", o.ID, "err", err)
		}
		return
	}
	m.markGone(o.ID)
	m.log.Warn("taking over the calls of another replica: "+reason, "replica", o.ID, "name", o.Name, "lastHeartbeat", o.HeartbeatAt)
	m.takeOver(ctx, list, o.ID)
}

// cutOff ends the sessions of replica id, which this one claimed, before
// its work is resolved: a paused replica's open transactions would hold
// the sweep up, and once it resumes it must write nothing. A failure (a
// role not allowed to end others' sessions) is logged: the sweep still
// runs, waiting out what the paused replica holds.
func (m *Members) cutOff(ctx context.Context, id string) {
	if m.fence == nil {
		return
	}
	if _, err := m.fence.CutOff(ctx, id); err != nil && ctx.Err() == nil {
		m.log.Warn("could not end a claimed replica's database sessions; if it was only paused, what it holds open delays the takeover", "replica", id, "err", err)
	}
}

// takeOver resolves the work of replica id (claimed by this one) and of
// what it had claimed, then forgets them: on a goroutine of its own, one
// takeover at a time, while the watch goes on beating.
func (m *Members) takeOver(ctx context.Context, list []switchboard.Replica, id string) {
	m.mu.Lock()
	if m.taking[id] {
		m.mu.Unlock()
		return
	}
	m.taking[id] = true
	m.mu.Unlock()
	owners := ClaimedBy(list, id)
	for o := range owners {
		m.markGone(o)
	}
	m.wg.Go(func() {
		defer func() {
			m.mu.Lock()
			delete(m.taking, id)
			m.mu.Unlock()
		}()
		m.takeMu.Lock()
		defer m.takeMu.Unlock()
		if ctx.Err() != nil {
			return
		}
		// Every owner, not just id: a replica id claimed may not have
		// been cut off yet (id died between its claim and its cut-off).
		for o := range owners {
			m.cutOff(ctx, o)
		}
		if m.opts.TakeOver != nil {
			if err := m.opts.TakeOver(ctx, id, owners); err != nil {
				if ctx.Err() == nil {
					m.log.Warn("resolving another replica's work failed; retrying at the next round", "replica", id, "err", err)
				}
				return
			}
		}
		m.Forget(ctx, owners)
	})
}
