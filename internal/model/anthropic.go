package model

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/switchboardhq/switchboard"
)

const (
	// DefaultAnthropicBaseURL is used when a model sets no baseURL.
	DefaultAnthropicBaseURL = "https://api.anthropic.com/"
	// DefaultMaxTokens is sent to Anthropic, which requires max_tokens, when
	// the model config sets none.
	DefaultMaxTokens = 4096
)

// AnthropicOptions configures the Anthropic Messages provider.
type AnthropicOptions struct {
	// BaseURL of the API (without /v1); default DefaultAnthropicBaseURL.
	BaseURL string
	// APIKeyEnv names the variable holding the key.
	APIKeyEnv string
	Options
}

// Anthropic streams Anthropic Messages.
type Anthropic struct {
	client  anthropic.Client
	baseURL string
	keyEnv  string
	lookup  func(string) (string, bool)
}

var _ Provider = (*Anthropic)(nil)

// NewAnthropic returns an Anthropic Messages provider.
func NewAnthropic(o AnthropicOptions) *Anthropic {
	opts := o.Options.withDefaults()
	base := o.BaseURL
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	// The config file is the only source of base URL and key: the SDK's
	// environment autoload (ANTHROPIC_API_KEY, profiles, …) is off.
	c := anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithoutOpenTelemetry(),
		option.WithBaseURL(base),
		option.WithHTTPClient(opts.HTTPClient),
		option.WithMaxRetries(opts.MaxRetries),
	)
	return &Anthropic{client: c, baseURL: base, keyEnv: o.APIKeyEnv, lookup: opts.LookupEnv}
}

// Stream runs one streamed Messages request.
func (p *Anthropic) Stream(ctx context.Context, req Request, emit func(Event)) (Response, error) {
	var reqOpts []option.RequestOption
	if p.keyEnv != "" {
		key, ok := p.lookup(p.keyEnv)
		if !ok || key == "" {
			return Response{}, missingKey(ProviderAnthropic, req.Model, p.keyEnv)
		}
		reqOpts = append(reqOpts, option.WithAPIKey(key))
	}
	params, err := anthropicParams(req)
	if err != nil {
		return Response{}, err
	}
	stream := p.client.Messages.NewStreaming(ctx, params, reqOpts...)
	defer stream.Close()

	a := newAssembler(emit)
	var resp Response
	for stream.Next() {
		ev := stream.Current()
		key := strconv.FormatInt(ev.Index, 10)
		switch ev.Type {
		case "message_start":
			resp.Model = string(ev.Message.Model)
			u := ev.Message.Usage
			resp.Usage.InputTokens = u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
			resp.Usage.CachedInputTokens = u.CacheReadInputTokens
			resp.Usage.OutputTokens = u.OutputTokens
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				a.start(key, ev.ContentBlock.ID, ev.ContentBlock.Name)
			} else if ev.ContentBlock.Type == "text" {
				a.textDelta(ev.ContentBlock.Text)
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				a.textDelta(ev.Delta.Text)
			case "input_json_delta":
				a.args(key, ev.Delta.PartialJSON)
			}
		case "content_block_stop":
			a.end(key)
		case "message_delta":
			if ev.Delta.StopReason != "" {
				resp.Finish = anthropicFinish(string(ev.Delta.StopReason))
			}
			// message_delta usage is cumulative.
			if ev.Usage.OutputTokens > 0 {
				resp.Usage.OutputTokens = ev.Usage.OutputTokens
			}
			if ev.Usage.InputTokens > 0 {
				resp.Usage.InputTokens = ev.Usage.InputTokens + ev.Usage.CacheReadInputTokens + ev.Usage.CacheCreationInputTokens
				resp.Usage.CachedInputTokens = ev.Usage.CacheReadInputTokens
			}
		}
	}
	if err := stream.Err(); err != nil {
		return Response{}, p.error(ctx, req.Model, err)
	}
	a.endAll()
	resp.Message = a.message()
	if resp.Finish == "" {
		resp.Finish = FinishStop
		if len(resp.Message.ToolCalls) > 0 {
			resp.Finish = FinishToolCalls
		}
	}
	return resp, nil
}

func (p *Anthropic) error(ctx context.Context, model string, err error) error {
	var (
		ae *anthropic.Error
		af *apiFailure
	)
	if errors.As(err, &ae) {
		af = &apiFailure{status: ae.StatusCode, message: ae.Message, resp: ae.Response}
		if af.message == "" && ae.Type() != "" {
			af.message = string(ae.Type())
		}
	} else if strings.HasPrefix(err.Error(), "received error while streaming") {
		af = &apiFailure{message: err.Error()}
	}
	return modelError(ctx, ProviderAnthropic, model, p.baseURL, p.keyEnv, af, err)
}

func anthropicFinish(s string) FinishReason {
	switch s {
	case "end_turn", "stop_sequence", "pause_turn":
		return FinishStop
	case "tool_use":
		return FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return FinishLength
	case "refusal":
		return FinishContentFilter
	}
	return FinishOther
}

// anthropicParams translates a neutral request into Messages params. Tool
// results become tool_result blocks of a user turn; consecutive results
// share one turn, as the API requires.
func anthropicParams(req Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(req.Model), MaxTokens: DefaultMaxTokens}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	var system []string
	if req.System != "" {
		system = append(system, req.System)
	}
	var pendingResults []anthropic.ContentBlockParamUnion
	flush := func() {
		if len(pendingResults) > 0 {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(pendingResults...))
			pendingResults = nil
		}
	}
	for _, m := range req.Messages {
		if m.Role != RoleTool {
			flush()
		}
		switch m.Role {
		case RoleSystem:
			system = append(system, m.Content)
		case RoleUser:
			var blocks []anthropic.ContentBlockParamUnion
			for _, img := range m.Images {
				if b, ok := anthropicImage(img.URL); ok {
					blocks = append(blocks, b)
				}
			}
			if m.Content != "" || len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			p.Messages = append(p.Messages, anthropic.NewUserMessage(blocks...))
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				input := json.RawMessage(argsOrEmpty(tc.Args))
				if !json.Valid(input) {
					input = json.RawMessage("{}")
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, input, tc.Name))
			}
			if len(blocks) == 0 {
				continue
			}
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
		case RoleTool:
			pendingResults = append(pendingResults, anthropic.NewToolResultBlock(m.ToolCallID, m.Content, m.IsError))
		default:
			return p, switchboard.Errorf(switchboard.CodeInvalidInput, "message role %q is not one of system, user, assistant, tool", m.Role)
		}
	}
	flush()
	if len(system) > 0 {
		p.System = []anthropic.TextBlockParam{{Text: strings.Join(system, "\n\n")}}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t)
		if err != nil {
			return p, err
		}
		in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range schema {
			switch k {
			case "type":
			case "properties":
				in.Properties = v
			case "required":
				if rs, ok := v.([]any); ok {
					for _, r := range rs {
						if s, ok := r.(string); ok {
							in.Required = append(in.Required, s)
						}
					}
				}
			default:
				in.ExtraFields[k] = v
			}
		}
		tp := &anthropic.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tp})
	}
	return p, nil
}

// anthropicImage turns a data: or http(s) URL into an image block.
func anthropicImage(u string) (anthropic.ContentBlockParamUnion, bool) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mediaType, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 {
			return anthropic.ContentBlockParamUnion{}, false
		}
		return anthropic.NewImageBlockBase64(mediaType, data), true
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: u}), true
	}
	return anthropic.ContentBlockParamUnion{}, false
}
