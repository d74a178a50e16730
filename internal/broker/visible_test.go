package broker_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/schema"
)

// spyTabs are live tabs behind the Browser seam that note every name they
// are asked about.
type spyTabs struct {
	b     *broker.Broker
	tools map[string]switchboard.Tool

	mu    sync.Mutex
	asked []string
}

func (s *spyTabs) Resolve(_ context.Context, tool, sessionID, _ string, _ func(switchboard.Tool) bool) (broker.Target, error) {
	s.mu.Lock()
	s.asked = append(s.asked, tool)
	s.mu.Unlock()
	if sessionID == "ses_gone" {
		return broker.Target{}, switchboard.Errorf(switchboard.CodeSessionGone, "session %s was closed", sessionID)
	}
	t, ok := s.tools[tool]
	if !ok {
		return broker.Target{}, switchboard.Errorf(switchboard.CodeToolUnavailable, "no connected tab advertises %s", tool)
	}
	in, err := schema.Compile(t.InputSchema)
	return broker.Target{SessionID: "ses_a", Tool: t, Input: in}, err
}

// Deliver answers at once, through the broker, as a tab's result POST.
func (s *spyTabs) Deliver(_ context.Context, inv switchboard.Invocation, _ time.Duration) (<-chan error, func(), error) {
	go func() { _, _ = s.b.Complete(context.Background(), answer(inv, `true`)) }()
	return make(chan error), func() {}, nil
}

func (s *spyTabs) Withdraw(context.Context, switchboard.Invocation, *switchboard.Error) {}

func (s *spyTabs) Output(context.Context, string, string) *schema.Schema { return nil }

// The call-time check is the registry's predicate: a catalog or tab tool
// an agent may not see (outside its scope, or user-only) fails exactly
// like a name nothing knows, with or without a session, records nothing,
// and a name outside the scope is never asked of the tabs.
func TestHiddenToolsAreUnknownAtCallTime(t *testing.T) {
	spy := &spyTabs{}
	e := newEnv(t, func(o *broker.Options) { o.Browser = spy })
	spy.b = e.b
	secret, purge := echoTool, echoTool
	secret.Name, purge.Name, purge.Approval = "test.secret", "test.purge", switchboard.ApprovalUserOnly
	e.goTool(t, echoTool, echo)
	e.goTool(t, secret, echo)
	e.goTool(t, purge, echo)
	vault, own := scrollTool, scrollTool
	vault.Name, own.Name, own.Approval = "view.vault", "view.own", switchboard.ApprovalUserOnly
	spy.tools = map[string]switchboard.Tool{scrollTool.Name: scrollTool, vault.Name: vault, own.Name: own}

	ctx := context.Background()
	agent := switchboard.Principal{
		Kind: switchboard.PrincipalAgent, ID: "planner", Allow: []string{"test.*", "view.*"}, Deny: []string{"*.secret", "*.vault"}}
	in := json.RawMessage(`{"msg":"x"}`)
	for _, sid := range []string{"", "ses_gone"} {
		_, unknown := e.b.Call(ctx, broker.CallRequest{Tool: "test.nope", Input: in, SessionID: sid, Caller: &agent})
		want := switchboard.AsError(unknown)
		for _, name := range []string{"test.secret", "test.purge", "view.vault", "view.own"} {
			inv, err := e.b.Call(ctx, broker.CallRequest{Tool: name, Input: in, SessionID: sid, Caller: &agent})
			got := switchboard.AsError(err)
			if inv.ID != "" || got == nil || got.Code != want.Code || got.Details != nil ||
				got.Message != strings.ReplaceAll(want.Message, "test.nope", name) {
				t.Errorf("session %q, hidden %s: %+v %v; an unknown name gets %v", sid, name, inv, err, unknown)
			}
		}
	}
	if n := len(e.ledger(t)); n != 0 {
		t.Fatalf("%d refused calls were recorded", n)
	}
	spy.mu.Lock()
	asked := slices.Clone(spy.asked)
	spy.mu.Unlock()
	if slices.Contains(asked, "test.secret") || slices.Contains(asked, "view.vault") {
		t.Errorf("the tabs were asked about names outside the scope: %q", asked)
	}

	// The same tools are the user's to run, and a visible one the agent's.
	for _, name := range []string{"test.secret", "test.purge"} {
		if _, err := e.b.Call(ctx, broker.CallRequest{Tool: name, Input: in, Caller: &operator}); err != nil {
			t.Errorf("user calls %s: %v", name, err)
		}
	}
	for _, name := range []string{"view.vault", "view.own"} {
		if _, err := e.b.Call(ctx, broker.CallRequest{Tool: name, Input: json.RawMessage(`{"to":"top"}`), Caller: &operator}); err != nil {
			t.Errorf("user calls %s: %v", name, err)
		}
	}
	if _, err := e.b.Call(ctx, broker.CallRequest{Tool: "view.scroll", Input: json.RawMessage(`{"to":"top"}`), Caller: &agent}); err != nil {
		t.Errorf("agent calls view.scroll: %v", err)
	}
}
