package panel

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/cluster"
)

// Panels across replicas (issue 16). A tab's instances are changed by the
// replica that holds its stream: it has the working copy, the adapter
// subscriptions and the stream to push panel.open, panel.update and
// panel.close on. A change asked of another replica (an agent's call
// landed there) is asked of that replica (cluster.Asker, kind askOp), with
// the caller's principal and agent session; the holder runs it exactly as
// a local call and stores the result (shared.go). Reads are answered from
// the store wherever they land.
//
// An ask ends in TIMEOUT at the call's own deadline when a request or
// answer is lost, and in UNAVAILABLE at once when the holder is known gone
// or the tab moved meanwhile; either way the change may have been made
// (panel.read_state tells).
//
// Adapter invalidations go to every replica: a data tool's mutation made
// on one replica refreshes the panels showing that adapter on all of them
// (each replica's adapter only notifies its own process).

const (
	topicAdapters = "panel.adapters"
	// topicCanvas tells every replica the host canvas layer changed.
	topicCanvas = "panel.canvas"
	// askOp is the kind of request that asks the holder for a change.
	askOp = "panel.op"
	// forwardWait bounds a forwarded change whose ctx has no deadline.
	forwardWait = 30 * time.Second
)

// Forwarded operations.
const (
	opOpen       = "open"
	opCompose    = "compose"
	opFill       = "fill"
	opPatch      = "patch"
	opAction     = "action"
	opClose      = "close"
	opEdit       = "edit"
	opUserAction = "user_action"
	opPin        = "pin"
)

// opMsg asks the replica holding a tab to make a change.
type opMsg struct {
	Session   string                 `json:"session"`
	Op        string                 `json:"op"`
	Principal *switchboard.Principal `json:"principal,omitempty"`
	Agent     string                 `json:"agent,omitempty"`
	Body      json.RawMessage        `json:"body"`
}

// canvasMsg says the host canvas layer changed (the layer is in the store).
type canvasMsg struct {
	From string `json:"from"`
}

type adapterMsg struct {
	From    string `json:"from"`
	Adapter string `json:"adapter"`
}

// remote is the service's side of the cluster.
type remote struct {
	s       *Service
	b       bus.Bus
	ask     *cluster.Asker
	replica string
	unsubs  []func()
}

func startRemote(s *Service, b bus.Bus, ask *cluster.Asker) (*remote, error) {
	r := &remote{s: s, b: b, ask: ask, replica: ask.Self()}
	for topic, h := range map[string]bus.Handler{
		topicAdapters: r.onAdapter,
		topicCanvas:   r.onCanvas,
	} {
		cancel, err := b.Subscribe(topic, h)
		if err != nil {
			r.close()
			return nil, err
		}
		r.unsubs = append(r.unsubs, cancel)
	}
	r.unsubs = append(r.unsubs, ask.Handle(askOp, r.serve))
	return r, nil
}

func (r *remote) close() {
	for _, u := range r.unsubs {
		u()
	}
}

// forward asks replica to run op for session with body, as the caller in
// ctx, and decodes its answer into out.
func (r *remote) forward(ctx context.Context, replica, session, op string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "encode panel %s: %v", op, err)
	}
	msg := opMsg{Session: session, Op: op, Body: b}
	if p, ok := switchboard.PrincipalFrom(ctx); ok {
		msg.Principal = &p
	}
	msg.Agent, _ = switchboard.AgentSessionFrom(ctx)
	if _, has := ctx.Deadline(); !has {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, forwardWait)
		defer cancel()
	}
	req, err := json.Marshal(msg)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInternal, "encode panel %s: %v", op, err)
	}
	// A tab that moves while the change is on its way (its replica died
	// and it reattached elsewhere) will not be answered for by the old
	// holder: say so as soon as this replica learns where the tab went,
	// rather than at the deadline, so the caller can look and retry.
	actx, moved := context.WithCancelCause(ctx)
	defer moved(nil)
	go func() {
		t := time.NewTicker(holderCheck)
		defer t.Stop()
		for {
			select {
			case <-actx.Done():
				return
			case <-t.C:
				if r.s.holder(session) != replica {
					moved(switchboard.Errorf(switchboard.CodeUnavailable,
						"session %s's tab left the replica it was on before that replica answered panel %s; the change may have been made: read it with panel.read_state, then retry", session, op))
					return
				}
			}
		}
	}()
	res, err := r.ask.Ask(actx, replica, askOp, req)
	switch {
	case cluster.NoAnswer(err) && switchboard.CodeOf(err) == switchboard.CodeTimeout:
		return switchboard.Errorf(switchboard.CodeTimeout,
			"the replica holding session %s's tab did not answer panel %s in time; the change may have been made (read it with panel.read_state)", session, op)
	case err != nil:
		return err
	}
	if out != nil && len(res) > 0 {
		if err := json.Unmarshal(res, out); err != nil {
			return switchboard.Errorf(switchboard.CodeInternal, "decode panel %s answer: %v", op, err)
		}
	}
	return nil
}

// holderCheck is how often a forwarded change looks whether its tab moved.
const holderCheck = 250 * time.Millisecond

// serve runs a forwarded change here, where the tab is (askOp's handler).
func (r *remote) serve(ctx context.Context, req []byte) ([]byte, error) {
	s := r.s
	var msg opMsg
	if err := json.Unmarshal(req, &msg); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "decode a forwarded panel change: %v", err)
	}
	// ctx carries the caller's deadline; the service's end ends it too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.base, cancel)()
	if msg.Principal != nil {
		ctx = switchboard.WithPrincipal(ctx, *msg.Principal)
	}
	if msg.Agent != "" {
		ctx = switchboard.WithAgentSession(ctx, msg.Agent)
	}
	if !s.tabs.Connected(msg.Session) {
		return nil, switchboard.Errorf(switchboard.CodeSessionGone, "the tab of session %s left this replica; try again", msg.Session)
	}
	res, err := s.runOp(ctx, msg.Op, msg.Body)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInternal, "encode panel %s answer: %v", msg.Op, err)
	}
	if len(b) > cluster.MaxBody {
		// A snapshot with large data: the caller gets it without spec and
		// data (the tab has them on its stream; panel.read_state reads them).
		b = slim(res)
	}
	return b, nil
}

// slim drops the bulky parts of a snapshot answer.
func slim(res any) json.RawMessage {
	var b []byte
	switch v := res.(type) {
	case Snapshot:
		v.Spec, v.Data = nil, nil
		b, _ = json.Marshal(v)
	case ComposeResult:
		v.Spec, v.Data = nil, nil
		b, _ = json.Marshal(v)
	default:
		b, _ = json.Marshal(res)
	}
	return b
}

// Bodies of the forwarded operations that take more than a request.
type idBody struct {
	ID     string `json:"id"`
	Action string `json:"action,omitempty"`
}
type editBody struct {
	ID  string      `json:"id"`
	Req EditRequest `json:"req"`
}

// runOp runs a forwarded operation on this replica.
func (s *Service) runOp(ctx context.Context, op string, body json.RawMessage) (any, error) {
	dec := func(v any) error {
		if err := json.Unmarshal(body, v); err != nil {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "decode panel %s: %v", op, err)
		}
		return nil
	}
	switch op {
	case opOpen:
		var req OpenRequest
		if err := dec(&req); err != nil {
			return nil, err
		}
		return s.Open(ctx, req)
	case opCompose:
		var req ComposeRequest
		if err := dec(&req); err != nil {
			return nil, err
		}
		return s.Compose(ctx, req)
	case opFill:
		var req FillRequest
		if err := dec(&req); err != nil {
			return nil, err
		}
		return s.Fill(ctx, req)
	case opPatch:
		var req PatchRequest
		if err := dec(&req); err != nil {
			return nil, err
		}
		return s.Patch(ctx, req)
	case opAction:
		var req ActionRequest
		if err := dec(&req); err != nil {
			return nil, err
		}
		return s.RunAction(ctx, req)
	case opClose:
		var b idBody
		if err := dec(&b); err != nil {
			return nil, err
		}
		return struct{}{}, s.CloseInstance(ctx, b.ID)
	case opEdit:
		var b editBody
		if err := dec(&b); err != nil {
			return nil, err
		}
		return s.Edit(ctx, b.ID, b.Req)
	case opUserAction:
		var b idBody
		if err := dec(&b); err != nil {
			return nil, err
		}
		return s.UserAction(ctx, b.ID, b.Action)
	case opPin:
		var b idBody
		if err := dec(&b); err != nil {
			return nil, err
		}
		return s.Pin(ctx, b.ID)
	}
	return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "unknown panel operation %q", op)
}

// holder names the replica to send a change for session to: another
// replica that holds its tab. "" means here (or nowhere).
func (s *Service) holder(session string) string {
	if s.remote == nil || s.tabs.Connected(session) {
		return ""
	}
	return s.tabs.Elsewhere(session)
}

// elsewhere forwards op for the tab of session to the replica holding it
// when that is another one; done reports whether it did.
func (s *Service) elsewhere(ctx context.Context, session, op string, body, out any) (done bool, err error) {
	rep := s.holder(session)
	if rep == "" {
		return false, nil
	}
	return true, s.remote.forward(ctx, rep, session, op, body, out)
}

// adapterChanged tells every other replica that adapter name's data
// changed, so their panels showing it refresh.
func (s *Service) adapterChanged(name string) {
	if s.remote == nil {
		return
	}
	b, _ := json.Marshal(adapterMsg{From: s.remote.replica, Adapter: name})
	if err := s.remote.b.Publish(s.base, topicAdapters, b); err != nil {
		s.log.Debug("adapter change not announced", "adapter", name, "err", err)
	}
}

// canvasChanged tells every other replica that the host canvas layer
// changed, so they tell the tabs they hold (each reads the layer from the
// store, which is where it is decided; the message carries no policy).
func (s *Service) canvasChanged() {
	if s.remote == nil {
		return
	}
	b, _ := json.Marshal(canvasMsg{From: s.remote.replica})
	if err := s.remote.b.Publish(s.base, topicCanvas, b); err != nil {
		s.log.Warn("host canvas change not announced; tabs on other replicas learn of it on their next change", "err", err)
	}
}

// onCanvas sends this replica's tabs their policy after another replica
// changed the host layer.
func (r *remote) onCanvas(p []byte) {
	var msg canvasMsg
	if json.Unmarshal(p, &msg) != nil || msg.From == r.replica {
		return
	}
	go r.s.tellCanvas() // reads the store: not on the bus's delivery goroutine
}

// onAdapter refreshes this replica's instances that show another
// replica's changed adapter (its own adapter told them already).
func (r *remote) onAdapter(p []byte) {
	var msg adapterMsg
	if json.Unmarshal(p, &msg) != nil || msg.From == r.replica {
		return
	}
	r.s.refreshAdapter(msg.Adapter)
}

// away sends op on instance in (a detached copy: its tab is not here) to
// the replica holding its tab, or answers SESSION_GONE when none does.
func (s *Service) away(ctx context.Context, in *instance, op string, body, out any) error {
	if rep := s.holder(in.session); rep != "" {
		return s.remote.forward(ctx, rep, in.session, op, body, out)
	}
	return switchboard.Errorf(switchboard.CodeSessionGone,
		"the tab showing panel instance %s is not connected; its panels come back when it reconnects", in.id)
}

// targetSession is the tab a call acts in when that is decided before
// it runs: the calling tab itself, sessionId, or — for a call that names
// none — the one tab showing panels when another replica holds it (so the
// call is sent there). "" otherwise: resolveSession decides here.
func (s *Service) targetSession(ctx context.Context, named string) string {
	if p, ok := switchboard.PrincipalFrom(ctx); ok && p.Kind == switchboard.PrincipalSession {
		return p.ID
	}
	if named == "" && s.remote != nil {
		if id, err := s.resolveSession(ctx, ""); err == nil && s.holder(id) != "" {
			return id
		}
	}
	return named
}
