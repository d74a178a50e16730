package model_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

// env is a LookupEnv with fixed contents.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// providers builds each provider against its own scripted server.
type providerCase struct {
	name   string
	start  func(t *testing.T, turns ...modeltest.Turn) (model.Provider, *modeltest.Script)
	keyHdr func(h http.Header) string
}

var noRetry = model.Options{MaxRetries: -1, LookupEnv: env("TEST_KEY", "sk-test")}

var providers = []providerCase{
	{
		name: "openai",
		start: func(t *testing.T, turns ...modeltest.Turn) (model.Provider, *modeltest.Script) {
			srv := modeltest.NewOpenAI(t, turns...)
			return model.NewOpenAI(model.OpenAIOptions{BaseURL: srv.BaseURL(), APIKeyEnv: "TEST_KEY", Options: noRetry}), &srv.Script
		},
		keyHdr: func(h http.Header) string { return strings.TrimPrefix(h.Get("Authorization"), "Bearer ") },
	},
	{
		name: "anthropic",
		start: func(t *testing.T, turns ...modeltest.Turn) (model.Provider, *modeltest.Script) {
			srv := modeltest.NewAnthropic(t, turns...)
			return model.NewAnthropic(model.AnthropicOptions{BaseURL: srv.BaseURL(), APIKeyEnv: "TEST_KEY", Options: noRetry}), &srv.Script
		},
		// anthropic-sdk-go v2 sends the key as a bearer token (v1 used x-api-key).
		keyHdr: func(h http.Header) string {
			if k := h.Get("X-Api-Key"); k != "" {
				return k
			}
			return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
		},
	},
}

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)

func TestStreamTextAndToolCalls(t *testing.T) {
	for _, pc := range providers {
		t.Run(pc.name, func(t *testing.T) {
			t.Parallel()
			p, script := pc.start(t, modeltest.Turn{
				Text: "Let me check both.",
				ToolCalls: []modeltest.Call{
					{ID: "call_1", Name: "weather_get", Args: `{"city":"Paris"}`},
					{ID: "call_2", Name: "weather_get", Args: `{"city":"Oslo"}`},
				},
				InputTokens: 120, OutputTokens: 30, ChunkSize: 5,
			})
			var events []model.Event
			resp, err := p.Stream(context.Background(), model.Request{
				Model:  "m-1",
				System: "You are terse.",
				Messages: []model.Message{
					{Role: model.RoleUser, Content: "weather?"},
				},
				Tools: []model.Tool{{Name: "weather_get", Description: "Current weather.", Schema: weatherSchema}},
			}, func(e model.Event) { events = append(events, e) })
			if err != nil {
				t.Fatal(err)
			}
			want := model.Response{
				Message: model.Message{Role: model.RoleAssistant, Content: "Let me check both.", ToolCalls: []model.ToolCall{
					{ID: "call_1", Name: "weather_get", Args: `{"city":"Paris"}`},
					{ID: "call_2", Name: "weather_get", Args: `{"city":"Oslo"}`},
				}},
				Usage:  model.Usage{InputTokens: 120, OutputTokens: 30},
				Finish: model.FinishToolCalls,
				Model:  "scripted", // what the scripted servers say answered
			}
			if d := cmp.Diff(want, resp); d != "" {
				t.Errorf("response (-want +got):\n%s", d)
			}
			// The events replay the response: text deltas in order, each call
			// start → args… → end with its id, arguments streamed in pieces.
			var text strings.Builder
			args := map[string]string{}
			var seq []string
			for _, e := range events {
				switch e.Type {
				case model.EventText:
					text.WriteString(e.Text)
				case model.EventToolStart:
					seq = append(seq, "start:"+e.ToolCallID+":"+e.ToolName)
				case model.EventToolArgs:
					args[e.ToolCallID] += e.ArgsDelta
				case model.EventToolEnd:
					seq = append(seq, "end:"+e.ToolCallID)
				}
			}
			if text.String() != want.Message.Content {
				t.Errorf("streamed text %q", text.String())
			}
			if args["call_1"] != `{"city":"Paris"}` || args["call_2"] != `{"city":"Oslo"}` {
				t.Errorf("streamed args %v", args)
			}
			if n := countType(events, model.EventToolArgs); n < 4 {
				t.Errorf("arguments arrived in %d pieces; the script streams them in several", n)
			}
			for _, s := range seq {
				if !strings.HasPrefix(s, "start:") && !strings.HasPrefix(s, "end:") {
					t.Fatal(s)
				}
			}
			if seq[0] != "start:call_1:weather_get" {
				t.Errorf("tool event order %v", seq)
			}
			// The request carried the key from the environment variable, the
			// model id, the system prompt and the tool's raw schema.
			if got := pc.keyHdr(script.Headers()[0]); got != "sk-test" {
				t.Errorf("API key header %q", got)
			}
			body := script.Requests()[0]
			if body["model"] != "m-1" || body["stream"] != true {
				t.Errorf("request model/stream: %v %v", body["model"], body["stream"])
			}
			raw, _ := json.Marshal(body)
			for _, s := range []string{"You are terse.", "weather_get", `"city"`, "Current weather."} {
				if !strings.Contains(string(raw), s) {
					t.Errorf("request lacks %s: %s", s, raw)
				}
			}
		})
	}
}

func countType(evs []model.Event, typ model.EventType) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// TestConversationRoundTrip sends a history with a tool call and its result
// and checks each provider's wire shape for them.
func TestConversationRoundTrip(t *testing.T) {
	history := []model.Message{
		{Role: model.RoleUser, Content: "weather in Paris and Oslo?"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "call_1", Name: "weather_get", Args: `{"city":"Paris"}`},
			{ID: "call_2", Name: "weather_get", Args: `{"city":"Oslo"}`},
		}},
		{Role: model.RoleTool, ToolCallID: "call_1", Content: `{"tempC":21}`},
		{Role: model.RoleTool, ToolCallID: "call_2", Content: `TOOL_UNAVAILABLE: no tab`, IsError: true},
	}
	for _, pc := range providers {
		t.Run(pc.name, func(t *testing.T) {
			t.Parallel()
			p, script := pc.start(t, modeltest.Turn{Text: "Paris is 21°C.", InputTokens: 9, OutputTokens: 4})
			resp, err := p.Stream(context.Background(), model.Request{Model: "m", Messages: history}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "Paris is 21°C." || resp.Finish != model.FinishStop {
				t.Errorf("response %+v", resp)
			}
			msgs, _ := script.Requests()[0]["messages"].([]any)
			switch pc.name {
			case "openai": // user, assistant(tool_calls), tool, tool
				if len(msgs) != 4 {
					t.Fatalf("openai messages: %v", msgs)
				}
				asst := msgs[1].(map[string]any)
				calls := asst["tool_calls"].([]any)
				fn := calls[0].(map[string]any)["function"].(map[string]any)
				if fn["name"] != "weather_get" || fn["arguments"] != `{"city":"Paris"}` {
					t.Errorf("assistant tool call %v", fn)
				}
				if tm := msgs[2].(map[string]any); tm["role"] != "tool" || tm["tool_call_id"] != "call_1" {
					t.Errorf("tool message %v", tm)
				}
			case "anthropic": // user, assistant(tool_use×2), user(tool_result×2)
				if len(msgs) != 3 {
					t.Fatalf("anthropic messages: %v", msgs)
				}
				results := msgs[2].(map[string]any)["content"].([]any)
				if len(results) != 2 {
					t.Fatalf("tool results share one user turn: %v", msgs[2])
				}
				r2 := results[1].(map[string]any)
				if r2["type"] != "tool_result" || r2["tool_use_id"] != "call_2" || r2["is_error"] != true {
					t.Errorf("tool result %v", r2)
				}
				use := msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any)
				if use["type"] != "tool_use" || use["input"].(map[string]any)["city"] != "Paris" {
					t.Errorf("tool_use block %v", use)
				}
			}
		})
	}
}

func TestStreamErrors(t *testing.T) {
	cases := []struct {
		turn modeltest.Turn
		want []string
	}{
		{modeltest.Turn{Status: 401, ErrorMessage: "Incorrect API key provided"}, []string{"refused the API key from $TEST_KEY", "HTTP 401", "Incorrect API key provided"}},
		{modeltest.Turn{Status: 429, ErrorMessage: "You exceeded your current quota"}, []string{"rate limiting", "HTTP 429", "exceeded your current quota"}},
		{modeltest.Turn{Status: 500, ErrorMessage: "upstream exploded"}, []string{"provider failed (HTTP 500)", "upstream exploded"}},
		{modeltest.Turn{Status: 404, ErrorMessage: "no such model"}, []string{"not found", "check model and baseURL"}},
		{modeltest.Turn{Text: "partial", StreamError: "overloaded now"}, []string{"overloaded now"}},
	}
	for _, pc := range providers {
		for _, c := range cases {
			t.Run(pc.name+"/"+c.want[0], func(t *testing.T) {
				t.Parallel()
				p, _ := pc.start(t, c.turn)
				_, err := p.Stream(context.Background(), model.Request{Model: "m", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil)
				if code := switchboard.CodeOf(err); code != switchboard.CodeModelError {
					t.Fatalf("code %s, err %v", code, err)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
			})
		}
	}
}

func TestMissingKeyFailsBeforeCalling(t *testing.T) {
	for _, pc := range providers {
		t.Run(pc.name, func(t *testing.T) {
			srvOpenAI := modeltest.NewOpenAI(t)
			srvAnthropic := modeltest.NewAnthropic(t)
			o := model.Options{LookupEnv: env()}
			var p model.Provider = model.NewOpenAI(model.OpenAIOptions{BaseURL: srvOpenAI.BaseURL(), APIKeyEnv: "NOPE_KEY", Options: o})
			if pc.name == "anthropic" {
				p = model.NewAnthropic(model.AnthropicOptions{BaseURL: srvAnthropic.BaseURL(), APIKeyEnv: "NOPE_KEY", Options: o})
			}
			_, err := p.Stream(context.Background(), model.Request{Model: "m"}, nil)
			if switchboard.CodeOf(err) != switchboard.CodeModelError || !strings.Contains(err.Error(), "$NOPE_KEY is not set") {
				t.Fatalf("err %v", err)
			}
			if n := len(srvOpenAI.Requests()) + len(srvAnthropic.Requests()); n != 0 {
				t.Errorf("%d requests were sent", n)
			}
		})
	}
}

func TestNoKeyConfiguredSendsNone(t *testing.T) {
	srv := modeltest.NewOpenAI(t, modeltest.Turn{Text: "hi"})
	p := model.NewOpenAI(model.OpenAIOptions{BaseURL: srv.BaseURL(), Options: model.Options{LookupEnv: env("OPENAI_API_KEY", "leak")}})
	if _, err := p.Stream(context.Background(), model.Request{Model: "llama3", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if h := srv.Headers()[0].Get("Authorization"); strings.Contains(h, "leak") {
		t.Errorf("Authorization %q: a key from the SDK's environment default leaked", h)
	}
}

func TestCancelStopsTheStream(t *testing.T) {
	for _, pc := range providers {
		t.Run(pc.name, func(t *testing.T) {
			t.Parallel()
			block := make(chan struct{})
			defer close(block)
			p, _ := pc.start(t, modeltest.Turn{Text: "first chunk then a long pause", Hold: block})
			ctx, cancel := context.WithCancel(context.Background())
			_, err := p.Stream(ctx, model.Request{Model: "m", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}, func(e model.Event) {
				if e.Type == model.EventText {
					cancel() // the model is mid-answer
				}
			})
			if switchboard.CodeOf(err) != switchboard.CodeCancelled {
				t.Fatalf("err %v (code %s)", err, switchboard.CodeOf(err))
			}
		})
	}
}
