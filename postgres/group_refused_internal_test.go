package postgres

import (
	"context"
	"os"
	"testing"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/sqlstore"
)

// refused is an entry Postgres refuses only when its insert runs.
func refused(i int) *switchboard.ActivityEntry {
	e := note(i)
	e.Target += "\x00"
	return e
}

// The member that took the batch's chain has its append refused late:
// rolling it back to its savepoint gives up the chain's lock too, so the
// next member must take a chain again, not append on one another
// replica may take meanwhile.
func TestGroupCommitRefusedAppendGivesUpTheChain(t *testing.T) {
	s, holder := openGroup(t)
	ctx := context.Background()
	var schema string
	if err := holder.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, os.Getenv("SWITCHBOARD_TEST_POSTGRES"), &Options{Schema: schema, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.chain = s.chain // the other replica prefers the same chain
	var otherErr error
	writes := []func() error{
		func() error { return s.ActivityAppend(ctx, refused(1)) },
		func() error {
			return s.write(ctx, "test append", true, "", func(tx sqlstore.Tx) error {
				p, err := s.core.NewEntry("test", note(2))
				if err != nil {
					return err
				}
				if err := tx.Append(ctx, p); err != nil {
					return err
				}
				// Another replica appends while this batch appends: it
				// must find the batch's chain held and take another.
				otherErr = other.ActivityAppend(ctx, note(3))
				return nil
			})
		},
	}
	leadErr, errs := batch(t, s, holder, func() error { return s.ActivityAppend(ctx, note(-1)) }, writes)
	if leadErr != nil || otherErr != nil {
		t.Fatal(leadErr, otherErr)
	}
	if errs[0] == nil || errs[1] != nil {
		t.Fatalf("the refused member: %v; the member after it: %v (want nil)", errs[0], errs[1])
	}
	if all := chain(t, s); len(all) != 3 {
		t.Fatalf("%d entries, want 3", len(all))
	}
}

// A member that appends twice, its second append refused late, is
// rolled back whole: the next member chains from the entry before that
// member, not from its first entry, which is gone with it.
func TestGroupCommitRefusedSecondAppend(t *testing.T) {
	s, holder := openGroup(t)
	ctx := context.Background()
	writes := []func() error{
		func() error {
			return s.write(ctx, "test append twice", true, "", func(tx sqlstore.Tx) error {
				for _, e := range []*switchboard.ActivityEntry{note(1), refused(2)} {
					p, err := s.core.NewEntry("test", e)
					if err != nil {
						return err
					}
					if err := tx.Append(ctx, p); err != nil {
						return err
					}
				}
				return nil
			})
		},
		func() error { return s.ActivityAppend(ctx, note(3)) },
	}
	leadErr, errs := batch(t, s, holder, func() error { return s.ActivityAppend(ctx, note(-1)) }, writes)
	if leadErr != nil {
		t.Fatal(leadErr)
	}
	if errs[0] == nil || errs[1] != nil {
		t.Fatalf("the refused member: %v; the member after it: %v (want nil)", errs[0], errs[1])
	}
	all := chain(t, s)
	if len(all) != 2 || all[1].Target != "note-3" {
		t.Fatalf("%d entries, want note--1 and note-3", len(all))
	}
}
