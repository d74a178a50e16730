// Package a2a is switchboard's Agent2Agent (A2A 1.0) binding: the agent
// card of the app's assistant at /.well-known/agent-card.json, and the
// JSON-RPC binding at /a2a through which another agent delegates work to
// that assistant. A message it sends creates a delegated task (package
// task) for the caller's user, within the caller's own permissions; the
// task methods (GetTask, CancelTask, ListTasks) and the streams
// (SendStreamingMessage, SubscribeToTask, over SSE) read and steer it.
// The transport translates and decides nothing: scope, budget and
// approvals are the task's and the broker's.
package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/authn"
	"github.com/switchboardhq/switchboard/internal/task"
)

// Bounds of the binding.
const (
	// MaxBodyBytes bounds one JSON-RPC request.
	MaxBodyBytes = 1 << 20
	// MaxWait bounds how long a blocking SendMessage waits for its task
	// to finish or need input; past it the task is returned as it is
	// (working), for the caller to follow with GetTask.
	MaxWait = 60 * time.Second
	// pollInterval spaces a stream's reads of a task that another replica
	// works on (this replica's own changes wake it at once).
	pollInterval = time.Second
	// maxSkillTools is how many tool names a skill's description lists.
	maxSkillTools = 8
	// replayWindow is how many of the caller's newest tasks a message id
	// is looked up in.
	replayWindow = 200
)

// Options configures a Server. Tasks and Auth are required.
type Options struct {
	Tasks *task.Service
	Auth  *authn.Authenticator
	// Catalog lists the tools the assistant may call; the card's skills
	// are their namespaces.
	Catalog func(ctx context.Context) ([]switchboard.Tool, error)
	// Name and Description introduce the assistant on its card.
	Name, Description string
	// OpenIDIssuer, when set, is the external issuer whose tokens the
	// daemon takes: the card lists it as an OpenID Connect scheme.
	OpenIDIssuer string
	// OAuthScope is the scope an OAuth access token (authn.OAuth, whose
	// audience is /mcp) must hold here, as on /mcp; "" refuses such
	// tokens.
	OAuthScope string
	// Version is the daemon's version, shown on the card.
	Version string
	Logger  *slog.Logger
}

// Server serves the card and the JSON-RPC binding.
type Server struct {
	opts Options
	log  *slog.Logger
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Tasks == nil || opts.Auth == nil {
		return nil, errors.New("a2a: Options.Tasks and Auth are required")
	}
	if opts.Name == "" {
		opts.Name = "switchboard assistant"
	}
	if opts.Description == "" {
		opts.Description = "The assistant built into this web application: give it a goal in plain words and it works on it as a task " +
			"with the application's tools, within your token's permissions; mutations may wait for its user's approval."
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, log: opts.Logger}, nil
}

// CardHandler serves GET /.well-known/agent-card.json (no token: the card
// is how a caller learns how to authenticate).
func (s *Server) CardHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		card, err := s.Card(r.Context(), baseURL(r))
		if err != nil {
			s.log.WarnContext(r.Context(), "agent card", "err", err)
			http.Error(w, "the agent card is not available: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=60")
		_ = json.NewEncoder(w).Encode(card)
	})
}

// Card is the assistant's card as reached at base (scheme://host).
func (s *Server) Card(ctx context.Context, base string) (AgentCard, error) {
	card := AgentCard{
		Name: s.opts.Name, Description: s.opts.Description, Version: s.opts.Version,
		SupportedInterfaces: []AgentInterface{{URL: base + "/a2a", ProtocolBinding: "JSONRPC", ProtocolVersion: ProtocolVersion}},
		Provider:            &AgentProvider{Organization: "switchboard", URL: base},
		Capabilities:        AgentCapabilities{Streaming: true},
		SecuritySchemes: map[string]SecurityScheme{"bearer": {HTTPAuth: &HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "an agent token from the app's operator (POST /api/v1/tokens); the task acts for the token's user within its scope"}}},
		SecurityRequirements: []SecurityRequirement{{Schemes: map[string]StringList{"bearer": {List: []string{}}}}},
		DefaultInputModes:    []string{"text/plain", "application/json"},
		DefaultOutputModes:   []string{"text/plain"},
		Skills:               []AgentSkill{},
	}
	if iss := strings.TrimSuffix(s.opts.OpenIDIssuer, "/"); iss != "" {
		card.SecuritySchemes["oidc"] = SecurityScheme{OpenID: &OpenIDSecurityScheme{OpenIDConnectURL: iss + "/.well-known/openid-configuration",
			Description: "an access token of the app's identity provider"}}
		card.SecurityRequirements = append(card.SecurityRequirements, SecurityRequirement{Schemes: map[string]StringList{"oidc": {List: []string{}}}})
	}
	if s.opts.Catalog != nil {
		tools, err := s.opts.Catalog(ctx)
		if err != nil {
			return card, err
		}
		card.Skills = skills(tools)
	}
	return card, nil
}

// skills groups tools by namespace (the name before its first dot): one
// skill a namespace, naming its tools.
func skills(tools []switchboard.Tool) []AgentSkill {
	by := map[string][]switchboard.Tool{}
	for _, t := range tools {
		ns, _, _ := strings.Cut(t.Name, ".")
		by[ns] = append(by[ns], t)
	}
	names := make([]string, 0, len(by))
	for ns := range by {
		names = append(names, ns)
	}
	sort.Strings(names)
	out := make([]AgentSkill, 0, len(names))
	for _, ns := range names {
		ts := by[ns]
		var list []string
		for i, t := range ts {
			if i == maxSkillTools {
				list = append(list, fmt.Sprintf("and %d more", len(ts)-i))
				break
			}
			line := t.Name
			if t.Summary != "" {
				line += " (" + t.Summary + ")"
			}
			list = append(list, line)
		}
		tags := []string{ns}
		for _, t := range ts {
			if !slices.Contains(tags, string(t.Class)) && t.Class != "" {
				tags = append(tags, string(t.Class))
			}
		}
		out = append(out, AgentSkill{ID: ns, Name: ns, Tags: tags,
			Description: fmt.Sprintf("Work with %s: %s.", ns, strings.Join(list, "; "))})
	}
	return out
}

// baseURL is scheme://host as the caller reached the daemon.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// rpcRequest is one JSON-RPC 2.0 request.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// Handler serves POST /a2a.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeRPC(w, http.StatusMethodNotAllowed, nil, &rpcError{Code: codeInvalidRequest, Message: "A2A JSON-RPC requests are POSTed"})
		return
	}
	// Who is calling is decided first: a missing, forged or revoked token
	// gets 401 whatever the body says.
	c, err := s.opts.Auth.Authenticate(r)
	if err == nil && c.Kind != authn.Admin && c.Kind != authn.Agent && c.Kind != authn.OAuth {
		what := "a tab's session token"
		if c.Kind == authn.User {
			what = "a person's console sign-in token"
		}
		err = switchboard.Errorf(switchboard.CodeUnauthorized, "%s cannot delegate tasks; use an agent token", what)
	}
	if err == nil && c.Kind == authn.OAuth && (s.opts.OAuthScope == "" || !slices.Contains(c.Scopes, s.opts.OAuthScope)) {
		// A token its user never granted /mcp's scope is refused at /mcp;
		// it must not act for them here either.
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q`, s.opts.OAuthScope))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(switchboard.ErrorEnvelope{Error: switchboard.Errorf(switchboard.CodeForbidden,
			"the access token lacks the scope %q that /a2a needs; authorize again asking for it", s.opts.OAuthScope)})
		return
	}
	if err != nil {
		// Not a JSON-RPC answer: the request was never read. The body is
		// the daemon's error envelope, as on every other route.
		e := switchboard.AsError(err)
		if e.Code != switchboard.CodeUnauthorized {
			e = switchboard.Errorf(switchboard.CodeUnauthorized, "%s", e.Message)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(switchboard.ErrorEnvelope{Error: e})
		return
	}
	if v := r.Header.Get("A2A-Version"); v != "" && v != ProtocolVersion && v != "1" {
		writeRPC(w, http.StatusOK, nil, &rpcError{Code: codeVersionUnsupported, Message: fmt.Sprintf("A2A version %q is not supported; this agent speaks %s", v, ProtocolVersion)})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		writeRPC(w, http.StatusRequestEntityTooLarge, nil, &rpcError{Code: codeInvalidRequest, Message: fmt.Sprintf("the request is larger than %d bytes", MaxBodyBytes)})
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		if t := strings.TrimSpace(string(body)); strings.HasPrefix(t, "[") && json.Valid(body) {
			writeRPC(w, http.StatusOK, nil, &rpcError{Code: codeInvalidRequest, Message: "JSON-RPC batches are not supported; send one request at a time"})
			return
		}
		writeRPC(w, http.StatusOK, nil, &rpcError{Code: codeParseError, Message: "the body is not valid JSON: " + err.Error()})
		return
	}
	if req.JSONRPC != "2.0" || req.Method == "" || !validID(req.ID) {
		writeRPC(w, http.StatusOK, validOrNull(req.ID), &rpcError{Code: codeInvalidRequest,
			Message: `a JSON-RPC 2.0 request needs "jsonrpc": "2.0", a method and an id (a string or a number)`})
		return
	}
	ctx := switchboard.WithPrincipal(r.Context(), c.Principal)
	r = r.WithContext(ctx)
	switch req.Method {
	case "SendStreamingMessage":
		s.sendStreaming(w, r, c.Principal, req)
		return
	case "SubscribeToTask":
		s.subscribe(w, r, c.Principal, req)
		return
	}
	result, rerr := s.call(ctx, c.Principal, req)
	writeRPC(w, http.StatusOK, req.ID, rerr, result)
}

// call runs a method that answers once.
func (s *Server) call(ctx context.Context, who switchboard.Principal, req rpcRequest) (any, *rpcError) {
	switch req.Method {
	case "SendMessage":
		var p sendParams
		if err := params(req, &p); err != nil {
			return nil, err
		}
		t, err := s.create(ctx, who, p)
		if err != nil {
			return nil, err
		}
		if p.Configuration == nil || !p.Configuration.ReturnImmediately {
			t = s.await(ctx, who, t)
		}
		w := toWire(t)
		return StreamResponse{Task: &w}, nil
	case "GetTask":
		var p idParams
		if err := params(req, &p); err != nil {
			return nil, err
		}
		t, err := s.opts.Tasks.Get(ctx, who, p.ID)
		if err != nil {
			return nil, rpcErr(err)
		}
		return toWire(t), nil
	case "CancelTask":
		var p idParams
		if err := params(req, &p); err != nil {
			return nil, err
		}
		t, err := s.opts.Tasks.Cancel(ctx, who, p.ID)
		if err != nil {
			return nil, rpcErr(err)
		}
		return toWire(t), nil
	case "ListTasks":
		var p listParams
		if err := params(req, &p); err != nil {
			return nil, err
		}
		var status []switchboard.TaskStatus
		if p.Status != "" && p.Status != "TASK_STATE_UNSPECIFIED" {
			for st, name := range states {
				if name == p.Status {
					status = append(status, st)
				}
			}
			if len(status) == 0 {
				return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("status %q is not a task state", p.Status)}
			}
		}
		size := p.PageSize
		if size <= 0 || size > 100 {
			size = 50
		}
		ts, err := s.opts.Tasks.List(ctx, who, status, size)
		if err != nil {
			return nil, rpcErr(err)
		}
		out := []Task{}
		for _, t := range ts {
			if p.ContextID == "" || toWire(t).ContextID == p.ContextID {
				out = append(out, toWire(t))
			}
		}
		return map[string]any{"tasks": out, "nextPageToken": "", "pageSize": size, "totalSize": len(out)}, nil
	case "GetExtendedAgentCard":
		return nil, &rpcError{Code: -32007, Message: "this agent has no extended card"}
	case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig":
		return nil, &rpcError{Code: -32003, Message: "push notifications are not supported; follow a task with SubscribeToTask or GetTask"}
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("no method %q; this agent serves SendMessage, SendStreamingMessage, GetTask, CancelTask, ListTasks and SubscribeToTask", req.Method)}
}

// create makes the task a message asks for: its text (and data parts,
// as JSON) is the goal, for the caller's user within the caller's rights.
func (s *Server) create(ctx context.Context, who switchboard.Principal, p sendParams) (switchboard.Task, *rpcError) {
	m := p.Message
	if m == nil {
		return switchboard.Task{}, &rpcError{Code: codeInvalidParams, Message: "params.message is required"}
	}
	if m.Role != "ROLE_USER" {
		return switchboard.Task{}, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("the message's role must be ROLE_USER, not %q", m.Role)}
	}
	if m.TaskID != "" {
		if _, err := s.opts.Tasks.Get(ctx, who, m.TaskID); err != nil {
			return switchboard.Task{}, rpcErr(err)
		}
		return switchboard.Task{}, &rpcError{Code: codeUnsupported, Message: "a task takes no follow-up messages: its approvals are answered by its user in switchboard; send a new message for new work"}
	}
	var goal []string
	for i, part := range m.Parts {
		switch {
		case part.Text != nil:
			goal = append(goal, *part.Text)
		case len(part.Data) > 0:
			goal = append(goal, string(part.Data))
		default:
			return switchboard.Task{}, &rpcError{Code: codeContentType, Message: fmt.Sprintf("part %d is a file; this agent takes text and data parts", i)}
		}
	}
	// The same message sent again (a retry after a lost answer) is the
	// task it made, not a second one.
	if m.MessageID != "" {
		recent, err := s.opts.Tasks.List(ctx, who, nil, replayWindow)
		if err != nil {
			return switchboard.Task{}, rpcErr(err)
		}
		for _, t := range recent {
			if t.Message == m.MessageID && t.Creator == who.String() {
				return t, nil
			}
		}
	}
	req := task.CreateRequest{Goal: strings.Join(goal, "\n"), Context: m.ContextID, Message: m.MessageID}
	if req.Context == "" {
		req.Context = "ctx_" + m.MessageID
	}
	if md := p.Metadata; md != nil {
		if md.Envelope != nil {
			req.Envelope = *md.Envelope
		}
		req.Projects = md.Projects
	}
	t, err := s.opts.Tasks.Create(ctx, who, req)
	if err != nil {
		return t, rpcErr(err)
	}
	return t, nil
}

// await waits until t finishes or needs input, at most MaxWait (or until
// the caller goes), and returns it as it then is.
func (s *Server) await(ctx context.Context, who switchboard.Principal, t switchboard.Task) switchboard.Task {
	ctx, cancel := context.WithTimeout(ctx, MaxWait)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		changed, release := s.opts.Tasks.Changed(t.ID)
		cur, err := s.opts.Tasks.Get(context.WithoutCancel(ctx), who, t.ID)
		if err == nil {
			t = cur
		}
		if t.Status.Terminal() || t.Status == switchboard.TaskInputRequired {
			release()
			return t
		}
		select {
		case <-ctx.Done():
			release()
			return t
		case <-changed:
		case <-tick.C:
		}
		release()
	}
}

// params decodes a request's params.
func params(req rpcRequest, v any) *rpcError {
	if len(req.Params) == 0 || string(req.Params) == "null" {
		return &rpcError{Code: codeInvalidParams, Message: req.Method + " needs params"}
	}
	if err := json.Unmarshal(req.Params, v); err != nil {
		return &rpcError{Code: codeInvalidParams, Message: "params of " + req.Method + ": " + err.Error()}
	}
	return nil
}

// rpcErr maps a switchboard error to its A2A code, keeping the frozen
// code in data.
func rpcErr(err error) *rpcError {
	e := switchboard.AsError(err)
	code := codeInternal
	switch e.Code {
	case switchboard.CodeNotFound:
		code = codeTaskNotFound
	case switchboard.CodeConflict:
		code = codeTaskNotCancelable
	case switchboard.CodeInvalidInput, switchboard.CodeSchemaViolation, switchboard.CodeForbidden, switchboard.CodePayloadTooLarge:
		code = codeInvalidParams
	}
	data := map[string]any{"code": e.Code}
	if e.Details != nil {
		data["details"] = e.Details
	}
	return &rpcError{Code: code, Message: e.Message, Data: data}
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

func validOrNull(id json.RawMessage) json.RawMessage {
	if validID(id) {
		return id
	}
	return json.RawMessage("null")
}

func writeRPC(w http.ResponseWriter, status int, id json.RawMessage, e *rpcError, result ...any) {
	if id == nil {
		id = json.RawMessage("null")
	}
	resp := rpcResponse{JSONRPC: "2.0", ID: id, Error: e}
	if e == nil && len(result) > 0 {
		resp.Result = result[0]
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}
