package a2a

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

// The client side: switchboard handing a task to another A2A agent (an
// agents.handoff to a configured peer's URL).

// Peer is an A2A agent switchboard may hand tasks to: the base URL its
// card is under, and the bearer token that agent gave this one.
type Peer struct {
	URL   string
	Token string
}

// Delegated is what a peer answered a delegation with.
type Delegated struct {
	// Agent is the peer's name (its card); TaskID and ContextID name the
	// task there; State is its A2A state when it answered.
	Agent     string `json:"agent"`
	Endpoint  string `json:"endpoint"`
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId"`
	State     string `json:"state"`
}

// Bounds of a delegation.
const (
	delegateTimeout = 30 * time.Second
	maxAnswerBytes  = 1 << 20
)

// MetadataEnvelope is the key of a SendMessage's params.metadata under
// which switchboard sends a delegated task's envelope (tool globs and
// project scopes, the calls, tokens and dollars left, the deadline); a
// receiving switchboard narrows it to its caller's rights.
const MetadataEnvelope = "envelope"

// Delegate sends goal to peer as a new A2A task (SendMessage, returning at
// once) with env in the message's metadata: the peer narrows it to what
// its token for us may do, so it can only get narrower. It reads the
// peer's card to find its JSON-RPC endpoint.
func Delegate(ctx context.Context, hc *http.Client, p Peer, goal string, env switchboard.TaskEnvelope) (Delegated, error) {
	ctx, cancel := context.WithTimeout(ctx, delegateTimeout)
	defer cancel()
	base := strings.TrimSuffix(p.URL, "/")
	var card AgentCard
	if err := getJSON(ctx, client(hc), base+"/.well-known/agent-card.json", &card); err != nil {
		return Delegated{}, err
	}
	endpoint := ""
	for _, i := range card.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, "JSONRPC") && (endpoint == "" || i.ProtocolVersion == ProtocolVersion) {
			endpoint = i.URL
		}
	}
	if endpoint == "" {
		return Delegated{}, switchboard.Errorf(switchboard.CodeUpstreamError, "the A2A agent at %s offers no JSON-RPC interface", base)
	}
	var id [12]byte
	_, _ = rand.Read(id[:])
	var out StreamResponse
	err := rpcCall(ctx, hc, p, endpoint, "SendMessage", map[string]any{
		"message":       Message{MessageID: "sb-" + hex.EncodeToString(id[:]), Role: "ROLE_USER", Parts: []Part{textPart(goal)}},
		"configuration": map[string]any{"returnImmediately": true},
		"metadata":      map[string]any{MetadataEnvelope: env},
	}, &out)
	if err != nil {
		return Delegated{}, err
	}
	if out.Task == nil || out.Task.ID == "" {
		return Delegated{}, switchboard.Errorf(switchboard.CodeUpstreamError, "the A2A agent at %s answered without a task", endpoint)
	}
	t := out.Task
	return Delegated{Agent: card.Name, Endpoint: endpoint, TaskID: t.ID, ContextID: t.ContextID, State: t.Status.State}, nil
}

// GetTask reads task id at the peer's endpoint.
func GetTask(ctx context.Context, hc *http.Client, p Peer, endpoint, id string) (Task, error) {
	var t Task
	err := rpcCall(ctx, hc, p, endpoint, "GetTask", idParams{ID: id}, &t)
	return t, err
}

// CancelTask cancels task id at the peer's endpoint and returns it.
func CancelTask(ctx context.Context, hc *http.Client, p Peer, endpoint, id string) (Task, error) {
	var t Task
	err := rpcCall(ctx, hc, p, endpoint, "CancelTask", idParams{ID: id}, &t)
	return t, err
}

// peerError is a JSON-RPC error a peer answered.
type peerError struct {
	endpoint string
	rpc      *rpcError
}

func (e *peerError) Error() string {
	return fmt.Sprintf("the A2A agent at %s answered: %s (%d)", e.endpoint, e.rpc.Message, e.rpc.Code)
}

// rpcCall sends one JSON-RPC request to a peer and decodes its result
// into out. A refusal is UPSTREAM_ERROR wrapping a *peerError.
func rpcCall(ctx context.Context, hc *http.Client, p Peer, endpoint, method string, params, out any) error {
	resp, err := post(ctx, hc, p, endpoint, method, params, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if resp.StatusCode != http.StatusOK {
		return switchboard.Errorf(switchboard.CodeUpstreamError, "the A2A agent at %s answered %d: %.300s", endpoint, resp.StatusCode, raw)
	}
	return decodeRPC(endpoint, raw, out)
}

// post sends one JSON-RPC request to a peer with its token.
func post(ctx context.Context, hc *http.Client, p Peer, endpoint, method string, params any, accept string) (*http.Response, error) {
	ps, err := json.Marshal(params)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInternal, "%s params: %v", method, err)
	}
	body, _ := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: json.RawMessage(`1`), Method: method, Params: ps})
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeUpstreamError, "the A2A agent's endpoint %q: %v", endpoint, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", accept)
	hreq.Header.Set("A2A-Version", ProtocolVersion)
	hreq.Header.Set("Authorization", "Bearer "+p.Token)
	resp, err := client(hc).Do(hreq)
	if err != nil {
		return nil, switchboard.Errorf(switchboard.CodeUpstreamError, "%s at %s: %v", method, endpoint, err)
	}
	return resp, nil
}

// decodeRPC decodes one JSON-RPC response's result into out.
func decodeRPC(endpoint string, raw []byte, out any) error {
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return switchboard.Errorf(switchboard.CodeUpstreamError, "the A2A agent at %s answered no JSON-RPC response: %v", endpoint, err)
	}
	if resp.Error != nil {
		return switchboard.Errorf(switchboard.CodeUpstreamError, "%w", &peerError{endpoint, resp.Error})
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return switchboard.Errorf(switchboard.CodeUpstreamError, "the A2A agent at %s answered a result that does not decode: %v", endpoint, err)
	}
	return nil
}

func client(hc *http.Client) *http.Client {
	if hc == nil {
		return http.DefaultClient
	}
	return hc
}

func getJSON(ctx context.Context, hc *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "A2A agent URL %q: %v", url, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeUpstreamError, "read the agent card at %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return switchboard.Errorf(switchboard.CodeUpstreamError, "the agent card at %s answered %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(v); err != nil {
		return switchboard.Errorf(switchboard.CodeUpstreamError, "the agent card at %s does not decode: %v", url, err)
	}
	return nil
}

// String names a delegation for a ledger or a note.
func (d Delegated) String() string {
	return fmt.Sprintf("task %s at %s (%s)", d.TaskID, d.Agent, d.State)
}
