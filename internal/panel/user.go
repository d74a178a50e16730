package panel

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/panelspec"
)

// The tab's side. A renderer in the tab attaches (and gets every open
// instance), reports the user's edits and runs the actions the user
// clicks, all with its session token; internal/httpapi/panels.go serves these.

// Attach marks session as a tab that shows panels (calls that name no
// session may then pick it) and returns the snapshots of its open
// instances, oldest first, so a renderer that (re)mounts shows them all.
//
// A tab that attaches here after its replica died, or after it moved, gets
// the instances stored for it (with a store).
func (s *Service) Attach(ctx context.Context, session string) []Snapshot {
	s.ensureTab(ctx, session)
	s.tabs.MarkPanels(session)
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tabLocked(session)
	t.host = true
	out := make([]Snapshot, 0, len(t.order))
	for _, id := range t.order {
		out = append(out, t.instances[id].snapshot())
	}
	for i := range out {
		out[i] = s.withLease(out[i])
	}
	return out
}

// Snapshot returns one open instance as the caller may see it.
func (s *Service) Snapshot(ctx context.Context, id string) (Snapshot, error) {
	in, err := s.instance(ctx, id)
	if err != nil {
		return Snapshot{}, err
	}
	if in.detached { // read from the store: the tab is on another replica
		sn := in.snapshot()
		sn.Lease = in.liveLease(s.opts.Now())
		return sn, nil
	}
	s.mu.Lock()
	sn := in.snapshot()
	s.mu.Unlock()
	return s.withLease(sn), nil
}

// EditRequest carries the user's edits of form fields: path → value.
type EditRequest struct {
	Form   string                     `json:"form,omitempty"`
	Values map[string]json.RawMessage `json:"values"`
}

// EditResult says which edits were kept.
type EditResult struct {
	Version int          `json:"version"`
	Applied []string     `json:"applied"`
	Errors  []FieldError `json:"errors"`
}

// Edit records the user's edits: the values are kept and the fields marked
// dirty, so panel.fill leaves them alone until the form is saved. A value
// may be incomplete (an empty required field); a value of the wrong type
// for its field, a read-only field or an undeclared path is refused. The
// user always wins: an edit that keeps a value ends any agent's lease on
// the instance, and the tab is told.
func (s *Service) Edit(ctx context.Context, id string, req EditRequest) (EditResult, error) {
	res, err := s.edit(ctx, id, req)
	if isStale(err) { // a stale copy, dropped: once more on the stored state
		res, err = s.edit(ctx, id, req)
	}
	return res, err
}

func (s *Service) edit(ctx context.Context, id string, req EditRequest) (EditResult, error) {
	in, err := s.instance(ctx, id)
	if err != nil {
		return EditResult{}, err
	}
	if in.detached {
		var res EditResult
		return res, s.away(ctx, in, opEdit, editBody{ID: id, Req: req}, &res)
	}
	paths := make([]string, 0, len(req.Values))
	for p := range req.Values {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	res := EditResult{Applied: []string{}, Errors: []FieldError{}}
	s.mu.Lock()
	for _, p := range paths {
		ref, fe := in.field(p, req.Form)
		if fe != nil {
			res.Errors = append(res.Errors, *fe)
			continue
		}
		var v any
		if err := json.Unmarshal(req.Values[p], &v); err != nil {
			res.Errors = append(res.Errors, FieldError{Path: p, Code: switchboard.CodeInvalidInput, Message: "value is not JSON"})
			continue
		}
		if ref.field.ReadOnly {
			res.Errors = append(res.Errors, FieldError{Path: p, Code: switchboard.CodeForbidden, Message: "the field is read-only"})
			continue
		}
		if fe := checkValue(ref.field, v, true); fe != nil {
			res.Errors = append(res.Errors, *fe)
			continue
		}
		if in.values[ref.form.bind] == nil {
			in.values[ref.form.bind] = map[string]any{}
		}
		in.values[ref.form.bind][p] = v
		mark(in.dirty, ref.form.bind, p)
		res.Applied = append(res.Applied, p)
	}
	ended := false
	if len(res.Applied) > 0 {
		ended = s.leases.drop(in.id)
		in.version++
	}
	res.Version = in.version
	sn := in.snapshot()
	s.mu.Unlock()
	kind := ""
	if ended { // the lease badge goes away at once
		kind = EventUpdate
	}
	if len(res.Applied) > 0 {
		if err := s.changed(in, kind, sn); err != nil {
			return EditResult{}, err
		}
	}
	return res, nil
}

// UserAction runs an action the user started in the tab (ctx carries the
// tab's session principal). Who it runs as follows who wrote the action:
// the actions of a host panel run as the user the session was opened for,
// because the host declared them and the user chose to run one; those of
// an agent-composed panel run as the agent that composed it, so the agent
// cannot turn a click into a call the policy would not let it make itself,
// and approvals apply exactly as to its own calls.
func (s *Service) UserAction(ctx context.Context, id, action string) (ActionResult, error) {
	in, err := s.instance(ctx, id)
	if err != nil {
		return ActionResult{}, err
	}
	if in.detached {
		var res ActionResult
		return res, s.away(ctx, in, opUserAction, idBody{ID: id, Action: action}, &res)
	}
	s.mu.Lock()
	origin, owner := in.spec.Origin, in.owner
	s.mu.Unlock()
	as := owner
	if origin != panelspec.OriginAgent {
		user, err := s.tabs.User(ctx, in.session)
		if err != nil {
			return ActionResult{}, err
		}
		as = userPrincipal(user, in.session)
	}
	// The user's click wins over any agent's lease and ends it, whoever the
	// call then runs as.
	return s.runAction(switchboard.WithPrincipal(ctx, as), in, ActionRequest{InstanceID: id, Action: action}, actor{user: true})
}

// userPrincipal is the user a session was opened for ("user:42" or "42"),
// or the session itself when the app named nobody.
func userPrincipal(user, session string) switchboard.Principal {
	p, ok := switchboard.UserPrincipal(user)
	if !ok {
		p.ID = "session:" + session
	}
	return p
}
