package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/daemon"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestReadyzFollowsTheStore: /readyz is 200 while the store answers and
// 503 UNAVAILABLE once it does not, while /healthz (liveness) stays 200.
func TestReadyzFollowsTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sb.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(ctx, daemon.Options{Store: st, AdminToken: restartToken})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	srv := httptest.NewServer(d.Handler())
	defer srv.Close()
	get := func(path string) (int, switchboard.ErrorEnvelope) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var env switchboard.ErrorEnvelope
		_ = json.NewDecoder(resp.Body).Decode(&env)
		return resp.StatusCode, env
	}
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Fatalf("readyz with a live store: %d", code)
	}
	st.Close()
	code, env := get("/readyz")
	if code != http.StatusServiceUnavailable || env.Error == nil || env.Error.Code != switchboard.CodeUnavailable {
		t.Fatalf("readyz with a closed store: %d %+v", code, env.Error)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("healthz is liveness and should stay 200: %d", code)
	}
}
