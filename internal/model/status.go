package model

import (
	"context"
	"net/url"

	"github.com/switchboardhq/switchboard"
)

// SetupConfig is a models: section that gets the assistant going. The
// MODEL_ERROR of a daemon without a model and the operator's model status
// (Report.Setup) both show it, so the two cannot drift apart.
const SetupConfig = "models:\n  default:\n    provider: openai            # or anthropic\n    model: gpt-4.1-mini\n" +
	"    baseURL: http://127.0.0.1:11434/v1   # optional: Ollama, vLLM, llama.cpp, a gateway\n" +
	"    apiKeyEnv: OPENAI_API_KEY              # the key is read from this variable"

// Setup says how to configure a model, line by line, for a person to copy.
type Setup struct {
	// Config is a models: section for the config file (SetupConfig).
	Config string `json:"config"`
	// Start is how to start the daemon with it and a hosted key.
	Start string `json:"start"`
	// Local is the same for a local OpenAI-compatible server (Ollama here;
	// llama.cpp and vLLM differ in baseURL), which needs no key.
	Local string `json:"local"`
	// Docs names the page that says more.
	Docs string `json:"docs"`
}

var setup = Setup{
	Config: SetupConfig,
	Start:  "export OPENAI_API_KEY=sk-...\nswitchboard serve --config switchboard.yaml   # with the flags you run it with",
	Local: "# no hosted key: any OpenAI-compatible server with tool calls, e.g. Ollama\n" +
		"models:\n  default: {provider: openai, model: \"qwen2.5:7b\", baseURL: http://127.0.0.1:11434/v1}",
	Docs: "docs/agent.md, \"Configuring a model\"",
}

// Status is one configured model as an operator sees it: never its key,
// only the variable the key is read from and whether that is set now.
type Status struct {
	Alias    string `json:"alias"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// BaseURL is the endpoint requests go to, without user info or query
	// (where a gateway's credentials could hide); empty when unknown (a
	// host's resolver).
	BaseURL   string `json:"baseURL,omitempty"`
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// KeySet says whether $APIKeyEnv is set; absent without apiKeyEnv
	// (no key is sent).
	KeySet *bool `json:"keySet,omitempty"`
	Caps   Caps  `json:"caps"`
}

// Report is whether the assistant has a model: the configured ones, or why
// none and how to configure one.
type Report struct {
	Configured bool `json:"configured"`
	// DefaultAlias is the alias a run that names none uses.
	DefaultAlias string   `json:"defaultAlias"`
	Models       []Status `json:"models"`
	// Error is the MODEL_ERROR a run gets, when not configured.
	Error *switchboard.Error `json:"error,omitempty"`
	Setup *Setup             `json:"setup,omitempty"`
}

// Status lists the configured models, sorted by alias.
func (r *ConfigResolver) Status() []Status {
	out := make([]Status, 0, len(r.bindings))
	for _, b := range r.Bindings() {
		c := r.configs[b.Alias]
		s := statusOf(b)
		s.APIKeyEnv = c.APIKeyEnv
		if s.BaseURL = c.BaseURL; s.BaseURL == "" {
			s.BaseURL = DefaultOpenAIBaseURL
			if c.Provider == ProviderAnthropic {
				s.BaseURL = DefaultAnthropicBaseURL
			}
		}
		s.BaseURL = redactURL(s.BaseURL)
		if c.APIKeyEnv != "" {
			v, ok := r.lookup(c.APIKeyEnv)
			set := ok && v != ""
			s.KeySet = &set
		}
		out = append(out, s)
	}
	return out
}

func statusOf(b Binding) Status {
	return Status{Alias: b.Alias, Provider: b.Provider, Model: b.Model, Caps: b.Caps}
}

// redactURL drops the parts of an endpoint that may carry a secret.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// Describe reports the models r offers. A ConfigResolver lists its
// aliases; any other resolver (a host's own) is asked for the default
// alias, the one runs use.
func Describe(ctx context.Context, r Resolver) Report {
	rep := Report{DefaultAlias: DefaultAlias, Models: []Status{}}
	if cr, ok := r.(*ConfigResolver); ok {
		rep.Models = cr.Status()
		rep.Configured = len(rep.Models) > 0
		if !rep.Configured {
			rep.Error, rep.Setup = ErrNotConfigured(), &setup
		}
		return rep
	}
	b, err := r.Resolve(ctx, DefaultAlias)
	if err != nil {
		rep.Error = switchboard.AsError(err)
		if rep.Error.Message == ErrNotConfigured().Message {
			rep.Setup = &setup
		}
		return rep
	}
	rep.Configured, rep.Models = true, []Status{statusOf(b)}
	return rep
}
