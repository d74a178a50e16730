package storetest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/switchboardhq/switchboard"
)

// testPanelInstances checks panel instances: insert, get, list in seq order
// per session, the version compare-and-swap (a stale writer gets CONFLICT
// with the current instance and changes nothing), the doc kept byte for
// byte, deletes, and refusal of bad input.
func testPanelInstances(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	if _, err := s.PanelInstanceGet(ctx, "pi_1"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Fatalf("get before put: %v", err)
	}
	doc := json.RawMessage(`{"spec": {"v":1}, "values":{"p":{"name":"Apollo"}}}`)
	p, err := s.PanelInstancePut(ctx, switchboard.PanelInstance{ID: "pi_1", SessionID: "s1", Seq: 20, Version: 1, Doc: doc, UpdatedAt: base}, 0)
	must(t, err)
	if p.Version != 1 || string(p.Doc) != string(doc) || !p.UpdatedAt.Equal(micro(base)) {
		t.Errorf("put returned %+v", p)
	}
	_, err = s.PanelInstancePut(ctx, switchboard.PanelInstance{ID: "pi_1", SessionID: "s1", Seq: 21, Version: 1, Doc: doc}, 0)
	wantCode(t, err, switchboard.CodeConflict)
	must2 := func(id, session string, seq int64) {
		_, err := s.PanelInstancePut(ctx, switchboard.PanelInstance{ID: id, SessionID: session, Seq: seq, Version: 1, Doc: json.RawMessage(`{}`)}, 0)
		must(t, err)
	}
	must2("pi_0", "s1", 10)
	must2("pi_2", "s1", 30)
	must2("pi_x", "s2", 5)

	// A write names the version it replaces; the update keeps seq.
	doc2 := json.RawMessage(`{"values":{"p":{"name":"Apollo 2"}}}`)
	p, err = s.PanelInstancePut(ctx, switchboard.PanelInstance{ID: "pi_1", SessionID: "s1", Version: 2, Doc: doc2, UpdatedAt: base.Add(1)}, 1)
	must(t, err)
	if p.Seq != 20 || p.Version != 2 {
		t.Errorf("update returned %+v", p)
	}
	// A stale writer (it read version 1) is refused with the current one.
	cur, err := s.PanelInstancePut(ctx, switchboard.PanelInstance{ID: "pi_1", SessionID: "s1", Version: 2, Doc: doc}, 1)
	wantCode(t, err, switchboard.CodeConflict)
	if cur.Version != 2 || string(cur.Doc) != string(doc2) {
		t.Errorf("conflict returned %+v (%s), want the stored version 2", cur, cur.Doc)
	}
	got, err := s.PanelInstanceGet(ctx, "pi_1")
	must(t, err)
	if got.Version != 2 || string(got.Doc) != string(doc2) || got.SessionID != "s1" || got.Seq != 20 {
		t.Errorf("get %+v (%s)", got, got.Doc)
	}
	_, err = s.PanelInstancePut(ctx, switchboard.PanelInstance{ID: "pi_nope", SessionID: "s1", Version: 2, Doc: doc}, 1)
	wantCode(t, err, switchboard.CodeNotFound)

	list, err := s.PanelInstanceList(ctx, "s1")
	must(t, err)
	var ids []string
	for _, p := range list {
		ids = append(ids, p.ID)
	}
	if len(ids) != 3 || ids[0] != "pi_0" || ids[1] != "pi_1" || ids[2] != "pi_2" {
		t.Errorf("list of s1: %v, want [pi_0 pi_1 pi_2] (seq order)", ids)
	}

	// Racing writers of one version: exactly one wins.
	var wg sync.WaitGroup
	wins := make(chan int, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.PanelInstancePut(ctx, switchboard.PanelInstance{ID: "pi_1", SessionID: "s1", Version: 3, Doc: json.RawMessage(`{"w":` + string(rune('0'+i)) + `}`)}, 2)
			if err == nil {
				wins <- i
			} else if switchboard.CodeOf(err) != switchboard.CodeConflict {
				t.Errorf("racing put: %v", err)
			}
		}()
	}
	wg.Wait()
	close(wins)
	if n := len(wins); n != 1 {
		t.Errorf("%d racing writers of version 2 won, want 1", n)
	}

	for _, bad := range []struct {
		p    switchboard.PanelInstance
		prev int64
	}{
		{switchboard.PanelInstance{SessionID: "s1", Version: 1, Doc: doc}, 0},
		{switchboard.PanelInstance{ID: "pi_9", Version: 1, Doc: doc}, 0},
		{switchboard.PanelInstance{ID: "pi_9", SessionID: "s1", Version: 1, Doc: json.RawMessage(`{`)}, 0},
		{switchboard.PanelInstance{ID: "pi_9", SessionID: "s1", Version: 1}, 0},
		{switchboard.PanelInstance{ID: "pi_1", SessionID: "s1", Version: 3, Doc: doc}, 3},
	} {
		_, err := s.PanelInstancePut(ctx, bad.p, bad.prev)
		wantCode(t, err, switchboard.CodeInvalidInput)
	}

	must(t, s.PanelInstanceDelete(ctx, "pi_0"))
	must(t, s.PanelInstanceDelete(ctx, "pi_0")) // twice is once
	if _, err := s.PanelInstanceGet(ctx, "pi_0"); switchboard.CodeOf(err) != switchboard.CodeNotFound {
		t.Errorf("get after delete: %v", err)
	}
	n, err := s.PanelInstanceDeleteSession(ctx, "s1")
	must(t, err)
	if n != 2 {
		t.Errorf("deleted %d of s1, want 2", n)
	}
	if list, err := s.PanelInstanceList(ctx, "s1"); err != nil || len(list) != 0 {
		t.Errorf("s1 after delete: %v %v", list, err)
	}
	if list, err := s.PanelInstanceList(ctx, "s2"); err != nil || len(list) != 1 {
		t.Errorf("s2 untouched: %v %v", list, err)
	}
}
