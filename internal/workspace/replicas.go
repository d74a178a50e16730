package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Several replicas (issue 16). A tab's context report may reach any
// replica, and any replica compiles digests, so a report is stored with
// its session (Options.Tabs) and its session id announced on the bus;
// every other replica reads the stored report and keeps it as if it had
// been made there (the newest report wins, by its time). A tab's contexts
// are dropped on every replica when it is gone: the gone notice travels
// on the bus too (Options.Sessions). Load, at start, reads the reports of
// the tabs whose stream is attached somewhere.

// topicReport carries "<workspace id> <session id>" for each report.
const topicReport = "workspace.report"

// relayTimeout bounds reading one relayed report.
const relayTimeout = 5 * time.Second

// startRelay listens for the other replicas' reports.
func (w *Workspace) startRelay() error {
	if w.opts.Bus == nil || w.opts.Tabs == nil {
		return nil
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	w.id = hex.EncodeToString(b)
	w.inbox = make(chan string, 256)
	w.relayed = make(chan struct{})
	unsub, err := w.opts.Bus.Subscribe(topicReport, func(p []byte) {
		from, id, ok := bytes.Cut(p, []byte(" "))
		if !ok || string(from) == w.id {
			return
		}
		select { // handlers must not block; a lost relay waits for the tab's next report
		case w.inbox <- string(id):
		default:
			w.log.Warn("a tab's report from another replica was not relayed: too many at once", "session", string(id))
		}
	})
	if err != nil {
		return err
	}
	w.unsub = unsub
	go func() {
		defer close(w.relayed)
		for {
			select {
			case <-w.stop:
				return
			case id := <-w.inbox:
				w.fetch(id)
			}
		}
	}()
	return nil
}

func (w *Workspace) stopRelay() {
	if w.unsub != nil {
		w.unsub()
		<-w.relayed
		w.unsub = nil
	}
}

// announce tells the other replicas that sessionID reported.
func (w *Workspace) announce(sessionID string) {
	if w.id == "" {
		return
	}
	if err := w.opts.Bus.Publish(context.Background(), topicReport, []byte(w.id+" "+sessionID)); err != nil {
		w.log.Warn("other replicas do not see this tab's report", "session", sessionID, "err", err)
	}
}

// fetch keeps the stored report of sessionID, or drops the tab's contexts
// when its session is closed.
func (w *Workspace) fetch(sessionID string) {
	ctx, cancel := context.WithTimeout(context.Background(), relayTimeout)
	defer cancel()
	s, err := w.opts.Tabs.SessionGet(ctx, sessionID)
	if err != nil {
		w.log.Warn("read a tab's report from the store", "session", sessionID, "err", err)
		return
	}
	w.keep(s)
}

// keep takes a stored session's report as the tab's latest.
func (w *Workspace) keep(s switchboard.Session) {
	if !s.ClosedAt.IsZero() {
		w.DropSession(s.ID)
		return
	}
	r := s.Report
	if r.At.IsZero() {
		return
	}
	kept := r.Contexts
	if kept == nil {
		kept = []switchboard.WorkspaceContext{}
	}
	w.put(s.ID, normalUser(s.Principal), kept, ReportDropped{Contexts: r.DroppedContexts, Panels: r.DroppedPanels}, r.At)
}

// Load reads the reports of the tabs whose stream is attached to a live
// replica (a replica starting beside running ones); a stream recorded on
// a replica that stopped, died or was taken over is not a tab anyone
// holds (a restart does not bring back the contexts of tabs that never
// reconnect). Without Options.Tabs it does nothing.
func (w *Workspace) Load(ctx context.Context) error {
	if w.opts.Tabs == nil {
		return nil
	}
	reps, err := w.opts.Tabs.ReplicaList(ctx)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, r := range reps {
		if r.StoppedAt.IsZero() && r.ClaimedBy == "" {
			live[r.ID] = true
		}
	}
	// SeenSince now: only the sessions with a stream attached.
	open, err := w.opts.Tabs.SessionList(ctx, switchboard.SessionFilter{SeenSince: w.now()})
	if err != nil {
		return err
	}
	for _, s := range open {
		if live[s.Stream] {
			w.keep(s)
		}
	}
	return nil
}
