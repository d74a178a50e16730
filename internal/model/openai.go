package model

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/switchboardhq/switchboard"
)

// DefaultOpenAIBaseURL is used when a model sets no baseURL.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1/"

// OpenAIOptions configures an OpenAI-compatible provider.
type OpenAIOptions struct {
	// BaseURL of the Chat Completions API (…/v1); default DefaultOpenAIBaseURL.
	BaseURL string
	// APIKeyEnv names the variable holding the key; empty sends no key
	// (local servers such as Ollama need none).
	APIKeyEnv string
	Options
}

// OpenAI streams Chat Completions from any OpenAI-compatible server.
type OpenAI struct {
	client  openai.Client
	baseURL string
	keyEnv  string
	lookup  func(string) (string, bool)
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns an OpenAI-compatible provider.
func NewOpenAI(o OpenAIOptions) *OpenAI {
	opts := o.Options.withDefaults()
	base := o.BaseURL
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	// Explicit options override the SDK's environment defaults
	// (OPENAI_BASE_URL, OPENAI_API_KEY): the config file is the only source.
	c := openai.NewClient(
		option.WithBaseURL(base),
		option.WithAPIKey(""),
		option.WithHTTPClient(opts.HTTPClient),
		option.WithMaxRetries(opts.MaxRetries),
	)
	return &OpenAI{client: c, baseURL: base, keyEnv: o.APIKeyEnv, lookup: opts.LookupEnv}
}

// Stream runs one streamed Chat Completion.
func (p *OpenAI) Stream(ctx context.Context, req Request, emit func(Event)) (Response, error) {
	var reqOpts []option.RequestOption
	if p.keyEnv != "" {
		key, ok := p.lookup(p.keyEnv)
		if !ok || key == "" {
			return Response{}, missingKey(ProviderOpenAI, req.Model, p.keyEnv)
		}
		reqOpts = append(reqOpts, option.WithAPIKey(key))
	} else {
		// No key configured: send no Authorization header at all.
		reqOpts = append(reqOpts, option.WithHeaderDel("Authorization"))
	}
	params, err := openAIParams(req)
	if err != nil {
		return Response{}, err
	}
	stream := p.client.Chat.Completions.NewStreaming(ctx, params, reqOpts...)
	defer stream.Close()

	a := newAssembler(emit)
	var resp Response
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Model != "" {
			resp.Model = chunk.Model
		}
		if chunk.JSON.Usage.Valid() {
			resp.Usage = Usage{
				InputTokens:       chunk.Usage.PromptTokens,
				OutputTokens:      chunk.Usage.CompletionTokens,
				CachedInputTokens: chunk.Usage.PromptTokensDetails.CachedTokens,
			}
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 { // we never ask for n > 1
				continue
			}
			a.textDelta(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				key := strconv.FormatInt(tc.Index, 10)
				if tc.Function.Name != "" || tc.ID != "" {
					id := tc.ID
					if id == "" {
						id = "call_" + key
					}
					a.start(key, id, tc.Function.Name)
				}
				a.args(key, tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				resp.Finish = openAIFinish(ch.FinishReason)
				a.endAll()
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

func (p *OpenAI) error(ctx context.Context, model string, err error) error {
	var (
		ae *openai.Error
		se *ssestream.StreamError
		af *apiFailure
	)
	switch {
	case errors.As(err, &ae):
		af = &apiFailure{status: ae.StatusCode, message: ae.Message, resp: ae.Response}
	case errors.As(err, &se):
		af = &apiFailure{message: se.Message}
	}
	return modelError(ctx, ProviderOpenAI, model, p.baseURL, p.keyEnv, af, err)
}

func openAIFinish(s string) FinishReason {
	switch s {
	case "stop":
		return FinishStop
	case "tool_calls", "function_call":
		return FinishToolCalls
	case "length":
		return FinishLength
	case "content_filter":
		return FinishContentFilter
	}
	return FinishOther
}

// openAIParams translates a neutral request into Chat Completions params.
func openAIParams(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if req.MaxTokens > 0 {
		p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			p.Messages = append(p.Messages, openai.SystemMessage(m.Content))
		case RoleUser:
			if len(m.Images) == 0 {
				p.Messages = append(p.Messages, openai.UserMessage(m.Content))
				continue
			}
			parts := []openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(m.Content)}
			for _, img := range m.Images {
				parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: img.URL}))
			}
			p.Messages = append(p.Messages, openai.UserMessage(parts))
		case RoleAssistant:
			am := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" {
				am.Content.OfString = param.NewOpt(m.Content)
			}
			for _, tc := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: argsOrEmpty(tc.Args)},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		case RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return p, switchboard.Errorf(switchboard.CodeInvalidInput, "message role %q is not one of system, user, assistant, tool", m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t)
		if err != nil {
			return p, err
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	return p, nil
}

// schemaMap decodes a tool's raw input schema (default: any object).
func schemaMap(t Tool) (map[string]any, error) {
	if len(t.Schema) == 0 {
		return map[string]any{"type": "object"}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(t.Schema, &m); err != nil {
		return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "input schema of tool %s is not a JSON object: %v", t.Name, err)
	}
	return m, nil
}

// argsOrEmpty keeps a call with no arguments valid JSON on the way back.
func argsOrEmpty(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}
