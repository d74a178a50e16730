package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/client"
	"github.com/switchboardhq/switchboard/internal/daemon"
)

// serveIn runs `switchboard serve` on a free port over data (with the
// manifest, if any) until the test ends or stop is called.
func serveIn(t *testing.T, data string, args ...string) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serr syncBuffer
	go func() {
		done <- Run(ctx, append([]string{"serve", "--addr", addr, "--data", data}, args...), nil, &bytes.Buffer{}, &serr)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("daemon did not come up: %s", serr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Errorf("serve exited %d: %s", code, serr.String())
				}
			case <-time.After(30 * time.Second):
				t.Error("serve did not shut down")
			}
		})
	}
	t.Cleanup(stop)
	return addr, stop
}

// TestBackupWhileServingThenRestore backs up a data root while calls run,
// restores it into a new data root, and checks that the ledger verifies
// there and that every call acknowledged before the backup began is in
// it. Restoring over the serving data root is refused.
func TestBackupWhileServingThenRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a daemon and makes a thousand calls")
	}
	t.Setenv("SWITCHBOARD_TOKEN", "")
	t.Setenv("SWITCHBOARD_STORE", "")
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(backend.Close)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "notes.yaml")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`tools:
  - name: notes.add
    description: Add a note.
    class: mutate
    inputSchema:
      type: object
      properties:
        n: {type: integer}
    binding:
      http:
        method: POST
        url: %s/notes
`, backend.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	addr, stop := serveIn(t, data, "--manifest", manifest)
	tok, err := daemon.ReadToken(data)
	if err != nil {
		t.Fatal(err)
	}
	cl := client.New(addr, tok, nil)
	ctx := context.Background()

	const calls, workers = 1000, 8
	var (
		mu    sync.Mutex
		acked = map[int]string{} // call number → invocation id, once answered
		wg    sync.WaitGroup
		next  = make(chan int)
	)
	for range workers {
		wg.Go(func() {
			for n := range next {
				res, err := cl.CallTool(ctx, "notes.add", json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), client.CallOptions{})
				if err != nil || res.Status != switchboard.StatusSucceeded {
					t.Errorf("call %d: %v %+v", n, err, res.Error)
					continue
				}
				mu.Lock()
				acked[n] = res.InvocationID
				mu.Unlock()
			}
		})
	}
	backupFile := filepath.Join(dir, "sb.tar.gz")
	var before map[int]string
	for n := range calls {
		next <- n
		if n == calls/2 { // half sent: back up while the rest run
			mu.Lock()
			before = maps.Clone(acked)
			mu.Unlock()
			if code, out, errOut := run(t, "--data", data, "backup", backupFile); code != 0 {
				t.Fatalf("backup: exit %d: %s %s", code, out, errOut)
			}
		}
	}
	close(next)
	wg.Wait()
	if len(before) == 0 {
		t.Fatal("no call was acknowledged before the backup; the test proves nothing")
	}
	if fi, err := os.Stat(backupFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", err, fi)
	}
	if code, _, errOut := run(t, "--data", data, "restore", backupFile); code != 1 || !strings.Contains(errOut, "CONFLICT") || !strings.Contains(errOut, "a daemon is running") {
		t.Fatalf("restore over a serving data root: exit %d: %s", code, errOut)
	}
	stop()

	fresh := filepath.Join(dir, "restored")
	code, out, errOut := run(t, "--data", fresh, "restore", backupFile)
	if code != 0 || !strings.Contains(out, "ledger ok") {
		t.Fatalf("restore: exit %d: %s %s", code, out, errOut)
	}
	addr2, _ := serveIn(t, fresh, "--manifest", manifest)
	if code, out, errOut := run(t, "--addr", addr2, "--data", fresh, "activity", "verify"); code != 0 || !strings.HasPrefix(out, "ok:") {
		t.Fatalf("activity verify after restore: exit %d: %s %s", code, out, errOut)
	}
	tok2, _ := daemon.ReadToken(fresh)
	if tok2 != tok {
		t.Error("the restored admin token differs from the backed-up one")
	}
	cl2 := client.New(addr2, tok2, nil)
	for n, id := range before {
		inv, err := cl2.GetInvocation(ctx, id)
		if err != nil || inv.Status != switchboard.StatusSucceeded {
			t.Fatalf("call %d (%s), acknowledged before the backup: %v %+v", n, id, err, inv.Status)
		}
	}
	t.Logf("%d of %d calls acknowledged before the backup, all restored", len(before), calls)
}
