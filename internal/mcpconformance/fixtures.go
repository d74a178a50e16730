// Package mcpconformance is the test harness of the MCP conformance suite
// (@modelcontextprotocol/conformance, run by scripts/mcp-conformance.sh):
// the fixtures of the suite's "everything server" and a loopback daemon
// that serves them (cmd/conformance-server). It is not part of the
// switchboard binary.
//
// The fixture tools are registered in the registry and served by Go
// functions through the broker, so the suite exercises switchboard's real
// call path: catalog, broker, records, ledger, then mcpserver's content,
// progress, logging, sampling and elicitation relays. Catalog names need a
// namespace ("conformance.test_simple_text"); the suite calls fixed names,
// so each fixture is aliased to its suite name (mcpserver.Options.Aliases).
//
// switchboard has no resources or prompts of its own, so the suite's
// resource, prompt and completion fixtures are added to the SDK server
// directly (mcpserver.Options.Extension, whose type is internal/mcpext).
package mcpconformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/broker"
	"github.com/switchboardhq/switchboard/internal/mcpext"
	"github.com/switchboardhq/switchboard/internal/mcpserver"
	"github.com/switchboardhq/switchboard/internal/registry"
)

const fixtureNamespace = "conformance."

// contentKey marks a tool result made of MCP content blocks (mcpserver
// sends them as content).
const contentKey = "mcp/content"

var emptyObjectSchema = json.RawMessage(`{"type":"object"}`)

// Minimal media of the suite's reference server: a 1×1 PNG and a silent WAV.
const (
	fixturePNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	fixtureWAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

type fixture struct {
	name, description, schema string
	fn                        broker.Func
}

var fixtureJSONSchema2020 = `{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"$defs": {"address": {"$anchor": "addressDef", "type": "object",
		"properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
	"properties": {
		"name": {"type": "string"},
		"address": {"$ref": "#/$defs/address"},
		"contactMethod": {"type": "string", "enum": ["phone", "email"]},
		"phone": {"type": "string"},
		"email": {"type": "string"}
	},
	"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
	"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
	"then": {"required": ["phone"]},
	"else": {"required": ["email"]},
	"additionalProperties": false
}`

func fixtures() []fixture {
	text := func(s string) broker.Func {
		return func(context.Context, json.RawMessage) (any, error) { return s, nil }
	}
	blocks := func(b ...map[string]any) broker.Func {
		return func(context.Context, json.RawMessage) (any, error) { return map[string]any{contentKey: b}, nil }
	}
	image := map[string]any{"type": "image", "data": fixturePNG, "mimeType": "image/png"}
	resource := func(uri string) map[string]any {
		return map[string]any{"type": "resource", "resource": map[string]any{"uri": uri, "mimeType": "text/plain", "text": "This is an embedded resource"}}
	}
	return []fixture{
		{"test_simple_text", "Tests simple text content response", "", text("This is a simple text response for testing.")},
		{"test_image_content", "Tests image content response", "", blocks(image)},
		{"test_audio_content", "Tests audio content response", "", blocks(map[string]any{"type": "audio", "data": fixtureWAV, "mimeType": "audio/wav"})},
		{"test_embedded_resource", "Tests embedded resource content response", "", blocks(resource("test://embedded-resource"))},
		{"test_multiple_content_types", "Tests response with multiple content types (text, image, resource)", "",
			blocks(map[string]any{"type": "text", "text": "This is text content"}, image, resource("test://embedded-in-multiple"))},
		{"test_tool_with_logging", "Tests tool that emits log messages during execution", "", fixtureLogging},
		{"test_tool_with_progress", "Tests tool that reports progress notifications", "", fixtureProgress},
		{"test_error_handling", "Tests error response handling", "", func(context.Context, json.RawMessage) (any, error) {
			return nil, errors.New("this tool intentionally returns an error for testing")
		}},
		{"test_sampling", "Tests server-initiated sampling (LLM completion request)",
			`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`, fixtureSampling},
		{"test_elicitation", "Tests server-initiated elicitation (user input request)",
			`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`,
			fixtureElicit(func(in json.RawMessage) (string, any) {
				var a struct{ Message string }
				_ = json.Unmarshal(in, &a)
				return a.Message, map[string]any{"type": "object", "required": []string{"username"},
					"properties": map[string]any{"username": map[string]any{"type": "string", "description": "Your preferred username"}}}
			})},
		{"test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034", "",
			fixtureElicit(func(json.RawMessage) (string, any) {
				return "Test defaults for primitives", json.RawMessage(`{"type":"object","properties":{
					"name":{"type":"string","description":"User name","default":"John Doe"},
					"age":{"type":"integer","description":"User age","default":30},
					"score":{"type":"number","description":"User score","default":95.5},
					"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
					"verified":{"type":"boolean","description":"Verification status","default":true}}}`)
			})},
		{"test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330", "",
			fixtureElicit(func(json.RawMessage) (string, any) {
				return "Test enum schemas", json.RawMessage(`{"type":"object","properties":{
					"untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
					"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
					"legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
					"untitledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
					"titledMulti":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string","anyOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]}}}}`)
			})},
		{"json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613, SEP-2106)", fixtureJSONSchema2020,
			func(_ context.Context, in json.RawMessage) (any, error) {
				return fmt.Sprintf("JSON Schema 2020-12 tool called with: %s", in), nil
			}},
		{"test_reconnection", "Tests SSE stream disconnection and client reconnection (SEP-1699). Server will close the stream mid-call and send the result after client reconnects.", "", fixtureReconnection},
	}
}

func fixtureLogging(ctx context.Context, _ json.RawMessage) (any, error) {
	if req := mcpext.Request(ctx); req != nil {
		for _, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: msg}); err != nil {
				return nil, err
			}
		}
	}
	return "Tool with logging executed successfully", nil
}

// fixtureProgress reports through switchboard.ReportProgress, the hook any
// Go-function tool uses: the MCP relay does the rest.
func fixtureProgress(ctx context.Context, _ json.RawMessage) (any, error) {
	for _, p := range []float64{0, 50, 100} {
		switchboard.ReportProgress(ctx, switchboard.Progress{Progress: p, Total: 100, Message: fmt.Sprintf("Completed step %.0f of 100", p)})
	}
	return "Tool with progress executed successfully", nil
}

func fixtureSampling(ctx context.Context, in json.RawMessage) (any, error) {
	var a struct{ Prompt string }
	_ = json.Unmarshal(in, &a)
	req := mcpext.Request(ctx)
	if req == nil {
		return nil, switchboard.Errorf(switchboard.CodeUnavailable, "sampling needs an MCP client")
	}
	res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: a.Prompt}}},
		MaxTokens: 100,
	})
	if err != nil {
		return nil, fmt.Errorf("sampling failed: %w", err)
	}
	text := "(non-text response)"
	if tc, ok := res.Content.(*mcp.TextContent); ok {
		text = tc.Text
	}
	return "LLM response: " + text, nil
}

func fixtureElicit(params func(json.RawMessage) (string, any)) broker.Func {
	return func(ctx context.Context, in json.RawMessage) (any, error) {
		req := mcpext.Request(ctx)
		if req == nil {
			return nil, switchboard.Errorf(switchboard.CodeUnavailable, "elicitation needs an MCP client")
		}
		msg, schema := params(in)
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: msg, RequestedSchema: schema})
		if err != nil {
			return nil, fmt.Errorf("elicitation failed: %w", err)
		}
		return fmt.Sprintf("Elicitation result: action=%s, content=%v", res.Action, res.Content), nil
	}
}

func fixtureReconnection(ctx context.Context, _ json.RawMessage) (any, error) {
	if req := mcpext.Request(ctx); req != nil && req.Extra != nil && req.Extra.CloseSSEStream != nil {
		req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
	}
	// The suite's reference server also waits for the client to come back.
	t := time.NewTimer(100 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.", nil
}

// Options returns the MCP options that serve the suite: its tool names as
// aliases, and its resources, prompts, completions and logging.
func Options() mcpserver.Options {
	aliases := map[string]string{}
	for _, f := range fixtures() {
		aliases[fixtureNamespace+f.name] = f.name
	}
	return mcpserver.Options{Aliases: aliases, Extension: &mcpext.Extension{Options: serverOptions, Server: func(srv *mcp.Server) {
		addResources(srv)
		addPrompts(srv)
	}}}
}

// Register declares the fixture tools in the registry and serves them
// through the broker.
func Register(ctx context.Context, reg *registry.Registry, br *broker.Broker) error {
	fx := fixtures()
	tools := make([]switchboard.Tool, len(fx))
	for i, f := range fx {
		name := fixtureNamespace + f.name
		schema := json.RawMessage(f.schema)
		if f.schema == "" {
			schema = emptyObjectSchema
		}
		tools[i] = switchboard.Tool{
			Name: name, Description: f.description, InputSchema: schema,
			Surface: switchboard.SurfaceAPI, Class: switchboard.ClassRead, Binding: &switchboard.Binding{Go: true},
		}
		br.Handle(name, f.fn)
	}
	if _, err := reg.Register(ctx, switchboard.SourceCore, tools); err != nil {
		return fmt.Errorf("register conformance fixtures: %w", err)
	}
	return nil
}

func serverOptions(o *mcp.ServerOptions) {
	o.Capabilities.Logging = &mcp.LoggingCapabilities{}
	o.CompletionHandler = func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	o.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
	o.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
}

func addResources(srv *mcp.Server) {
	png, _ := base64.StdEncoding.DecodeString(fixturePNG)
	textOf := func(mime, text string) mcp.ResourceHandler {
		return func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: mime, Text: text}}}, nil
		}
	}
	srv.AddResource(&mcp.Resource{Name: "static-text", Description: "A static text resource for testing", MIMEType: "text/plain", URI: "test://static-text"},
		textOf("text/plain", "This is the content of the static text resource."))
	srv.AddResource(&mcp.Resource{Name: "static-binary", Description: "A static binary resource (image) for testing", MIMEType: "image/png", URI: "test://static-binary"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "image/png", Blob: png}}}, nil
		})
	srv.AddResource(&mcp.Resource{Name: "watched-resource", Description: "A resource that auto-updates every 3 seconds", MIMEType: "text/plain", URI: "test://watched-resource"},
		textOf("text/plain", "Watched resource content"))
	idRE := regexp.MustCompile(`^test://template/([^/]+)/data$`)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "template", Description: "A resource template with parameter substitution", MIMEType: "application/json", URITemplate: "test://template/{id}/data"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := ""
			if m := idRE.FindStringSubmatch(r.Params.URI); m != nil {
				id = m[1]
			}
			body, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/json", Text: string(body)}}}, nil
		})
}

func addPrompts(srv *mcp.Server) {
	png, _ := base64.StdEncoding.DecodeString(fixturePNG)
	user := func(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }
	srv.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A simple prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A simple test prompt", Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with required arguments",
		Arguments: []*mcp.PromptArgument{{Name: "arg1", Description: "First test argument", Required: true}, {Name: "arg2", Description: "Second test argument", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			text := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", r.Params.Arguments["arg1"], r.Params.Arguments["arg2"])
			return &mcp.GetPromptResult{Description: "A prompt with arguments", Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: text})}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource", Description: "A prompt that includes an embedded resource",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an embedded resource", Messages: []*mcp.PromptMessage{
				user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: r.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}),
				user(&mcp.TextContent{Text: "Please process the embedded resource above."}),
			}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt that includes image content"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an image", Messages: []*mcp.PromptMessage{
				user(&mcp.ImageContent{Data: png, MIMEType: "image/png"}),
				user(&mcp.TextContent{Text: "Please analyze the image above."}),
			}}, nil
		})
}
