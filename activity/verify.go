package activity

import (
	"context"
	"fmt"

	"github.com/switchboardhq/switchboard"
)

// Report is the outcome of verifying the chain. When OK is false, BadID
// names the first entry that does not verify and Problem says why.
type Report struct {
	OK      bool   `json:"ok"`
	Entries int64  `json:"entries"`
	HeadID  int64  `json:"headId"`
	Head    string `json:"headHash,omitempty"`
	BadID   int64  `json:"badId,omitempty"`
	Problem string `json:"problem,omitempty"`
}

// Verify reads the whole ledger from the store and recomputes the chain:
// IDs must run 1, 2, 3 … without gaps, each prevHash must be the hash of
// the entry before, and each hash must be the hash of the entry's content.
// An edit, insertion or deletion made behind the daemon's back breaks one
// of these at the first entry it touched.
func (l *Ledger) Verify(ctx context.Context) (Report, error) {
	var r Report
	prev, want := "", int64(1)
	for after := int64(0); ; {
		page, err := l.store.ActivityList(ctx, switchboard.ActivityFilter{AfterID: after, Limit: pageSize})
		if err != nil {
			return r, err
		}
		for i := range page {
			e := &page[i]
			switch {
			case e.ID != want:
				return r.fail(want, fmt.Sprintf("entry %d is missing (the next entry is %d): entries were deleted", want, e.ID)), nil
			case e.PrevHash != prev:
				return r.fail(e.ID, fmt.Sprintf("entry %d does not follow entry %d: its prevHash is %.12s…, the hash of entry %d is %.12s…", e.ID, e.ID-1, e.PrevHash, e.ID-1, prev)), nil
			case e.ComputeHash(prev) != e.Hash:
				return r.fail(e.ID, fmt.Sprintf("entry %d was edited: its content no longer matches its hash", e.ID)), nil
			}
			prev, want = e.Hash, want+1
			r.Entries, r.HeadID, r.Head = r.Entries+1, e.ID, e.Hash
		}
		if len(page) < pageSize {
			break
		}
		after = page[len(page)-1].ID
	}
	r.OK = true
	return r, nil
}

func (r Report) fail(id int64, problem string) Report {
	r.OK, r.BadID, r.Problem = false, id, problem
	return r
}
