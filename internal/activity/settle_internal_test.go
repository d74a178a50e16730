package activity

import (
	"testing"
	"time"

	"github.com/switchboardhq/switchboard"
)

// A follower reading the store stops before a missing id while the entry
// after it is young (the missing one may be another chain's, still
// committing), and moves past it once that entry is older than
// settleWindow (the append was rolled back).
func TestSettledStopsAtYoungGap(t *testing.T) {
	read := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(id int64, age time.Duration) switchboard.ActivityEntry {
		return switchboard.ActivityEntry{ID: id, Ts: read.Add(-age)}
	}
	for _, tc := range []struct {
		name string
		page []switchboard.ActivityEntry
		want int
	}{
		{"no gap", []switchboard.ActivityEntry{at(5, 0), at(6, 0)}, 2},
		{"young gap first", []switchboard.ActivityEntry{at(6, time.Second), at(7, 0)}, 0},
		{"young gap inside", []switchboard.ActivityEntry{at(5, 0), at(7, time.Second), at(8, 0)}, 1},
		{"old gap", []switchboard.ActivityEntry{at(5, time.Minute), at(7, time.Minute), at(8, 0)}, 3},
	} {
		if got := settled(tc.page, 4, read); len(got) != tc.want {
			t.Errorf("%s: %d entries settled, want %d", tc.name, len(got), tc.want)
		}
	}
}
