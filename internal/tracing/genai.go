package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/switchboardhq/switchboard"
)

// The spans of the GenAI semantic conventions (semconv v1.41, status
// Development) that switchboard records. Attributes are set only on a
// recording span, so with tracing off a span costs its Start and End.

// StartAgent starts the invoke_agent span of one run of the built-in
// agent in the chat (the conversation) it belongs to. The model's
// provider and id are added by AgentModel once resolved.
func StartAgent(ctx context.Context, t trace.Tracer, conversation string) (context.Context, trace.Span) {
	ctx, span := t.Start(ctx, "invoke_agent", trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameInvokeAgent, semconv.GenAIConversationID(conversation))
	}
	return ctx, span
}

// AgentModel records on an invoke_agent span the model its run uses.
func AgentModel(span trace.Span, provider, model string) {
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIProviderNameKey.String(provider), semconv.GenAIRequestModel(model))
	}
}

// StartChat starts the span of one model call: "chat {model}", a client
// span, with the request's provider, model and conversation. Neither the
// prompt nor the tools offered are recorded.
func StartChat(ctx context.Context, t trace.Tracer, provider, model, conversation string) (context.Context, trace.Span) {
	ctx, span := t.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(provider),
			semconv.GenAIRequestModel(model), semconv.GenAIConversationID(conversation))
	}
	return ctx, span
}

// Usage records token counts (of a model call, or a run's total) on span.
func Usage(span trace.Span, input, output int64) {
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIUsageInputTokens(int(input)), semconv.GenAIUsageOutputTokens(int(output)))
	}
}

// ChatResponse records what a model call answered with, its content
// aside: the model that answered (when the provider says) and why it
// stopped.
func ChatResponse(span trace.Span, model, finish string) {
	if !span.IsRecording() {
		return
	}
	if model != "" {
		span.SetAttributes(semconv.GenAIResponseModel(model))
	}
	if finish != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasons(finish))
	}
}

// StartTool starts the execute_tool span of one tool call.
func StartTool(ctx context.Context, t trace.Tracer, tool string) (context.Context, trace.Span) {
	ctx, span := t.Start(ctx, "execute_tool "+tool, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(tool))
	}
	return ctx, span
}

// ToolCall records the invocation id of a tool call, once it has one.
func ToolCall(span trace.Span, invocationID string) {
	if invocationID != "" && span.IsRecording() {
		span.SetAttributes(semconv.GenAIToolCallID(invocationID))
	}
}

// End ends span, marking it failed with err's frozen code as error.type.
// The status description is the code too: an error's message may quote
// the input it refused.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		code := string(switchboard.CodeOf(err))
		span.SetAttributes(ErrorType(code))
		span.SetStatus(codes.Error, code)
	}
	span.End()
}

// ErrorType is the error.type attribute.
func ErrorType(code string) attribute.KeyValue { return semconv.ErrorTypeKey.String(code) }
