package model_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/model"
)

// TestDescribe: configured models are listed with their endpoint and key
// variable, whether that variable is set, and never the key or credentials
// in the endpoint; no model says why and how to configure one.
func TestDescribe(t *testing.T) {
	ctx := context.Background()
	env := map[string]string{"OPENAI_API_KEY": "sk-secret-value"}
	r, err := model.NewResolver(map[string]model.Config{
		"default": {Provider: "openai", Model: "gpt-4.1-mini", APIKeyEnv: "OPENAI_API_KEY"},
		"claude":  {Provider: "anthropic", Model: "claude-sonnet-4-5", APIKeyEnv: "ANTHROPIC_API_KEY"},
		"local":   {Provider: "openai", Model: "qwen2.5:7b", BaseURL: "http://user:pw@127.0.0.1:11434/v1?api-key=k2"},
	}, &model.Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	rep := model.Describe(ctx, r)
	b, _ := json.Marshal(rep)
	for _, secret := range []string{"sk-secret-value", "pw", "k2"} {
		if strings.Contains(string(b), secret) {
			t.Fatalf("the report reveals %q: %s", secret, b)
		}
	}
	if !rep.Configured || rep.Setup != nil || rep.Error != nil || len(rep.Models) != 3 {
		t.Fatalf("report %s", b)
	}
	byAlias := map[string]model.Status{}
	for _, s := range rep.Models {
		byAlias[s.Alias] = s
	}
	if s := byAlias["default"]; s.Model != "gpt-4.1-mini" || s.BaseURL != model.DefaultOpenAIBaseURL || s.KeySet == nil || !*s.KeySet {
		t.Errorf("default: %+v", s)
	}
	if s := byAlias["claude"]; s.BaseURL != model.DefaultAnthropicBaseURL || s.KeySet == nil || *s.KeySet || !s.Caps.Vision {
		t.Errorf("claude (key unset): %+v", s)
	}
	if s := byAlias["local"]; s.BaseURL != "http://127.0.0.1:11434/v1" || s.KeySet != nil || s.APIKeyEnv != "" {
		t.Errorf("local (no key sent): %+v", s)
	}

	none, err := model.NewResolver(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep = model.Describe(ctx, none)
	if rep.Configured || len(rep.Models) != 0 || rep.Setup == nil || rep.Error == nil || rep.Error.Code != switchboard.CodeModelError {
		t.Fatalf("not configured: %+v", rep)
	}
	// The setup the report shows is the snippet the run's error carries.
	if _, err := none.Resolve(ctx, ""); !strings.Contains(err.Error(), rep.Setup.Config) || !strings.Contains(rep.Setup.Config, "apiKeyEnv: OPENAI_API_KEY") {
		t.Errorf("setup %q is not the MODEL_ERROR's snippet: %v", rep.Setup.Config, err)
	}

	// A host's resolver is asked for the default alias.
	host := model.ResolverFunc(func(_ context.Context, alias string) (model.Binding, error) {
		return model.Binding{Alias: alias, Provider: "openai", Model: "in-house"}, nil
	})
	if rep := model.Describe(ctx, host); !rep.Configured || len(rep.Models) != 1 || rep.Models[0].Model != "in-house" || rep.Models[0].Alias != "default" {
		t.Errorf("host resolver: %+v", rep)
	}
}
