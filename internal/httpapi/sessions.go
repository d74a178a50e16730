package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/panel"
	"github.com/switchboardhq/switchboard/internal/session"
	"github.com/switchboardhq/switchboard/internal/sse"
	"github.com/switchboardhq/switchboard/internal/strictjson"
)

// Session routes: the app's backend opens and closes sessions with the
// admin token; the tab uses its session token (Authorization: Bearer, never
// in the URL) for its stream, its tools and its results.
const (
	// maxAdvertiseBytes bounds a PUT of a tab's tools.
	maxAdvertiseBytes = 1 << 20
	// streamWriteTimeout bounds one write to a tab's stream: a reader that
	// stops reading is disconnected (it resumes with Last-Event-ID).
	streamWriteTimeout = 10 * time.Second
)

func (s *Server) sessionRoutes() {
	if s.opts.Sessions == nil {
		return
	}
	s.mux.HandleFunc("POST /api/v1/sessions", s.admin(s.createSession))
	s.mux.HandleFunc("DELETE /api/v1/sessions/{id}", s.closeSession)
	s.mux.HandleFunc("GET /api/v1/sessions/{id}/tools", s.sessionOrAdmin(s.sessionTools))
	s.mux.HandleFunc("PUT /api/v1/sessions/{id}/tools", s.sessionAuth(s.advertise))
	s.mux.HandleFunc("GET /api/v1/sessions/{id}/events", s.sessionAuth(s.sessionEvents))
	s.mux.HandleFunc("POST /api/v1/runs/{runId}/actions/{invocationId}/result", s.actionResult)
}

// sessionAuth runs h only for the bearer of the session token of the
// session named in the path.
func (s *Server) sessionAuth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.credential(r, "missing Authorization: Bearer <sessionToken>", authn.Session)
		if err == nil && c.SessionID() != r.PathValue("id") {
			err = switchboard.Errorf(switchboard.CodeUnauthorized, "this session token belongs to another session")
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r.WithContext(switchboard.WithPrincipal(r.Context(), c.Principal)))
	}
}

// sessionOrAdmin accepts the admin token or the path session's own token.
func (s *Server) sessionOrAdmin(h http.HandlerFunc) http.HandlerFunc {
	sess := s.sessionAuth(h)
	adm := s.admin(h)
	return func(w http.ResponseWriter, r *http.Request) {
		if tok, _ := bearer(r); authn.IsSessionToken(tok) && !s.auth.IsAdmin(tok) {
			sess(w, r)
			return
		}
		adm(w, r)
	}
}

// createSessionBody is POST /sessions: the signed-in user, the scope the
// app gives that user's assistant (session.OpenRequest), and the canvas
// policy of the user's tab.
type createSessionBody struct {
	// Principal names the signed-in user the session acts for.
	Principal string   `json:"principal,omitempty"`
	Allow     []string `json:"allow,omitempty"`
	Deny      []string `json:"deny,omitempty"`
	switchboard.PanelScope
	// CanvasPolicy narrows the canvas policy for this session's tab (it
	// can only make the surface stricter; docs/panels.md).
	CanvasPolicy *panel.CanvasPolicy `json:"canvasPolicy,omitempty"`
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var body createSessionBody
	if r.ContentLength != 0 {
		if err := s.decode(w, r, &body, 64<<10); err != nil && !isEmptyBody(err) {
			s.writeError(w, r, err)
			return
		}
	}
	if body.CanvasPolicy != nil {
		if err := body.CanvasPolicy.Validate(); err != nil { // before anything is created
			s.writeError(w, r, err)
			return
		}
		if s.opts.Panels == nil {
			s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "canvasPolicy: this daemon runs no panels"))
			return
		}
	}
	var err error
	req := session.OpenRequest{Principal: body.Principal, Allow: body.Allow, Deny: body.Deny, PanelScope: body.PanelScope}
	if body.CanvasPolicy != nil && *body.CanvasPolicy != (panel.CanvasPolicy{}) {
		// Stored with the session, so every replica enforces it.
		if req.Canvas, err = json.Marshal(body.CanvasPolicy); err != nil {
			s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "canvasPolicy does not encode: %v", err))
			return
		}
	}
	created, err := s.opts.Sessions.CreateFor(r.Context(), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.CanvasPolicy != nil {
		if err := s.opts.Panels.NarrowSession(created.SessionID, *body.CanvasPolicy); err != nil {
			_ = s.opts.Sessions.Close(r.Context(), created.SessionID) // no session without its narrowing
			s.writeError(w, r, err)
			return
		}
	}
	s.record(r, "session.open", created.SessionID, map[string]any{"principal": body.Principal,
		"allow": body.Allow, "deny": body.Deny, "panels": body.Panels, "slots": body.Slots})
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, created)
}

func isEmptyBody(err error) bool {
	return strings.Contains(switchboard.AsError(err).Message, "request body is empty")
}

// closeSession ends a session: the app's backend (admin token) or the tab
// itself (its session token, sent by the SDK when the page goes away).
func (s *Server) closeSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	c, err := s.credential(r, "missing Authorization: Bearer token", authn.Admin, authn.Session)
	if c.Kind == authn.Session {
		tok, _ := bearer(r)
		if switchboard.CodeOf(err) == switchboard.CodeSessionGone && strings.HasPrefix(tok, id+".") {
			w.WriteHeader(http.StatusNoContent) // closing twice is fine
			return
		}
		if err == nil && c.SessionID() != id {
			err = switchboard.Errorf(switchboard.CodeUnauthorized, "this session token belongs to another session")
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.opts.Sessions.Close(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.opts.Panels != nil {
		s.opts.Panels.ForgetSession(id) // its canvas narrowing ends with it
	}
	s.record(r, "session.close", id, nil)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) sessionTools(w http.ResponseWriter, r *http.Request) {
	tools, err := s.opts.Sessions.Tools(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion, Tools: tools})
}

// advertise is the PUSH of a tab's live browser tools: a manifest
// {"tools": [...]} or a bare array, replacing what the tab had.
func (s *Server) advertise(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if err := s.decode(w, r, &raw, maxAdvertiseBytes); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := parseTools(raw)
	if err == nil && len(m.Panels)+len(m.Adapters) > 0 {
		err = switchboard.Errorf(switchboard.CodeInvalidInput, "a tab advertises tools only; an app declares panels and adapters with POST /api/v1/panels and /api/v1/adapters")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.opts.Sessions.Advertise(r.Context(), r.PathValue("id"), m.Tools)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, switchboard.Manifest{ProtocolVersion: switchboard.ProtocolVersion, Tools: out})
}

// sessionEvents is the tab's SSE stream: a session.ready frame, then
// dispatched requests and cancels (each with an id for Last-Event-ID
// resume), and keep-alive comments while idle.
func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	conn, err := s.opts.Sessions.Attach(r.Context(), r.PathValue("id"), r.Header.Get("Last-Event-ID"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer conn.Close()
	w.Header().Set("Cache-Control", "no-store")
	sw := sse.Start(w, streamWriteTimeout)

	// When the session side ends the stream (slow reader, replaced, closed,
	// shutdown), a write blocked on a reader that stopped reading must fail
	// now: expiring the Writer does that. Nothing touches the connection
	// once the handler has returned.
	expired := make(chan struct{})
	stop := context.AfterFunc(conn.Context(), func() {
		sw.Expire()
		close(expired)
	})
	defer func() {
		if !stop() {
			<-expired
		}
	}()

	frame := func(ev session.Event) { sw.Event(sse.Event{ID: ev.ID, Event: ev.Kind, Data: ev.Data}) }
	frame(conn.Hello())
	hb := time.NewTicker(s.opts.Sessions.Heartbeat())
	defer hb.Stop()
	for {
		for ev, ok := conn.Next(); ok; ev, ok = conn.Next() {
			frame(ev)
		}
		if sw.Flush() != nil {
			return
		}
		select {
		case <-conn.Ready():
		case <-hb.C:
			sw.Comment(sse.Heartbeat)
		case <-conn.Done():
			return
		}
	}
}

// actionResult is the return path: the tab POSTs a BrowserActionResult for
// an invocation dispatched to it. The broker ends the call with it
// (Broker.Complete); once the record holds the answer, the request leaves
// the tab's log (Sessions.Ack).
func (s *Server) actionResult(w http.ResponseWriter, r *http.Request) {
	c, err := s.credential(r, "missing Authorization: Bearer <sessionToken>", authn.Session)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	a := broker.Answer{SessionID: c.SessionID(), RunID: r.PathValue("runId"), InvocationID: r.PathValue("invocationId")}
	ctx := switchboard.WithPrincipal(r.Context(), c.Principal)
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "Content-Type must be application/json, not %q", ct))
		return
	}
	limit := s.opts.Sessions.MaxResultBytes()
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput, "read request body: %v", err))
		return
	}
	if int64(len(body)) > limit {
		a.TooLarge = limit
	} else if err := strictjson.Decode(body, &a.Result, ""); err != nil {
		s.writeError(w, r, err)
		return
	}
	stored, err := s.opts.Broker.Complete(ctx, a)
	if stored.ID != "" {
		s.opts.Sessions.Ack(ctx, a.SessionID, stored.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"invocationId": stored.ID, "status": stored.Status})
}
