package model

import (
	"context"
	"maps"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/switchboardhq/switchboard"
)

// DefaultAlias is the alias used when a run names none.
const DefaultAlias = "default"

// Provider names accepted in Config.Provider.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// Config is one entry of the config file's `models:` map, keyed by alias:
//
//	models:
//	  default:
//	    provider: openai          # openai (any OpenAI-compatible server) | anthropic
//	    model: gpt-4.1-mini
//	    baseURL: http://127.0.0.1:11434/v1   # optional
//	    apiKeyEnv: OPENAI_API_KEY            # read from this variable, never stored
//
// provider, model, baseURL and apiKeyEnv are the pinned fields; caps, price
// and maxTokens are optional refinements.
type Config struct {
	Provider  string `yaml:"provider" json:"provider"`
	Model     string `yaml:"model" json:"model"`
	BaseURL   string `yaml:"baseURL,omitempty" json:"baseURL,omitempty"`
	APIKeyEnv string `yaml:"apiKeyEnv,omitempty" json:"apiKeyEnv,omitempty"`
	// Caps overrides the provider's default capabilities field by field.
	Caps *CapsConfig `yaml:"caps,omitempty" json:"caps,omitempty"`
	// Price enables per-run cost accounting.
	Price *Price `yaml:"price,omitempty" json:"price,omitempty"`
	// MaxTokens bounds each answer; zero means the provider's default.
	MaxTokens int `yaml:"maxTokens,omitempty" json:"maxTokens,omitempty"`
}

// Caps is what a bound model can do. The agent loop reads it: no tools
// means no tool calls are offered, no vision means images are dropped.
type Caps struct {
	Vision        bool `json:"vision"`
	Tools         bool `json:"tools"`
	ContextTokens int  `json:"contextTokens"`
	Streaming     bool `json:"streaming"`
}

// CapsConfig is Caps with every field optional.
type CapsConfig struct {
	Vision        *bool `yaml:"vision,omitempty" json:"vision,omitempty"`
	Tools         *bool `yaml:"tools,omitempty" json:"tools,omitempty"`
	ContextTokens *int  `yaml:"contextTokens,omitempty" json:"contextTokens,omitempty"`
	Streaming     *bool `yaml:"streaming,omitempty" json:"streaming,omitempty"`
}

// Price is what a model costs, in a currency unit per million tokens.
type Price struct {
	InputPerMTok  float64 `yaml:"inputPerMTok" json:"inputPerMTok"`
	OutputPerMTok float64 `yaml:"outputPerMTok" json:"outputPerMTok"`
	// CachedInputPerMTok prices cached input tokens; zero means InputPerMTok.
	CachedInputPerMTok float64 `yaml:"cachedInputPerMTok,omitempty" json:"cachedInputPerMTok,omitempty"`
}

// Cost prices u; cached input tokens are part of InputTokens.
func (p Price) Cost(u Usage) float64 {
	cachedRate := p.CachedInputPerMTok
	if cachedRate == 0 {
		cachedRate = p.InputPerMTok
	}
	fresh := u.InputTokens - u.CachedInputTokens
	return (float64(fresh)*p.InputPerMTok + float64(u.CachedInputTokens)*cachedRate + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}

// Binding is an alias resolved: what the agent loop talks to.
type Binding struct {
	Alias     string   `json:"alias"`
	Provider  string   `json:"provider"`
	Model     string   `json:"model"`
	Caps      Caps     `json:"caps"`
	Price     *Price   `json:"price,omitempty"`
	MaxTokens int      `json:"maxTokens,omitempty"`
	Client    Provider `json:"-"`
}

// Resolver maps an alias to a Binding. Implementations must be safe for
// concurrent use. An unknown alias or a missing configuration is MODEL_ERROR.
type Resolver interface {
	Resolve(ctx context.Context, alias string) (Binding, error)
}

// ResolverFunc adapts a function to a Resolver.
type ResolverFunc func(ctx context.Context, alias string) (Binding, error)

func (f ResolverFunc) Resolve(ctx context.Context, alias string) (Binding, error) {
	return f(ctx, alias)
}

// Options configures the providers a ConfigResolver builds. A nil *Options
// means defaults.
type Options struct {
	// HTTPClient sends model requests (default: http.DefaultClient; model
	// streams are long, so it must not set a short overall Timeout).
	HTTPClient *http.Client
	// LookupEnv reads API keys (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// MaxRetries is how often a failed request (429, 5xx, connection) is
	// retried before streaming starts; zero means DefaultMaxRetries, a
	// negative value means never.
	MaxRetries int
}

// DefaultMaxRetries is the SDKs' retry count for failed requests.
const DefaultMaxRetries = 2

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.LookupEnv == nil {
		c.LookupEnv = os.LookupEnv
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	return c
}

// ConfigResolver resolves aliases from the config file's models map.
type ConfigResolver struct {
	bindings map[string]Binding
	// configs and lookup answer Status (endpoint, key variable, key set).
	configs map[string]Config
	lookup  func(string) (string, bool)
}

var _ Resolver = (*ConfigResolver)(nil)

// NewResolver validates models and builds one provider client per alias.
// An empty map is valid: every Resolve then fails with the message that
// says how to configure a model.
func NewResolver(models map[string]Config, opts *Options) (*ConfigResolver, error) {
	var o Options // the providers apply the defaults
	if opts != nil {
		o = *opts
	}
	r := &ConfigResolver{bindings: make(map[string]Binding, len(models)), configs: maps.Clone(models), lookup: o.LookupEnv}
	if r.lookup == nil {
		r.lookup = os.LookupEnv
	}
	for alias, c := range models {
		b, err := bind(alias, c, o)
		if err != nil {
			return nil, err
		}
		r.bindings[alias] = b
	}
	return r, nil
}

func bind(alias string, c Config, o Options) (Binding, error) {
	bad := func(format string, args ...any) error {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "models.%s: "+format, append([]any{alias}, args...)...)
	}
	if strings.TrimSpace(alias) == "" {
		return Binding{}, switchboard.Errorf(switchboard.CodeInvalidInput, "models: an alias must not be empty")
	}
	if c.Model == "" {
		return Binding{}, bad("model is required (the provider's model id, e.g. gpt-4.1-mini)")
	}
	if c.MaxTokens < 0 {
		return Binding{}, bad("maxTokens must not be negative")
	}
	b := Binding{Alias: alias, Provider: c.Provider, Model: c.Model, Price: c.Price, MaxTokens: c.MaxTokens}
	switch c.Provider {
	case ProviderOpenAI:
		b.Caps = Caps{Tools: true, Streaming: true}
		b.Client = NewOpenAI(OpenAIOptions{BaseURL: c.BaseURL, APIKeyEnv: c.APIKeyEnv, Options: o})
	case ProviderAnthropic:
		b.Caps = Caps{Tools: true, Streaming: true, Vision: true, ContextTokens: 200_000}
		b.Client = NewAnthropic(AnthropicOptions{BaseURL: c.BaseURL, APIKeyEnv: c.APIKeyEnv, Options: o})
	case "":
		return Binding{}, bad("provider is required: openai (any OpenAI-compatible server) or anthropic")
	default:
		return Binding{}, bad("unknown provider %q: use openai (any OpenAI-compatible server) or anthropic", c.Provider)
	}
	if cc := c.Caps; cc != nil {
		if cc.Vision != nil {
			b.Caps.Vision = *cc.Vision
		}
		if cc.Tools != nil {
			b.Caps.Tools = *cc.Tools
		}
		if cc.ContextTokens != nil {
			b.Caps.ContextTokens = *cc.ContextTokens
		}
		if cc.Streaming != nil {
			b.Caps.Streaming = *cc.Streaming
		}
	}
	return b, nil
}

// Resolve returns the binding of alias ("" means DefaultAlias).
func (r *ConfigResolver) Resolve(_ context.Context, alias string) (Binding, error) {
	if alias == "" {
		alias = DefaultAlias
	}
	if len(r.bindings) == 0 {
		return Binding{}, ErrNotConfigured()
	}
	b, ok := r.bindings[alias]
	if !ok {
		return Binding{}, switchboard.Errorf(switchboard.CodeModelError, "no model alias %q is configured; configured aliases: %s", alias, strings.Join(r.Aliases(), ", "))
	}
	return b, nil
}

// Aliases lists the configured aliases, sorted.
func (r *ConfigResolver) Aliases() []string {
	out := make([]string, 0, len(r.bindings))
	for a := range r.bindings {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// Bindings lists every configured binding, sorted by alias.
func (r *ConfigResolver) Bindings() []Binding {
	out := make([]Binding, 0, len(r.bindings))
	for _, a := range r.Aliases() {
		out = append(out, r.bindings[a])
	}
	return slices.Clip(out)
}

// ErrNotConfigured is the MODEL_ERROR of a daemon with no model configured.
func ErrNotConfigured() *switchboard.Error {
	return switchboard.Errorf(switchboard.CodeModelError,
		"no model is configured. Add a models: section to a YAML file and start the daemon with `switchboard serve --config FILE` (a Go program embedding the daemon sets daemon.Options.Models instead), e.g.\n"+SetupConfig)
}
