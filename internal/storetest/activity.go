package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchboardhq/switchboard"
)

func listAll(t *testing.T, s switchboard.Store) []switchboard.ActivityEntry {
	t.Helper()
	var all []switchboard.ActivityEntry
	for after := int64(0); ; {
		page, err := s.ActivityList(context.Background(), switchboard.ActivityFilter{AfterID: after, Limit: 1000})
		must(t, err)
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].ID
	}
}

func entry(i int) *switchboard.ActivityEntry {
	return &switchboard.ActivityEntry{
		Ts:     base.Add(time.Duration(i) * time.Minute),
		Actor:  []string{"alice", "bob"}[i%2],
		Verb:   []string{"tool.call", "approval.decide", "tool.register"}[i%3],
		Target: fmt.Sprintf("target-%d", i),
	}
}

func testActivityChain(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	var appended []switchboard.ActivityEntry
	for i := range 5 {
		e := entry(i)
		if i%2 == 0 {
			e.Provenance = json.RawMessage(fmt.Sprintf(`{"invocationId":"inv-%d"}`, i))
			e.Reversal = json.RawMessage(`{"tool":"orders.unrefund","input":{"id":1}}`)
			e.Details = json.RawMessage(`{"diff":[{"op":"replace","path":"/description"}]}`)
		}
		must(t, s.ActivityAppend(ctx, e))
		if e.ID == 0 || e.Hash == "" {
			t.Fatalf("append %d: id %d hash %q not assigned", i, e.ID, e.Hash)
		}
		appended = append(appended, *e)
	}
	if appended[0].PrevHash != "" {
		t.Fatalf("genesis entry has prevHash %q, want empty", appended[0].PrevHash)
	}
	if err := verifyChain(appended); err != nil {
		t.Fatal(err)
	}
	got := listAll(t, s)
	if diff := cmp.Diff(appended, got); diff != "" {
		t.Fatalf("listed entries differ from appended (-appended +listed):\n%s", diff)
	}
	if err := verifyChain(got); err != nil {
		t.Fatal(err)
	}
	// The verifier is not vacuous: an edit behind the store's back shows.
	got[2].Target = "edited"
	if verifyChain(got) == nil {
		t.Fatal("verifyChain accepted an edited entry")
	}

	e := &switchboard.ActivityEntry{Actor: "alice", Verb: "stamp", Target: "zero ts"}
	must(t, s.ActivityAppend(ctx, e))
	if e.Ts.IsZero() {
		t.Fatal("an entry appended with a zero Ts was not stamped")
	}
	if err := verifyChain(listAll(t, s)); err != nil {
		t.Fatal(err)
	}
}

// testActivityConcurrentAppend: concurrent appends neither fork the chain
// nor share an ID.
func testActivityConcurrentAppend(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	const writers, each = 8, 8
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make(chan error, writers*each)
	)
	for w := range writers {
		wg.Go(func() {
			<-start
			last := int64(0)
			for i := range each {
				e := entry(w*each + i)
				e.Actor = fmt.Sprintf("writer-%d", w)
				if err := s.ActivityAppend(ctx, e); err != nil {
					errs <- err
					return
				}
				if e.ID <= last {
					errs <- fmt.Errorf("writer %d: id %d after %d", w, e.ID, last)
				}
				last = e.ID
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all := listAll(t, s)
	if len(all) != writers*each {
		t.Fatalf("listed %d entries, want %d", len(all), writers*each)
	}
	if err := verifyChain(all); err != nil {
		t.Fatal(err)
	}
}

func testActivityFilters(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	var all []switchboard.ActivityEntry
	for i := range 10 {
		e := entry(i)
		must(t, s.ActivityAppend(ctx, e))
		all = append(all, *e)
	}
	pick := func(keep func(switchboard.ActivityEntry) bool) []switchboard.ActivityEntry {
		out := []switchboard.ActivityEntry{}
		for _, e := range all {
			if keep(e) {
				out = append(out, e)
			}
		}
		return out
	}
	since := base.Add(5 * time.Minute)
	for _, c := range []struct {
		name string
		f    switchboard.ActivityFilter
		want []switchboard.ActivityEntry
	}{
		{"all", switchboard.ActivityFilter{}, all},
		{"actor", switchboard.ActivityFilter{Actor: "alice"}, pick(func(e switchboard.ActivityEntry) bool { return e.Actor == "alice" })},
		{"verb", switchboard.ActivityFilter{Verb: "tool.call"}, pick(func(e switchboard.ActivityEntry) bool { return e.Verb == "tool.call" })},
		{"actor and verb", switchboard.ActivityFilter{Actor: "bob", Verb: "tool.call"},
			pick(func(e switchboard.ActivityEntry) bool { return e.Actor == "bob" && e.Verb == "tool.call" })},
		{"since is inclusive", switchboard.ActivityFilter{Since: since}, pick(func(e switchboard.ActivityEntry) bool { return !e.Ts.Before(since) })},
		{"after id", switchboard.ActivityFilter{AfterID: all[6].ID}, all[7:]},
		{"after the last", switchboard.ActivityFilter{AfterID: all[9].ID}, []switchboard.ActivityEntry{}},
		{"limit", switchboard.ActivityFilter{Limit: 3}, all[:3]},
		{"filters and limit", switchboard.ActivityFilter{Actor: "alice", AfterID: all[1].ID, Limit: 2}, []switchboard.ActivityEntry{all[2], all[4]}},
		{"nothing matches", switchboard.ActivityFilter{Actor: "carol"}, []switchboard.ActivityEntry{}},
	} {
		got, err := s.ActivityList(ctx, c.f)
		must(t, err)
		if got == nil {
			t.Fatalf("%s: ActivityList returned nil, want an empty slice", c.name)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Fatalf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	// Paging with the cursor visits every entry once, in order.
	var paged []switchboard.ActivityEntry
	for after := int64(0); ; {
		page, err := s.ActivityList(ctx, switchboard.ActivityFilter{AfterID: after, Limit: 3})
		must(t, err)
		if len(page) == 0 {
			break
		}
		if len(page) > 3 {
			t.Fatalf("page of %d entries exceeds the limit 3", len(page))
		}
		paged = append(paged, page...)
		after = page[len(page)-1].ID
	}
	if diff := cmp.Diff(all, paged); diff != "" {
		t.Fatalf("paged (-want +got):\n%s", diff)
	}
}

func testActivityDefaultLimit(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	for i := range 101 {
		must(t, s.ActivityAppend(ctx, entry(i)))
	}
	for _, c := range []struct{ limit, want int }{{0, 100}, {-1, 100}, {5000, 101}} {
		got, err := s.ActivityList(ctx, switchboard.ActivityFilter{Limit: c.limit})
		must(t, err)
		if len(got) != c.want {
			t.Fatalf("limit %d listed %d entries, want %d", c.limit, len(got), c.want)
		}
	}
}

// testActivityJSONRoundTrip: hashed JSON must come back byte for byte
// (spacing, key order, escapes), or the chain would not verify.
func testActivityJSONRoundTrip(t *testing.T, s switchboard.Store) {
	e := entry(0)
	e.Provenance = json.RawMessage("{ \"z\" : 1,\"a\":[ 1, 2.0 ] ,\n\"s\":\"<&>\\u00e9\"}")
	e.Reversal = json.RawMessage(`null`)
	e.Details = json.RawMessage(`[3, 2,1]`)
	want := *e
	must(t, s.ActivityAppend(context.Background(), e))
	got := listAll(t, s)
	if len(got) != 1 {
		t.Fatalf("listed %d entries, want 1", len(got))
	}
	for _, c := range []struct {
		name      string
		want, got json.RawMessage
	}{
		{"provenance", want.Provenance, got[0].Provenance},
		{"reversal", want.Reversal, got[0].Reversal},
		{"details", want.Details, got[0].Details},
	} {
		if string(c.want) != string(c.got) {
			t.Fatalf("%s: stored %q, read back %q", c.name, c.want, c.got)
		}
	}
	if err := verifyChain(got); err != nil {
		t.Fatal(err)
	}
}

func testActivityTimePrecision(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	ts := time.Date(2026, 11, 30, 7, 8, 9, 987654321, time.FixedZone("UTC+5", 5*3600))
	e := &switchboard.ActivityEntry{Ts: ts, Actor: "alice", Verb: "v", Target: "t"}
	must(t, s.ActivityAppend(ctx, e))
	if !e.Ts.Equal(micro(ts)) || e.Ts.Location() != time.UTC {
		t.Fatalf("appended Ts %v, want %v in UTC", e.Ts, micro(ts))
	}
	got := listAll(t, s)
	if len(got) != 1 || !got[0].Ts.Equal(e.Ts) || got[0].Ts.Location() != time.UTC {
		t.Fatalf("listed %v, want one entry at %v UTC", got, e.Ts)
	}
	if err := verifyChain(got); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		since time.Time
		want  int
	}{
		{e.Ts, 1}, {e.Ts.Add(-time.Microsecond), 1}, {e.Ts.Add(-time.Nanosecond), 1},
		// Since is exact: an entry at .987654 is before .9876545.
		{e.Ts.Add(500 * time.Nanosecond), 0}, {e.Ts.Add(time.Microsecond), 0},
	} {
		page, err := s.ActivityList(ctx, switchboard.ActivityFilter{Since: c.since})
		must(t, err)
		if len(page) != c.want {
			t.Fatalf("since %v listed %d, want %d", c.since, len(page), c.want)
		}
	}
}

// testActivityRejects: invalid JSON is refused and burns no ID.
func testActivityRejects(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	for _, e := range []*switchboard.ActivityEntry{
		{Actor: "a", Verb: "v", Provenance: json.RawMessage(`{`)},
		{Actor: "a", Verb: "v", Reversal: json.RawMessage(`nope`)},
		{Actor: "a", Verb: "v", Details: json.RawMessage(`[1,]`)},
	} {
		wantCode(t, s.ActivityAppend(ctx, e), switchboard.CodeInvalidInput)
		if e.ID != 0 || e.Hash != "" {
			t.Fatalf("a refused entry was changed: id %d hash %q", e.ID, e.Hash)
		}
	}
	e := entry(0)
	must(t, s.ActivityAppend(ctx, e))
	if e.PrevHash != "" {
		t.Fatalf("first accepted entry has prevHash %q; a refused append left a row", e.PrevHash)
	}
	if got := listAll(t, s); len(got) != 1 {
		t.Fatalf("listed %d entries, want 1", len(got))
	}
}

// testCancelled: a cancelled context is reported as CANCELLED and writes
// nothing.
func testCancelled(t *testing.T, s switchboard.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rev := revision(t, s)
	wantCode(t, s.ToolPut(ctx, switchboard.SourceCore, []switchboard.Tool{tool("a")}), switchboard.CodeCancelled)
	e := entry(0)
	wantCode(t, s.ActivityAppend(ctx, e), switchboard.CodeCancelled)
	if e.ID != 0 {
		t.Fatalf("cancelled append assigned id %d", e.ID)
	}
	if got := revision(t, s); got != rev {
		t.Fatalf("cancelled put moved the revision %d -> %d", rev, got)
	}
	if got := listAll(t, s); len(got) != 0 {
		t.Fatalf("cancelled append left %d entries", len(got))
	}
}

// testClosed: Close is idempotent and a closed store answers every method
// with UNAVAILABLE (valid arguments, so no method may fail on them first).
func testClosed(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	must(t, s.Close())
	must(t, s.Close())
	inv := invocation("x", switchboard.StatusPending)
	cause := switchboard.Errorf(switchboard.CodeUnavailable, "restart")
	tool := switchboard.Tool{Name: "a", InputSchema: json.RawMessage(`{}`)}
	job := switchboard.Job{ID: "j", Status: switchboard.JobRunning, CreatedAt: base}
	approval := switchboard.ApprovalRequest{ID: "a", InvocationID: "x", Status: switchboard.ApprovalPending, CreatedAt: base, ExpiresAt: base}
	calls := map[string]func() error{
		"ToolPut":          func() error { return s.ToolPut(ctx, switchboard.SourceCore, []switchboard.Tool{tool}) },
		"ToolDelete":       func() error { return s.ToolDelete(ctx, switchboard.SourceCore, "a") },
		"ToolList":         func() error { _, err := s.ToolList(ctx); return err },
		"CatalogRevision":  func() error { _, err := s.CatalogRevision(ctx); return err },
		"InvocationCreate": func() error { return s.InvocationCreate(ctx, inv) },
		"InvocationGet":    func() error { _, err := s.InvocationGet(ctx, "x"); return err },
		"InvocationUpdate": func() error { _, err := s.InvocationUpdate(ctx, inv, switchboard.InFlight...); return err },
		"InvocationFailInFlight": func() error {
			_, err := s.InvocationFailInFlight(ctx, base, func(switchboard.Invocation) (*switchboard.Error, *switchboard.ActivityEntry) { return cause, nil })
			return err
		},
		"InvocationFinish": func() error {
			_, err := s.InvocationFinish(ctx, inv, entry(0), switchboard.InFlight...)
			return err
		},
		"InvocationCreateFinished": func() error {
			done := inv
			done.Status = switchboard.StatusSucceeded
			return s.InvocationCreateFinished(ctx, done, entry(0))
		},
		"InvocationList": func() error { _, err := s.InvocationList(ctx, switchboard.InvocationFilter{}); return err },
		"SessionCreate":  func() error { return s.SessionCreate(ctx, switchboard.Session{ID: "s"}) },
		"SessionGet":     func() error { _, err := s.SessionGet(ctx, "s"); return err },
		"SessionClose":   func() error { return s.SessionClose(ctx, "s", base) },
		"SessionAdvertise": func() error {
			return s.SessionAdvertise(ctx, "s", []switchboard.Tool{tool}, base)
		},
		"SessionReport": func() error { return s.SessionReport(ctx, "s", switchboard.TabReport{}, base) },
		"SessionStream": func() error { return s.SessionStream(ctx, "s", "r", true, base) },
		"SessionList":   func() error { _, err := s.SessionList(ctx, switchboard.SessionFilter{}); return err },
		"SettingGet":    func() error { _, err := s.SettingGet(ctx, "k"); return err },
		"SettingPut":    func() error { return s.SettingPut(ctx, "k", json.RawMessage(`{}`), base) },
		"SearchExampleAdd": func() error {
			return s.SearchExampleAdd(ctx, switchboard.SearchExample{Tool: "t", Query: "q", Caller: "c"}, 0, 0)
		},
		"SearchExampleList":   func() error { _, err := s.SearchExampleList(ctx, ""); return err },
		"SearchExampleDelete": func() error { _, err := s.SearchExampleDelete(ctx, "t"); return err },
		"SearchExampleDeleteInvocation": func() error {
			_, err := s.SearchExampleDeleteInvocation(ctx, "i")
			return err
		},
		"SearchExampleExpire": func() error { _, err := s.SearchExampleExpire(ctx, base, 1); return err },
		"QuotaAdd": func() error {
			_, _, err := s.QuotaAdd(ctx, "agent:a", "2026-01-01", switchboard.QuotaUsage{Calls: 1}, switchboard.QuotaUsage{})
			return err
		},
		"QuotaGet":       func() error { _, err := s.QuotaGet(ctx, "agent:a", "2026-01-01"); return err },
		"QuotaList":      func() error { _, err := s.QuotaList(ctx, "2026-01-01", 1); return err },
		"QuotaExpire":    func() error { _, err := s.QuotaExpire(ctx, "2026-01-01", 1); return err },
		"ActivityAppend": func() error { return s.ActivityAppend(ctx, entry(0)) },
		"ActivityList":   func() error { _, err := s.ActivityList(ctx, switchboard.ActivityFilter{}); return err },
		"ActivityHead":   func() error { _, err := s.ActivityHead(ctx); return err },
		"ChatGet":        func() error { _, err := s.ChatGet(ctx, "c"); return err },
		"ChatPut": func() error {
			_, err := s.ChatPut(ctx, switchboard.ChatHistory{SessionID: "c", Messages: json.RawMessage(`[]`)})
			return err
		},
		"PanelInstancePut": func() error {
			_, err := s.PanelInstancePut(ctx, switchboard.PanelInstance{ID: "p", SessionID: "s", Version: 1, Doc: json.RawMessage(`{}`)}, 0)
			return err
		},
		"PanelInstanceGet":           func() error { _, err := s.PanelInstanceGet(ctx, "p"); return err },
		"PanelInstanceList":          func() error { _, err := s.PanelInstanceList(ctx, "s"); return err },
		"PanelInstanceDelete":        func() error { return s.PanelInstanceDelete(ctx, "p") },
		"PanelInstanceDeleteSession": func() error { _, err := s.PanelInstanceDeleteSession(ctx, "s"); return err },
		"PanelRegistrationPut": func() error {
			return s.PanelRegistrationPut(ctx, []switchboard.PanelRegistration{{Kind: "panel", Name: "p", Definition: json.RawMessage(`{}`)}}, base)
		},
		"PanelRegistrationDelete": func() error { return s.PanelRegistrationDelete(ctx, "panel", "p") },
		"PanelRegistrationList":   func() error { _, err := s.PanelRegistrationList(ctx); return err },
		"TokenCreate": func() error {
			return s.TokenCreate(ctx, switchboard.AgentToken{ID: "t", Agent: "a", Hash: "h", CreatedAt: base})
		},
		"TokenGet":    func() error { _, err := s.TokenGet(ctx, "t"); return err },
		"TokenList":   func() error { _, err := s.TokenList(ctx); return err },
		"TokenRevoke": func() error { _, err := s.TokenRevoke(ctx, "t", base); return err },
		"SigningKeyCreate": func() error {
			return s.SigningKeyCreate(ctx, switchboard.SigningKey{ID: "k", Algorithm: "ES256", Private: []byte{1}, CreatedAt: base})
		},
		"SigningKeyList":   func() error { _, err := s.SigningKeyList(ctx, base); return err },
		"SigningKeyDelete": func() error { _, err := s.SigningKeyDelete(ctx, base); return err },
		"OAuthPut": func() error {
			return s.OAuthPut(ctx, switchboard.OAuthRecord{Kind: "grant", ID: "g", CreatedAt: base})
		},
		"OAuthGet":           func() error { _, err := s.OAuthGet(ctx, "grant", "g"); return err },
		"OAuthUpdate":        func() error { return s.OAuthUpdate(ctx, "grant", "g", "", nil) },
		"OAuthUse":           func() error { _, err := s.OAuthUse(ctx, "code", "c", base); return err },
		"OAuthRevoke":        func() error { _, err := s.OAuthRevoke(ctx, "grant", "g", base); return err },
		"OAuthList":          func() error { _, err := s.OAuthList(ctx, "grant", ""); return err },
		"OAuthDeleteExpired": func() error { _, err := s.OAuthDeleteExpired(ctx, base); return err },
		"ApprovalCreate":     func() error { return s.ApprovalCreate(ctx, approval) },
		"ApprovalGet":        func() error { _, err := s.ApprovalGet(ctx, "a"); return err },
		"ApprovalList":       func() error { _, err := s.ApprovalList(ctx, switchboard.ApprovalFilter{}); return err },
		"ApprovalConsume":    func() error { _, err := s.ApprovalConsume(ctx, "a", base); return err },
		"ApprovalDecide": func() error {
			d := approval
			d.Status = switchboard.ApprovalApproved
			_, err := s.ApprovalDecide(ctx, d)
			return err
		},
		"ApprovalCancelPending": func() error {
			_, err := s.ApprovalCancelPending(ctx, base, "restart")
			return err
		},
		"JobCreate":      func() error { return s.JobCreate(ctx, job) },
		"JobGet":         func() error { _, err := s.JobGet(ctx, "j"); return err },
		"JobUpdate":      func() error { _, err := s.JobUpdate(ctx, job, switchboard.JobRunning); return err },
		"JobFailRunning": func() error { _, err := s.JobFailRunning(ctx, base, cause); return err },
		"JobList":        func() error { _, err := s.JobList(ctx, switchboard.JobFilter{}); return err },
		"IdempotencyClaim": func() error {
			r := switchboard.IdempotencyRecord{Scope: "s", Key: "k", Digest: "d", InvocationID: "x", CreatedAt: base}
			_, _, err := s.IdempotencyClaim(ctx, r, base, invocation("x", switchboard.StatusDispatched))
			return err
		},
		"IdempotencyGet":     func() error { _, err := s.IdempotencyGet(ctx, "s", "k"); return err },
		"IdempotencyRelease": func() error { return s.IdempotencyRelease(ctx, "s", "k", "x") },
		"IdempotencyReleaseOrphans": func() error {
			_, err := s.IdempotencyReleaseOrphans(ctx)
			return err
		},
		"ReplicaRegister": func() error {
			return s.ReplicaRegister(ctx, switchboard.Replica{ID: "r", Name: "n", StartedAt: base})
		},
		"ReplicaHeartbeat":  func() error { _, err := s.ReplicaHeartbeat(ctx, "r", base); return err },
		"ReplicaStop":       func() error { return s.ReplicaStop(ctx, "r", base) },
		"ReplicaList":       func() error { _, err := s.ReplicaList(ctx); return err },
		"ReplicaClaim":      func() error { _, err := s.ReplicaClaim(ctx, "r", "q", 0, base); return err },
		"ReplicaDelete":     func() error { return s.ReplicaDelete(ctx, "r") },
		"InvocationAdopt":   func() error { _, err := s.InvocationAdopt(ctx, "r", "q"); return err },
		"InvocationExpire":  func() error { _, err := s.InvocationExpire(ctx, base, 1); return err },
		"IdempotencyExpire": func() error { _, err := s.IdempotencyExpire(ctx, base, 1); return err },
		"AgentPut":          func() error { return s.AgentPut(ctx, agentRecord("agt", "r", 0)) },
		"AgentGet":          func() error { _, err := s.AgentGet(ctx, "agt"); return err },
		"AgentList":         func() error { _, err := s.AgentList(ctx, switchboard.AgentFilter{}); return err },
		"AgentTouch":        func() error { _, err := s.AgentTouch(ctx, "agt", base); return err },
		"AgentPrune":        func() error { _, err := s.AgentPrune(ctx, 1); return err },
		"RunCreate":         func() error { return s.RunCreate(ctx, runRecord("r", "q", base)) },
		"RunAppend":         func() error { return s.RunAppend(ctx, runRecord("r", "q", base), runEvents(0, 1)) },
		"RunGet":            func() error { _, err := s.RunGet(ctx, "r"); return err },
		"RunEventList":      func() error { _, err := s.RunEventList(ctx, "r", 0, 1); return err },
		"RunList":           func() error { _, err := s.RunList(ctx, switchboard.RunFilter{}); return err },
		"TaskCreate": func() error {
			return s.TaskCreate(ctx, switchboard.Task{ID: "t", Owner: "user:a", Status: switchboard.TaskSubmitted})
		},
		"TaskGet":    func() error { _, err := s.TaskGet(ctx, "t"); return err },
		"TaskUpdate": func() error { _, err := s.TaskUpdate(ctx, switchboard.Task{ID: "t", Revision: 1}); return err },
		"TaskList":   func() error { _, err := s.TaskList(ctx, switchboard.TaskFilter{}); return err },
		"RunFailInFlight": func() error {
			_, err := s.RunFailInFlight(ctx, []string{"q"}, func(r switchboard.RunRecord) (switchboard.RunRecord, []byte) { return r, []byte(`{}`) })
			return err
		},
		"RunExpire": func() error { _, err := s.RunExpire(ctx, base, 1); return err },
	}
	// A method added to the port must be added here too.
	port := reflect.TypeFor[switchboard.Store]()
	for i := range port.NumMethod() {
		if m := port.Method(i).Name; m != "Close" && calls[m] == nil {
			t.Errorf("testClosed does not call Store.%s", m)
		}
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) { wantCode(t, call(), switchboard.CodeUnavailable) })
	}
}
