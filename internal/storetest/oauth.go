package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
)

// OAuth records: unique by kind and ID, used once, revoked once (the
// first time kept), updated only while unused, listed by user newest
// first, removed when expired.
func testOAuthRecords(t *testing.T, s switchboard.Store) {
	ctx := context.Background()
	put := func(kind, id, user string, created, expires time.Time) {
		t.Helper()
		must(t, s.OAuthPut(ctx, switchboard.OAuthRecord{Kind: kind, ID: id, Ref: "r-" + id, User: user, Client: "c",
			Data: []byte(`{"n":1}`), CreatedAt: created, ExpiresAt: expires}))
	}
	put(switchboard.OAuthGrant, "g1", "user:alice", base, time.Time{})
	put(switchboard.OAuthGrant, "g2", "user:bob", base.Add(time.Second), time.Time{})
	put(switchboard.OAuthGrant, "g3", "user:alice", base.Add(2*time.Second), time.Time{})
	put(switchboard.OAuthCode, "c1", "", base, base.Add(time.Minute))
	wantCode(t, s.OAuthPut(ctx, switchboard.OAuthRecord{Kind: switchboard.OAuthGrant, ID: "g1"}), switchboard.CodeConflict)
	wantCode(t, s.OAuthPut(ctx, switchboard.OAuthRecord{Kind: switchboard.OAuthGrant}), switchboard.CodeInvalidInput)
	must(t, s.OAuthPut(ctx, switchboard.OAuthRecord{Kind: switchboard.OAuthCode, ID: "g1", CreatedAt: base})) // IDs are per kind

	r, err := s.OAuthGet(ctx, switchboard.OAuthGrant, "g1")
	must(t, err)
	if r.Ref != "r-g1" || r.User != "user:alice" || r.Client != "c" || string(r.Data) != `{"n":1}` || !r.CreatedAt.Equal(base.Truncate(time.Microsecond)) || !r.ExpiresAt.IsZero() || !r.UsedAt.IsZero() {
		t.Fatalf("get: %+v", r)
	}
	_, err = s.OAuthGet(ctx, switchboard.OAuthGrant, "nope")
	wantCode(t, err, switchboard.CodeNotFound)

	alice, err := s.OAuthList(ctx, switchboard.OAuthGrant, "user:alice")
	must(t, err)
	if len(alice) != 2 || alice[0].ID != "g3" || alice[1].ID != "g1" {
		t.Fatalf("alice's grants: %+v", alice)
	}
	all, err := s.OAuthList(ctx, switchboard.OAuthGrant, "")
	must(t, err)
	if len(all) != 3 {
		t.Fatalf("all grants: %d", len(all))
	}

	must(t, s.OAuthUpdate(ctx, switchboard.OAuthCode, "c1", "user:carol", []byte(`{"n":2}`)))
	used, err := s.OAuthUse(ctx, switchboard.OAuthCode, "c1", base.Add(time.Second))
	must(t, err)
	if used.User != "user:carol" || string(used.Data) != `{"n":2}` || !used.UsedAt.Equal(base.Add(time.Second).Truncate(time.Microsecond)) {
		t.Fatalf("used: %+v", used)
	}
	again, err := s.OAuthUse(ctx, switchboard.OAuthCode, "c1", base.Add(2*time.Second))
	wantCode(t, err, switchboard.CodeConflict)
	if again.Ref != "r-c1" || !again.UsedAt.Equal(base.Add(time.Second).Truncate(time.Microsecond)) {
		t.Fatalf("a second use must report the record as first used: %+v", again)
	}
	wantCode(t, s.OAuthUpdate(ctx, switchboard.OAuthCode, "c1", "", nil), switchboard.CodeConflict)
	wantCode(t, s.OAuthUpdate(ctx, switchboard.OAuthCode, "nope", "", nil), switchboard.CodeNotFound)
	_, err = s.OAuthUse(ctx, switchboard.OAuthCode, "nope", base)
	wantCode(t, err, switchboard.CodeNotFound)

	rv, err := s.OAuthRevoke(ctx, switchboard.OAuthGrant, "g1", base.Add(time.Hour))
	must(t, err)
	rv2, err := s.OAuthRevoke(ctx, switchboard.OAuthGrant, "g1", base.Add(2*time.Hour))
	must(t, err)
	if !rv.RevokedAt.Equal(base.Add(time.Hour).Truncate(time.Microsecond)) || !rv2.RevokedAt.Equal(rv.RevokedAt) {
		t.Fatalf("revoke: %v then %v", rv.RevokedAt, rv2.RevokedAt)
	}
	_, err = s.OAuthRevoke(ctx, switchboard.OAuthGrant, "nope", base)
	wantCode(t, err, switchboard.CodeNotFound)

	n, err := s.OAuthDeleteExpired(ctx, base.Add(2*time.Minute))
	must(t, err)
	if n != 1 {
		t.Fatalf("deleted %d expired records, want 1 (grants never expire)", n)
	}
	_, err = s.OAuthGet(ctx, switchboard.OAuthCode, "c1")
	wantCode(t, err, switchboard.CodeNotFound)
	_, err = s.OAuthGet(ctx, switchboard.OAuthGrant, "g2")
	must(t, err)
}
