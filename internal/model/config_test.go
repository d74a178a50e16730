package model_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/model"
	"github.com/switchboardhq/switchboard/internal/model/modeltest"
)

func TestResolverNotConfigured(t *testing.T) {
	r, err := model.NewResolver(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Resolve(context.Background(), "")
	if switchboard.CodeOf(err) != switchboard.CodeModelError {
		t.Fatalf("err %v", err)
	}
	for _, s := range []string{"switchboard serve --config", "models:", "provider:", "apiKeyEnv"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message does not say how to configure (%q missing): %v", s, err)
		}
	}
}

func TestResolverBindings(t *testing.T) {
	no := false
	ctxTok := 32000
	r, err := model.NewResolver(map[string]model.Config{
		"default": {Provider: "openai", Model: "gpt-4.1-mini", BaseURL: "http://127.0.0.1:11434/v1", APIKeyEnv: "OPENAI_API_KEY",
			Price: &model.Price{InputPerMTok: 0.4, OutputPerMTok: 1.6}},
		"claude": {Provider: "anthropic", Model: "claude-sonnet-4-5", APIKeyEnv: "ANTHROPIC_API_KEY",
			Caps: &model.CapsConfig{Vision: &no, ContextTokens: &ctxTok}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Resolve(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if b.Alias != "default" || b.Provider != "openai" || b.Model != "gpt-4.1-mini" || !b.Caps.Tools || !b.Caps.Streaming || b.Client == nil {
		t.Errorf("default binding %+v", b)
	}
	c, err := r.Resolve(context.Background(), "claude")
	if err != nil {
		t.Fatal(err)
	}
	if c.Caps.Vision || c.Caps.ContextTokens != 32000 || !c.Caps.Tools {
		t.Errorf("caps override: %+v", c.Caps)
	}
	if _, err := r.Resolve(context.Background(), "gpt5"); switchboard.CodeOf(err) != switchboard.CodeModelError || !strings.Contains(err.Error(), "claude, default") {
		t.Errorf("unknown alias: %v", err)
	}
	cost := b.Price.Cost(model.Usage{InputTokens: 1_000_000, OutputTokens: 500_000})
	if math.Abs(cost-1.2) > 1e-9 {
		t.Errorf("cost %v", cost)
	}
}

func TestResolverRejectsBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  model.Config
		want string
	}{
		{model.Config{Model: "x"}, "provider is required"},
		{model.Config{Provider: "gemini", Model: "x"}, `unknown provider "gemini"`},
		{model.Config{Provider: "openai"}, "model is required"},
	} {
		_, err := model.NewResolver(map[string]model.Config{"a": c.cfg}, nil)
		if switchboard.CodeOf(err) != switchboard.CodeInvalidInput || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "models.a") {
			t.Errorf("%+v: %v", c.cfg, err)
		}
	}
}

// TestResolverStreams resolves an alias and streams through the binding's
// client, reading the key at call time.
func TestResolverStreams(t *testing.T) {
	srv := modeltest.NewOpenAI(t, modeltest.Turn{Text: "pong"})
	key := ""
	r, err := model.NewResolver(map[string]model.Config{
		"default": {Provider: "openai", Model: "m", BaseURL: srv.BaseURL(), APIKeyEnv: "K"},
	}, &model.Options{LookupEnv: func(string) (string, bool) { return key, key != "" }})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Resolve(context.Background(), "default")
	req := model.Request{Model: b.Model, Messages: []model.Message{{Role: model.RoleUser, Content: "ping"}}}
	if _, err := b.Client.Stream(context.Background(), req, nil); switchboard.CodeOf(err) != switchboard.CodeModelError {
		t.Fatalf("without the key: %v", err)
	}
	key = "sk-late" // exported after the daemon started
	resp, err := b.Client.Stream(context.Background(), req, nil)
	if err != nil || resp.Message.Content != "pong" {
		t.Fatalf("%+v %v", resp, err)
	}
	if h := srv.Headers()[0].Get("Authorization"); h != "Bearer sk-late" {
		t.Errorf("Authorization %q", h)
	}
}
