package aisdk_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboardhq/switchboard/internal/aguitest"
	"github.com/switchboardhq/switchboard/internal/aisdk"
)

// TestAISDKReadsUIStream serves the sample run translated to the UI
// Message Stream and assembles it with the `ai` package.
func TestAISDKReadsUIStream(t *testing.T) {
	aguitest.Require(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if _, err := aisdk.ParseChatRequest(body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		aisdk.SetUIStreamHeaders(w.Header())
		u := aisdk.NewUIStream("msg-1")
		var buf []byte
		for _, ev := range aguitest.SampleRun() {
			for _, c := range u.Translate(ev) {
				buf, _ = aisdk.AppendChunk(buf, c)
			}
		}
		w.Write(aisdk.AppendDone(buf))
	}))
	defer srv.Close()
	var out struct {
		Header  string            `json:"header"`
		Invalid []json.RawMessage `json:"invalid"`
		Errors  []string          `json:"errors"`
		Message struct {
			ID    string           `json:"id"`
			Parts []map[string]any `json:"parts"`
		} `json:"message"`
	}
	aguitest.Run(t, nil, &out, "aisdk", srv.URL, `{"id":"chat-1","trigger":"submit-message","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"make a task"}]}]}`)
	if out.Header != "v1" || len(out.Invalid) > 0 || len(out.Errors) > 0 {
		t.Fatalf("header %q, invalid chunks %s, errors %v", out.Header, out.Invalid, out.Errors)
	}
	if out.Message.ID != "msg-1" {
		t.Errorf("message id %q", out.Message.ID)
	}
	var kinds []string
	for _, p := range out.Message.Parts {
		k := p["type"].(string)
		if k == "dynamic-tool" {
			k += ":" + p["state"].(string)
		}
		kinds = append(kinds, k)
	}
	if got := strings.Join(kinds, ","); got != "step-start,text,dynamic-tool:output-available,step-start,text" {
		t.Errorf("assembled parts: %s\n%+v", got, out.Message.Parts)
	}
}
