package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/strictjson"
)

// maxMessageBytes bounds one JSON-RPC message posted to /mcp: the broker's
// input limit (1 MiB by default) plus room for the envelope.
const maxMessageBytes = 8 << 20

// argumentsAt is where a tools/call message holds the tool's input.
const argumentsAt = "/params/arguments"

// strictBody reads a POSTed JSON-RPC message and refuses it unless it is
// strict JSON (internal/strictjson): the SDK's decoder keeps the last of
// duplicate names, so {"name":"a","name":"b"} would call b while a log or
// a proxy reads a. A fault inside params.arguments is the tool input's and
// is left to callTool, which answers it as a tool error
// (SCHEMA_VIOLATION) as every transport does; any other fault is a JSON-RPC
// error naming the pointer. The body is handed on unchanged, and
// returned.
func strictBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil, true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxMessageBytes))
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest,
				switchboard.Errorf(switchboard.CodePayloadTooLarge, "MCP message is larger than %d bytes", maxMessageBytes))
			return nil, false
		}
		writeHTTPError(w, switchboard.Errorf(switchboard.CodeInvalidInput, "read request body: %v", err))
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err := strictjson.Envelope(body, argumentsAt); switchboard.CodeOf(err) == switchboard.CodeInvalidInput {
		writeRPCError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, err)
		return nil, false
	}
	return body, true
}

// writeRPCError answers a message refused before the SDK saw it. Its id is
// null: an ambiguous message has no id one can trust (JSON-RPC 2.0 §5).
func writeRPCError(w http.ResponseWriter, status int, code int64, err error) {
	e := switchboard.AsError(err)
	data := map[string]any{"code": e.Code}
	if d, ok := e.Details.(map[string]any); ok {
		data["pointer"] = d["pointer"]
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": string(e.Code) + ": " + e.Message, "data": data},
	})
}
