package daemon

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
)

// askVouch asks a replica whether it signed a ledger checkpoint. Each
// replica signs exported checkpoints with the key in its own data root,
// so one exported through a load balancer is verified, through the next,
// by a replica that cannot check its signature; it asks the others.
//
// The bus authenticates no sender (on Postgres anyone who can connect to
// the database can NOTIFY), and a checkpoint exists to catch someone who
// can write to the database: a bare "yes" could be forged by the very
// person it should catch. So a yes is a tag, HMAC-SHA256 over the
// asker's fresh nonce, the checkpoint's signature and the answering
// replica's id, under a key derived (HKDF) from the admin token, which
// every replica of a cluster is given and the database does not hold.
// Without the token no one can make a tag; a replica started with
// another token cannot vouch.
const askVouch = "ledger.vouch"

// vouchWait bounds the whole round of asks: a verify waits no longer.
const vouchWait = 2 * time.Second

// vouchAsk is an ask's payload; vouchAnswer its answer, Tag "" for no.
type vouchAsk struct {
	Checkpoint switchboard.LedgerCheckpoint `json:"checkpoint"`
	Nonce      string                       `json:"nonce"`
}

type vouchAnswer struct {
	Tag string `json:"tag"`
}

// vouchKey derives the tag key from the admin token.
func vouchKey(adminToken string) []byte {
	k, err := hkdf.Key(sha256.New, []byte(adminToken), nil, "switchboard ledger vouch v1", 32)
	if err != nil {
		panic(err) // only for a length over 255 hash sizes
	}
	return k
}

// vouchTag is the tag replica gives for cp's signature asked with nonce.
func vouchTag(key []byte, nonce string, cp switchboard.LedgerCheckpoint, replica string) string {
	m := hmac.New(sha256.New, key)
	for _, f := range []string{"switchboard ledger vouch v1", nonce, cp.MAC, replica} {
		m.Write([]byte(f + "\n"))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// serveVouch answers whether this replica signed the checkpoint asked
// about, with a tag when it did.
func (d *Daemon) serveVouch() {
	d.asker.Handle(askVouch, func(_ context.Context, p []byte) ([]byte, error) {
		var a vouchAsk
		if err := json.Unmarshal(p, &a); err != nil || len(a.Nonce) != 32 {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "a vouch ask is a checkpoint and a 16-byte hex nonce")
		}
		var ans vouchAnswer
		if d.Ledger != nil && d.Ledger.Issued(a.Checkpoint) {
			ans.Tag = vouchTag(d.vouchKey, a.Nonce, a.Checkpoint, d.asker.Self())
		}
		return json.Marshal(ans)
	})
}

// vouch is activity.Options.Vouch: the live replica other than this one
// that signed cp ("" if none), asked of all of them at once; an answer
// whose tag does not verify counts as no.
func (d *Daemon) vouch(ctx context.Context, cp switchboard.LedgerCheckpoint) string {
	if d.asker == nil || d.store == nil || cp.MAC == "" {
		return ""
	}
	reps, err := d.store.ReplicaList(ctx)
	if err != nil {
		return ""
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce) // never fails on supported platforms
	a := vouchAsk{Checkpoint: cp, Nonce: hex.EncodeToString(nonce)}
	req, err := json.Marshal(a)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, vouchWait)
	defer cancel()
	yes := make(chan string, len(reps))
	asked := 0
	for _, r := range reps {
		if r.ID == d.asker.Self() {
			continue
		}
		asked++
		go func(id string) {
			res, err := d.asker.Ask(ctx, id, askVouch, req)
			var ans vouchAnswer
			if err != nil || json.Unmarshal(res, &ans) != nil || !d.vouchedBy(a, id, ans.Tag) {
				id = ""
			}
			yes <- id
		}(r.ID)
	}
	for range asked {
		if id := <-yes; id != "" {
			return id
		}
	}
	return ""
}

// vouchedBy reports whether tag is replica's tag for a.
func (d *Daemon) vouchedBy(a vouchAsk, replica, tag string) bool {
	got, err := hex.DecodeString(tag)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	want, _ := hex.DecodeString(vouchTag(d.vouchKey, a.Nonce, a.Checkpoint, replica))
	return hmac.Equal(got, want)
}
