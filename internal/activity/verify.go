package activity

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

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
	// Checkpoints are the checkpoints the ledger was held to: the daemon's
	// own head and, when given, the operator's.
	Checkpoints []Anchored `json:"checkpoints,omitempty"`
	// Missing is the range of entries a checkpoint names that the ledger
	// no longer holds.
	Missing *Range `json:"missing,omitempty"`
	// PossibleCrash says that the store's durability lets a crash roll
	// back the missing entries (docs/architecture.md, Durability), so they
	// were deleted or lost in a crash; otherwise they were deleted.
	PossibleCrash bool `json:"possibleCrash,omitempty"`
	// Chains are the heads of the ledger's chains, when it has several.
	Chains []switchboard.ChainHead `json:"chains,omitempty"`
	// VouchedBy is the replica that said it signed the operator's
	// checkpoint when this daemon could not check the signature itself
	// (another data root's key; Options.Vouch): the signature then holds
	// as far as that replica's answer can be trusted.
	VouchedBy string `json:"vouchedBy,omitempty"`
	// Gaps are the ledger.rollback entries: checkpoints a start found the
	// store no longer reached. They are history, not a broken chain: OK
	// does not depend on them, and every verify shows them.
	Gaps []Gap `json:"gaps,omitempty"`
}

// Anchored is one checkpoint a verify checked, and whose it is.
type Anchored struct {
	Source string `json:"source"` // daemon or operator
	switchboard.LedgerCheckpoint
}

// Range is an inclusive range of entry IDs or, with Chain, of positions
// on that chain.
type Range struct {
	From  int64 `json:"from"`
	To    int64 `json:"to"`
	Chain int   `json:"chain,omitempty"`
}

// points are what cp vouches for: its entry Seq with Hash (Chain 0: found
// by ID) and, on a ledger of several chains, each chain's head.
func points(cp switchboard.LedgerCheckpoint) []switchboard.ChainHead {
	var ps []switchboard.ChainHead
	if cp.Seq > 0 {
		ps = append(ps, switchboard.ChainHead{ID: cp.Seq, Hash: cp.Hash})
	}
	return append(ps, cp.Chains...)
}

// Gap is a ledger.rollback entry: Entry is its ID.
type Gap struct {
	Entry   int64  `json:"entry"`
	Missing *Range `json:"missing,omitempty"`
	Cause   string `json:"cause"`
}

// Causes a ledger.rollback entry gives.
const (
	// CausePossibleCrash: the store is shorter than a checkpoint taken
	// under a durability that lets a crash roll back the last commits.
	CausePossibleCrash = "possible-crash"
	// CauseUnexplained: entries were deleted or rewritten.
	CauseUnexplained = "unexplained"
	// CauseForged: the checkpoint file's signature does not verify.
	CauseForged = "forged-checkpoint"
)

// Verify reads the whole ledger from the store, by id, and recomputes
// each of its chains: an entry's positions on its chain must run 1, 2, 3
// … without gaps, each prevHash must be the hash of the position before,
// and each hash must be the hash of the entry's content. An edit,
// insertion or deletion made behind the daemon's back breaks one of these
// at the first entry it touched. A chain cannot show that its last entries
// were deleted, so the ledger must also reach this process's head
// checkpoint, with the same hashes there (the Anchor).
func (l *Ledger) Verify(ctx context.Context) (Report, error) {
	return l.verify(ctx, nil)
}

// VerifyCheckpoint is Verify that also holds the ledger to cp, a
// checkpoint an operator exported earlier (Checkpoint) and kept elsewhere.
// A cp whose MAC is neither this daemon's nor, asked through
// Options.Vouch, a live replica's fails the check; one without a MAC is
// checked as given.
func (l *Ledger) VerifyCheckpoint(ctx context.Context, cp switchboard.LedgerCheckpoint) (Report, error) {
	return l.verify(ctx, &cp)
}

func (l *Ledger) verify(ctx context.Context, operator *switchboard.LedgerCheckpoint) (Report, error) {
	var r Report
	if operator != nil {
		r.Checkpoints = append(r.Checkpoints, Anchored{"operator", *operator})
		// An unsigned {seq, hash} (a headId and headHash an operator noted
		// from an earlier verify) is checked as given: its custody is the
		// operator's. A signature that is there must be this daemon's or
		// a live replica's (Options.Vouch).
		if operator.MAC != "" && !l.anchor.Valid(*operator) {
			if l.vouch != nil {
				r.VouchedBy = l.vouch(ctx, *operator)
			}
			if r.VouchedBy == "" {
				return r.fail(0, "the checkpoint's signature does not verify: neither this daemon nor a live replica sharing its store issued it (another data root's key) or it was edited; without its mac it is checked as given"), nil
			}
		}
	}
	// Taken before the scan: every entry it names was committed already.
	if cp, ok := l.anchor.Head(); ok {
		r.Checkpoints = append(r.Checkpoints, Anchored{"daemon", cp})
	}
	heads := map[int]*switchboard.ChainHead{} // each chain's last entry so far
	multi := false                            // an entry off chain 1's own numbering was seen
	for after := int64(0); ; {
		page, err := l.store.ActivityList(ctx, switchboard.ActivityFilter{AfterID: after, Limit: pageSize})
		if err != nil {
			return r, err
		}
		for i := range page {
			e := &page[i]
			chain, seq := e.Position()
			h := heads[chain]
			if h == nil {
				h = &switchboard.ChainHead{Chain: chain}
				heads[chain] = h
			}
			multi = multi || e.Chain != 0
			at := func() string { return fmt.Sprintf("entry %d (position %d of chain %d)", e.ID, seq, chain) }
			switch {
			case seq != h.Seq+1 && e.Chain == 0 && seq > h.Seq:
				return r.fail(h.Seq+1, fmt.Sprintf("entry %d is missing (the next entry is %d): entries were deleted", h.Seq+1, e.ID)), nil
			case seq > h.Seq+1:
				return r.fail(e.ID, fmt.Sprintf("%s: positions %d–%d of chain %d are missing: entries were deleted", at(), h.Seq+1, seq-1, chain)), nil
			case seq != h.Seq+1:
				return r.fail(e.ID, fmt.Sprintf("%s: chain %d is at position %d already (entry %d): entries were moved or inserted", at(), chain, h.Seq, h.ID)), nil
			case e.PrevHash != h.Hash && e.Chain == 0:
				return r.fail(e.ID, fmt.Sprintf("entry %d does not follow entry %d: its prevHash is %.12s…, the hash of entry %d is %.12s…", e.ID, e.ID-1, e.PrevHash, e.ID-1, h.Hash)), nil
			case e.PrevHash != h.Hash:
				return r.fail(e.ID, fmt.Sprintf("%s does not follow entry %d: its prevHash is %.12s…, the hash of entry %d is %.12s…", at(), h.ID, e.PrevHash, h.ID, h.Hash)), nil
			case e.ComputeHash(h.Hash) != e.Hash:
				return r.fail(e.ID, fmt.Sprintf("entry %d was edited: its content no longer matches its hash", e.ID)), nil
			}
			for _, a := range r.Checkpoints {
				for _, p := range points(a.LedgerCheckpoint) {
					if (p.Chain == 0 && p.ID == e.ID || p.Chain == chain && p.Seq == seq) && p.Hash != e.Hash {
						return r.fail(e.ID, fmt.Sprintf("entry %d is not the entry the %s checkpoint of %s names (hash %.12s…, now %.12s…): the ledger was cut back and written again from entry %d or earlier",
							e.ID, a.Source, stamp(a.Ts), p.Hash, e.Hash, e.ID)), nil
					}
				}
			}
			if e.Verb == VerbLedgerRollback && e.Actor == "system" {
				r.Gaps = append(r.Gaps, gapOf(e))
			}
			*h = switchboard.ChainHead{Chain: chain, Seq: seq, ID: e.ID, Hash: e.Hash}
			r.Entries, r.HeadID, r.Head = r.Entries+1, e.ID, e.Hash
		}
		if len(page) < pageSize {
			break
		}
		after = page[len(page)-1].ID
	}
	if multi {
		for _, h := range heads {
			r.Chains = append(r.Chains, *h)
		}
		slices.SortFunc(r.Chains, func(x, y switchboard.ChainHead) int { return x.Chain - y.Chain })
	}
	// The checkpoint reaching furthest past its chain's end (or the
	// ledger's last entry) names the whole missing range; of equals, the
	// operator's (asked for) comes first. The ledger's own end is named
	// before a chain's: a chain cut short behind the newest entry is the
	// one left to name by its position.
	var (
		far    *Anchored
		farAt  switchboard.ChainHead
		farEnd int64
	)
	for i, a := range r.Checkpoints {
		for _, p := range points(a.LedgerCheckpoint) {
			end := r.HeadID
			if p.Chain != 0 {
				end = 0
				if h := heads[p.Chain]; h != nil {
					end = h.Seq
				}
			}
			at := p.Seq
			if p.Chain == 0 {
				at = p.ID
			}
			if at > end && (far == nil || farAt.Chain != 0 && p.Chain == 0 || (farAt.Chain == 0) == (p.Chain == 0) && at-end > farAt.Seq-farEnd) {
				far, farAt, farEnd = &r.Checkpoints[i], p, end
				farAt.Seq = at
			}
		}
	}
	if a := far; a != nil {
		r.Missing = &Range{From: farEnd + 1, To: farAt.Seq, Chain: farAt.Chain}
		r.PossibleCrash = mayRollBack(a.Durability)
		why := "the last entries were deleted"
		if r.PossibleCrash {
			why += ", or an OS or database-server crash rolled them back (the store's durability is not power: docs/architecture.md, Durability)"
		}
		if farAt.Chain == 0 {
			return r.fail(r.HeadID+1, fmt.Sprintf("%s missing: the ledger ends at entry %d, but the %s checkpoint of %s names entry %d (hash %.12s…): %s",
				r.Missing.phrase(), r.HeadID, a.Source, stamp(a.Ts), a.Seq, a.Hash, why)), nil
		}
		return r.fail(farAt.ID, fmt.Sprintf("positions %d–%d of chain %d are missing: the chain ends at position %d, but the %s checkpoint of %s names position %d (entry %d, hash %.12s…): %s",
			r.Missing.From, r.Missing.To, farAt.Chain, farEnd, a.Source, stamp(a.Ts), farAt.Seq, farAt.ID, farAt.Hash, why)), nil
	}
	r.OK = true
	return r, nil
}

func (r Report) fail(id int64, problem string) Report {
	r.OK, r.BadID, r.Problem = false, id, problem
	return r
}

// phrase names the range for a message: "entry 8 is" or "entries 8–10 are".
func (g *Range) phrase() string {
	if g.From == g.To {
		return fmt.Sprintf("entry %d is", g.From)
	}
	return fmt.Sprintf("entries %d–%d are", g.From, g.To)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// mayRollBack reports whether a commit under durability d can be lost in
// a crash: anything but power (an unknown setting included).
func mayRollBack(d string) bool { return d != string(switchboard.DurabilityPower) }

func gapOf(e *switchboard.ActivityEntry) Gap {
	var d struct {
		Missing *Range `json:"missing"`
		Cause   string `json:"cause"`
	}
	_ = json.Unmarshal(e.Details, &d) // a malformed entry still shows as a gap
	return Gap{Entry: e.ID, Missing: d.Missing, Cause: d.Cause}
}

// Issued reports whether cp carries this daemon's signature (its data
// root's key), as Checkpoint signs it.
func (l *Ledger) Issued(cp switchboard.LedgerCheckpoint) bool { return l.anchor.Valid(cp) }

// Checkpoint verifies the ledger and returns a signed checkpoint of its
// head, for an operator to keep outside the daemon's reach and check later
// with VerifyCheckpoint. A ledger that does not verify gets no checkpoint
// (CONFLICT with the problem): signing it would vouch for the damage.
func (l *Ledger) Checkpoint(ctx context.Context) (switchboard.LedgerCheckpoint, error) {
	r, err := l.Verify(ctx)
	if err != nil {
		return switchboard.LedgerCheckpoint{}, err
	}
	if !r.OK {
		return switchboard.LedgerCheckpoint{}, switchboard.Errorf(switchboard.CodeConflict,
			"the ledger does not verify, so no checkpoint is issued: %s", r.Problem).WithDetails(map[string]any{"badId": r.BadID})
	}
	return l.anchor.checkpoint(r.HeadID, r.Head, r.Chains), nil
}

// reconcile runs at start: the checkpoint the anchor file held must still
// be in the store, with the same hash. When it is not, a ledger.rollback
// entry records what went missing and why that may be (a crash under
// durability process, or deletion), the log says so, and the anchor starts
// again from the store's head: the entry keeps the discontinuity visible
// to every later verify, and appending goes on.
func (l *Ledger) reconcile(ctx context.Context) error {
	l.mu.Lock()
	var head switchboard.ActivityEntry
	if n := len(l.ring); n > 0 {
		head = l.ring[n-1]
	}
	l.mu.Unlock()
	found, ok := l.anchor.Found()
	if !ok {
		l.anchor.reset(head, nil)
		return nil
	}
	details := map[string]any{"checkpoint": map[string]any{"seq": found.Seq, "hash": found.Hash, "ts": found.Ts,
		"durability": found.Durability}, "headId": head.ID}
	switch {
	case !l.anchor.Valid(found):
		details["cause"] = CauseForged
	case found.Seq > head.ID:
		details["missing"] = Range{From: head.ID + 1, To: found.Seq}
		details["rebooted"] = found.Boot != l.anchor.boot
		details["cause"] = CauseUnexplained
		// A checkpoint written at a clean stop, on the boot still running,
		// was followed by no crash at all: nothing could roll the store
		// back, so a shorter store was cut by someone.
		cleanSinceStop := found.Clean && found.Boot != "" && found.Boot == l.anchor.boot
		if mayRollBack(found.Durability) && !cleanSinceStop {
			details["cause"] = CausePossibleCrash
		}
	default:
		e, err := l.Get(ctx, found.Seq)
		switch {
		case switchboard.CodeOf(err) == switchboard.CodeNotFound:
			// Deleted from the middle: verify names it; starting is not
			// refused, or a tampered database would stop the daemon.
			details["missing"] = Range{From: found.Seq, To: found.Seq}
		case err != nil:
			return fmt.Errorf("check the ledger's checkpoint: %w", err)
		case e.Hash == found.Hash:
			// Its other chains' heads stay vouched for; a verify holds
			// the store to them.
			l.anchor.reset(head, found.Chains)
			return nil
		default:
			details["rewrittenFrom"] = found.Seq
		}
		details["cause"] = CauseUnexplained
	}
	d, err := json.Marshal(details)
	if err != nil {
		return err
	}
	l.log.ErrorContext(ctx, "the ledger no longer holds what its checkpoint named: recorded as a ledger.rollback entry", "details", string(d))
	l.anchor.reset(head, nil)
	return l.appendRedacted(ctx, &switchboard.ActivityEntry{Actor: "system", Verb: VerbLedgerRollback, Target: "ledger", Details: d})
}
