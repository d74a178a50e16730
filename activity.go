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
//
// A store may keep several chains, so that appends from several replicas
// do not wait for each other (docs/architecture.md, "The ledger's
// chains"). Chain and Seq then place the entry: position Seq on chain
// Chain, whose PrevHash is the hash of position Seq-1 on the same chain.
// Both are zero for an entry at position ID on chain 1, the only chain a
// single-writer store (SQLite) keeps and the one every ledger written
// before chains existed is on; ID orders the entries across chains.
type ActivityEntry struct {
	ID         int64           `json:"id"`
	Ts         time.Time       `json:"ts"`
	Actor      string          `json:"actor"`
	Verb       string          `json:"verb"`
	Target     string          `json:"target"`
	Provenance json.RawMessage `json:"provenance,omitempty"`
	Reversal   json.RawMessage `json:"reversal,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
	Chain      int             `json:"chain,omitempty"`
	Seq        int64           `json:"seq,omitempty"`
	PrevHash   string          `json:"prevHash"`
	Hash       string          `json:"hash"`
}

// Position returns the entry's chain and its position on it: (1, ID) when
// Chain is zero.
func (e *ActivityEntry) Position() (chain int, seq int64) {
	if e.Chain == 0 {
		return 1, e.ID
	}
	return e.Chain, e.Seq
}

// ComputeHash returns the chain hash of e given the previous entry's hash.
// Drivers call it inside the appending transaction; verifiers recompute it.
// Timestamps are hashed at microsecond precision, which both stores keep.
// An entry off chain 1's own numbering also hashes its Chain and Seq, so
// it cannot be moved to another chain or position; one on it hashes as
// entries did before chains existed, so those still verify.
func (e *ActivityEntry) ComputeHash(prev string) string {
	h := sha256.New()
	parts := [][]byte{
		[]byte(prev),
		[]byte(strconv.FormatInt(e.ID, 10)),
		[]byte(strconv.FormatInt(e.Ts.UTC().UnixMicro(), 10)),
		[]byte(e.Actor), []byte(e.Verb), []byte(e.Target),
		e.Provenance, e.Reversal, e.Details,
	}
	if e.Chain != 0 {
		parts = append(parts, []byte(strconv.Itoa(e.Chain)), []byte(strconv.FormatInt(e.Seq, 10)))
	}
	for _, part := range parts {
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
// hashes differently, was cut or rewritten. On a ledger of several chains,
// Seq and Hash name the newest entry and Chains the head of every chain,
// each vouching for its chain up to there. MAC is an HMAC-SHA256 by the
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
	Clean  bool        `json:"clean,omitempty"`
	Chains []ChainHead `json:"chains,omitempty"`
	MAC    string      `json:"mac,omitempty"`
}

// ChainHead is the last entry of one chain of the ledger: position Seq on
// chain Chain, entry ID, with hash Hash.
type ChainHead struct {
	Chain int    `json:"chain"`
	Seq   int64  `json:"seq"`
	ID    int64  `json:"id"`
	Hash  string `json:"hash"`
}
