package storetest_test

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/storetest"
	"github.com/switchboardhq/switchboard/sqlite"
)

// TestFaulty: an injected busy error reaches the caller with its code,
// writes nothing, and the retry goes through to the real store.
func TestFaulty(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "switchboard.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := &storetest.Faulty{Store: s, FailNext: storetest.FailTimes("ActivityAppend", 2, storetest.Busy("ActivityAppend"))}

	for i := range 2 {
		e := &switchboard.ActivityEntry{Actor: "alice", Verb: "v"}
		if err := f.ActivityAppend(ctx, e); switchboard.CodeOf(err) != switchboard.CodeUnavailable {
			t.Fatalf("attempt %d: %v, want UNAVAILABLE", i, err)
		}
		if e.ID != 0 {
			t.Fatalf("attempt %d: failed append assigned id %d", i, e.ID)
		}
	}
	// Other operations pass while appends fail.
	if _, err := f.ActivityList(ctx, switchboard.ActivityFilter{}); err != nil {
		t.Fatal(err)
	}
	e := &switchboard.ActivityEntry{Actor: "alice", Verb: "v"}
	if err := f.ActivityAppend(ctx, e); err != nil {
		t.Fatalf("retry: %v", err)
	}
	got, err := s.ActivityList(ctx, switchboard.ActivityFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != e.ID || got[0].PrevHash != "" {
		t.Fatalf("store holds %+v, want only the retried entry", got)
	}

	// No hook: Faulty is transparent.
	f.FailNext = nil
	if _, err := f.CatalogRevision(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFaultyInterceptsEveryMethod: every Store method but Close asks
// FailNext first, under its own name; none is passed through unseen.
func TestFaultyInterceptsEveryMethod(t *testing.T) {
	var asked string
	f := &storetest.Faulty{FailNext: func(op string) error {
		asked = op
		return storetest.Busy(op)
	}} // no store behind it: a call that reaches it panics
	port := reflect.TypeFor[switchboard.Store]()
	v := reflect.ValueOf(switchboard.Store(f))
	for i := range port.NumMethod() {
		m := port.Method(i)
		if m.Name == "Close" {
			continue
		}
		asked = ""
		args := []reflect.Value{}
		n := m.Type.NumIn()
		if m.Type.IsVariadic() {
			n--
		}
		for j := range n {
			args = append(args, reflect.Zero(m.Type.In(j)))
		}
		args[0] = reflect.ValueOf(context.Background())
		out := v.MethodByName(m.Name).Call(args)
		err, _ := out[len(out)-1].Interface().(error)
		if asked != m.Name || switchboard.CodeOf(err) != switchboard.CodeUnavailable {
			t.Errorf("%s: FailNext asked for %q, error %v", m.Name, asked, err)
		}
	}
}
