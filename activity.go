package switchboard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"
)

// ActivityEntry is one append-only ledger row. Entries are hash-chained:
// Hash covers the entry's content and PrevHash, so an edit made behind the
// daemon's back breaks the chain.
type ActivityEntry struct {
	ID         int64           `json:"id"`
	Ts         time.Time       `json:"ts"`
	Actor      string          `json:"actor"`
	Verb       string          `json:"verb"`
	Target     string          `json:"target"`
	Provenance json.RawMessage `json:"provenance,omitempty"`
	Reversal   json.RawMessage `json:"reversal,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
	PrevHash   string          `json:"prevHash"`
	Hash       string          `json:"hash"`
}

// ComputeHash returns the chain hash of e given the previous entry's hash.
// Drivers call it inside the appending transaction; verifiers recompute it.
// Timestamps are hashed at microsecond precision, which both stores keep.
func (e *ActivityEntry) ComputeHash(prev string) string {
	h := sha256.New()
	for _, part := range [][]byte{
		[]byte(prev),
		[]byte(strconv.FormatInt(e.ID, 10)),
		[]byte(strconv.FormatInt(e.Ts.UTC().UnixMicro(), 10)),
		[]byte(e.Actor), []byte(e.Verb), []byte(e.Target),
		e.Provenance, e.Reversal, e.Details,
	} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ActivityFilter selects ledger entries. AfterID is the paging cursor:
// entries with a greater ID, oldest first.
type ActivityFilter struct {
	AfterID int64
	Actor   string
	Verb    string
	Since   time.Time
	Limit   int
}

// LedgerCheckpoint says that the ledger held entry Seq, whose chain hash
// is Hash, at Ts. Because every hash covers the one before, it vouches for
// entries 1..Seq: a ledger that no longer reaches Seq, or whose entry Seq
// hashes differently, was cut or rewritten. MAC is an HMAC-SHA256 by the
// key in the daemon's data root (activity.Anchor); Durability is the
// store's setting when the checkpoint was taken, which says whether a
// crash may legitimately roll back entries it names.
type LedgerCheckpoint struct {
	Seq        int64     `json:"seq"`
	Hash       string    `json:"hash"`
	Ts         time.Time `json:"ts"`
	Durability string    `json:"durability,omitempty"`
	Boot       string    `json:"boot,omitempty"`
	// Clean says the daemon wrote this checkpoint as it stopped, after its
	// last append: nothing after it was in flight.
	Clean bool   `json:"clean,omitempty"`
	MAC   string `json:"mac,omitempty"`
}
