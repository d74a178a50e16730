package panel

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// Instances in the store (issue 16). With Options.Store every instance is
// written to the store on each change, as a compare-and-swap on its stored
// version (switchboard.Store.PanelInstancePut), so that:
//
//   - any replica answers reads (panel.list of a named tab, panel.read_state,
//     the tab's GET of one instance) from the store;
//   - the replica a tab's stream (re)attaches to rebuilds the tab's
//     instances from the store (ensureTab) and serves them from memory;
//   - a replica whose copy is stale (the tab moved away and came back, or a
//     replica that was declared dead wrote late) cannot overwrite a newer
//     change: its write is refused, it drops its copy, and the operation is
//     answered CONFLICT or retried on the stored state.
//
// Changes themselves are made by the replica that holds the tab's stream:
// the others send them there over the bus (remote.go). The in-memory
// instance stays the working copy, so one replica does exactly what it did
// before plus one small write per change.

// PanelStore is what the service keeps in the store; switchboard.Store is
// the implementation.
type PanelStore interface {
	PanelInstancePut(ctx context.Context, p switchboard.PanelInstance, prev int64) (switchboard.PanelInstance, error)
	PanelInstanceGet(ctx context.Context, id string) (switchboard.PanelInstance, error)
	PanelInstanceList(ctx context.Context, sessionID string) ([]switchboard.PanelInstance, error)
	PanelInstanceDelete(ctx context.Context, id string) error
	PanelInstanceDeleteSession(ctx context.Context, sessionID string) (int, error)
}

// storeTimeout bounds one store operation of the panel service.
const storeTimeout = 10 * time.Second

// instanceDoc is an instance as the store keeps it (PanelInstance.Doc).
type instanceDoc struct {
	Panel       string                        `json:"panel,omitempty"`
	Title       string                        `json:"title,omitempty"`
	Slot        string                        `json:"slot"`
	Spec        *panelspec.Spec               `json:"spec"`
	SpecVersion int                           `json:"specVersion"`
	Version     int                           `json:"version"`
	Params      map[string]any                `json:"params,omitempty"`
	Owner       switchboard.Principal         `json:"owner"`
	Pinned      bool                          `json:"pinned,omitempty"`
	Previews    map[string]string             `json:"previews,omitempty"`
	Data        map[string]json.RawMessage    `json:"data,omitempty"`
	Errors      map[string]*switchboard.Error `json:"errors,omitempty"`
	Values      map[string]map[string]any     `json:"values,omitempty"`
	Dirty       map[string]map[string]bool    `json:"dirty,omitempty"`
	Filled      map[string]map[string]bool    `json:"filled,omitempty"`
	Actions     map[string]ActionState        `json:"actions,omitempty"`
	Lease       *Lease                        `json:"lease,omitempty"`
	LeaseHolder string                        `json:"leaseHolder,omitempty"`
}

// docLocked encodes in with lease l. Caller holds s.mu.
func (in *instance) docLocked(l *Lease) ([]byte, error) {
	d := instanceDoc{Panel: in.panelID, Title: in.title, Slot: in.slot, Spec: in.spec, SpecVersion: in.specVersion,
		Version: in.version, Params: in.params, Owner: in.owner, Pinned: in.pinned, Previews: in.previews,
		Data: in.data, Errors: in.errs, Values: in.values, Dirty: in.dirty, Filled: in.filled, Actions: in.actions}
	if l != nil {
		d.Lease, d.LeaseHolder = l, l.holder
	}
	return json.Marshal(d)
}

// fromStored rebuilds an instance from its stored form (no subscriptions:
// the caller starts them when it serves the instance).
func fromStored(p switchboard.PanelInstance) (*instance, error) {
	var d instanceDoc
	if err := json.Unmarshal(p.Doc, &d); err != nil || d.Spec == nil {
		return nil, switchboard.Errorf(switchboard.CodeInternal, "stored panel instance %s does not decode: %v", p.ID, err)
	}
	in := &instance{id: p.ID, session: p.SessionID, panelID: d.Panel, title: d.Title, slot: d.Slot, spec: d.Spec,
		specVersion: d.SpecVersion, version: d.Version, params: d.Params, owner: d.Owner, pinned: d.Pinned,
		previews: d.Previews, forms: formsOf(d.Spec), data: d.Data, errs: d.Errors, values: d.Values,
		dirty: d.Dirty, filled: d.Filled, actions: d.Actions, seq: p.Seq, stored: p.Version}
	if in.data == nil {
		in.data = map[string]json.RawMessage{}
	}
	if in.errs == nil {
		in.errs = map[string]*switchboard.Error{}
	}
	if in.values == nil {
		in.values = map[string]map[string]any{}
	}
	if in.dirty == nil {
		in.dirty = map[string]map[string]bool{}
	}
	if in.filled == nil {
		in.filled = map[string]map[string]bool{}
	}
	if in.actions == nil {
		in.actions = map[string]ActionState{}
	}
	if d.Lease != nil {
		l := *d.Lease
		l.holder = d.LeaseHolder
		in.storedLease = &l
	}
	return in, nil
}

// errStale is a write refused because another replica changed the
// instance since this replica read it.
func errStale(id string) error {
	return switchboard.Errorf(switchboard.CodeConflict,
		"panel instance %s was changed through another replica meanwhile; nothing was applied here; read it again (panel.read_state) and retry", id).
		WithDetails(map[string]any{"instanceId": id, "changedElsewhere": true})
}

// isStale reports whether err is errStale: the operation may run once
// more, on the stored state.
func isStale(err error) bool {
	e := switchboard.AsError(err)
	if e == nil || e.Code != switchboard.CodeConflict {
		return false
	}
	d, _ := e.Details.(map[string]any)
	return d["changedElsewhere"] == true
}

// persist writes in's current state to the store, if there is one. Writes
// of one instance are serialized (in.wmu) and each writes the newest
// state, so they never go out of order. A write refused by the
// compare-and-swap means this copy is stale: the tab's copies here are
// dropped (the next use rebuilds them from the store) and persist returns
// CONFLICT.
func (s *Service) persist(in *instance) error {
	if s.store == nil {
		return nil
	}
	in.wmu.Lock()
	defer in.wmu.Unlock()
	s.mu.Lock()
	if in.closed {
		s.mu.Unlock()
		return nil
	}
	doc, err := in.docLocked(s.leases.get(in.id))
	prev := in.stored
	rec := switchboard.PanelInstance{ID: in.id, SessionID: in.session, Seq: in.seq, Version: prev + 1, Doc: doc}
	s.mu.Unlock()
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "encode panel instance %s: %v", in.id, err)
	}
	ctx, cancel := context.WithTimeout(s.base, storeTimeout)
	defer cancel()
	_, err = s.store.PanelInstancePut(ctx, rec, prev)
	switch switchboard.CodeOf(err) {
	case "":
		s.mu.Lock()
		in.stored = rec.Version
		s.mu.Unlock()
		return nil
	case switchboard.CodeConflict, switchboard.CodeNotFound:
		if switchboard.CodeOf(err) == switchboard.CodeNotFound && in.isClosed(s) {
			return nil // closed meanwhile
		}
		s.log.Warn("panel instance changed elsewhere; dropping this replica's copy", "instance", in.id, "session", in.session, "err", err)
		s.evict(in.session)
		return errStale(in.id)
	}
	s.log.Warn("panel instance not stored", "instance", in.id, "err", err)
	return err
}

func (in *instance) isClosed(s *Service) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return in.closed
}

// changed stores in and, when kind is set, pushes sn to its tab. The push
// happens even when the store refused the write (the tab shows what this
// replica did; a stale copy is dropped and the tab's next attach shows
// the stored state).
func (s *Service) changed(in *instance, kind string, sn Snapshot) error {
	err := s.persist(in)
	if kind != "" && err == nil {
		s.push(kind, sn)
	}
	return err
}

// unstore deletes a closed instance from the store.
func (s *Service) unstore(in *instance) {
	if s.store == nil {
		return
	}
	in.wmu.Lock()
	defer in.wmu.Unlock()
	ctx, cancel := context.WithTimeout(s.base, storeTimeout)
	defer cancel()
	if err := s.store.PanelInstanceDelete(ctx, in.id); err != nil {
		s.log.Warn("closed panel instance not deleted from the store", "instance", in.id, "err", err)
	}
}

// evict drops this replica's copies of a tab's instances without touching
// the store: the tab is served elsewhere, or the copies are stale.
func (s *Service) evict(session string) {
	s.mu.Lock()
	t := s.sessions[session]
	if t == nil {
		s.mu.Unlock()
		return
	}
	delete(s.sessions, session)
	for iid := range t.instances {
		delete(s.byID, iid)
		s.leases.drop(iid)
	}
	done := t.closeLocked()
	s.mu.Unlock()
	done()
}

// ensureTab loads a tab's stored instances into memory when this replica
// holds its stream and has none of them yet: the tab (re)attached here
// after its replica died or it moved. Their sources are not reloaded (the
// stored data is shown; a change refreshes it as usual).
func (s *Service) ensureTab(ctx context.Context, session string) {
	if s.store == nil {
		return
	}
	s.mu.Lock()
	_, have := s.sessions[session]
	s.mu.Unlock()
	if have || !s.tabs.Connected(session) || s.isGone(session) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	recs, err := s.store.PanelInstanceList(ctx, session)
	if err != nil {
		s.log.Warn("stored panel instances not loaded", "session", session, "err", err)
		return
	}
	if len(recs) == 0 {
		return
	}
	ins := make([]*instance, 0, len(recs))
	for _, r := range recs {
		in, err := fromStored(r)
		if err != nil {
			s.log.Warn("stored panel instance skipped", "instance", r.ID, "err", err)
			continue
		}
		in.cancelSubs = s.subscribe(in, in.spec, in.params, in.owner)
		ins = append(ins, in)
	}
	s.mu.Lock()
	if s.sessions[session] != nil { // loaded (or opened) meanwhile
		s.mu.Unlock()
		for _, in := range ins {
			in.release()
		}
		return
	}
	t := s.tabLocked(session)
	t.host = true // it showed panels where it was before
	for _, in := range ins {
		t.instances[in.id] = in
		t.order = append(t.order, in.id)
		s.byID[in.id] = in
		if l := in.storedLease; l != nil {
			s.leases.restore(in.id, *l)
		}
		in.storedLease = nil
	}
	s.mu.Unlock()
}

// stored returns instance id from the store, as a detached copy: for
// reads, and to learn which tab it belongs to. NOT_FOUND when it is not
// there (or there is no store), or its tab is gone.
//
// The tab is known only once the record is read, so a deletion of a gone
// tab's instances (dropTab) can finish, and the tab stop reading as gone,
// between the read and the check: a record read while goneDone moved is
// read again.
func (s *Service) stored(ctx context.Context, id string) (*instance, error) {
	if s.store == nil {
		return nil, errNoInstance(id)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	for {
		s.mu.Lock()
		gen := s.goneDone
		s.mu.Unlock()
		r, err := s.store.PanelInstanceGet(ctx, id)
		if switchboard.CodeOf(err) == switchboard.CodeNotFound {
			return nil, errNoInstance(id)
		}
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		_, gone := s.goneTabs[r.SessionID]
		raced := s.goneDone != gen
		s.mu.Unlock()
		if gone {
			return nil, errNoInstance(id)
		}
		if raced {
			continue // ends: each round needs another deletion to finish meanwhile, and ctx bounds them
		}
		in, err := fromStored(r)
		if err != nil {
			return nil, err
		}
		in.detached = true
		return in, nil
	}
}

// storedTab returns a tab's stored instances as detached copies.
func (s *Service) storedTab(ctx context.Context, session string) []*instance {
	if s.store == nil || s.isGone(session) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	recs, err := s.store.PanelInstanceList(ctx, session)
	if err != nil {
		s.log.Warn("stored panel instances not read", "session", session, "err", err)
		return nil
	}
	out := make([]*instance, 0, len(recs))
	for _, r := range recs {
		if in, err := fromStored(r); err == nil {
			in.detached = true
			out = append(out, in)
		}
	}
	return out
}

// isGone reports whether session's tab is gone and its stored instances
// are being deleted.
func (s *Service) isGone(session string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, gone := s.goneTabs[session]
	return gone
}

func errNoInstance(id string) error {
	return switchboard.Errorf(switchboard.CodeNotFound, "no open panel instance %q (panel.list shows the open ones)", id)
}

// liveLease is a detached instance's stored lease, if still in force.
func (in *instance) liveLease(now time.Time) *Lease {
	if in.storedLease == nil || !now.Before(in.storedLease.ExpiresAt) {
		return nil
	}
	l := *in.storedLease
	return &l
}
