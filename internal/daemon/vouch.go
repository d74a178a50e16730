package daemon

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
)

// askVouch asks a replica whether it signed a ledger checkpoint. Each
// replica signs exported checkpoints with the key in its own data root,
// so one exported through a load balancer is verified, through the next,
// by a replica that cannot check its signature; it asks the others.
const askVouch = "ledger.vouch"

// vouchWait bounds the whole round of asks: a verify waits no longer.
const vouchWait = 2 * time.Second

// serveVouch answers whether this replica signed the checkpoint asked about.
func (d *Daemon) serveVouch() {
	d.asker.Handle(askVouch, func(_ context.Context, p []byte) ([]byte, error) {
		var cp switchboard.LedgerCheckpoint
		if err := json.Unmarshal(p, &cp); err != nil {
			return nil, switchboard.Errorf(switchboard.CodeInvalidInput, "decode a checkpoint to vouch for: %v", err)
		}
		return json.Marshal(d.Ledger != nil && d.Ledger.Issued(cp))
	})
}

// vouch is activity.Options.Vouch: the live replica other than this one
// that signed cp ("" if none), asked of all of them at once. The answer
// travels over the bus, which does not authenticate its senders (on
// Postgres, anyone who can connect to the database can NOTIFY): the
// report names the replica so that the operator sees the signature was
// not checked here.
func (d *Daemon) vouch(ctx context.Context, cp switchboard.LedgerCheckpoint) string {
	if d.asker == nil || d.store == nil {
		return ""
	}
	reps, err := d.store.ReplicaList(ctx)
	if err != nil {
		return ""
	}
	req, err := json.Marshal(cp)
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
			var ok bool
			if err != nil || json.Unmarshal(res, &ok) != nil || !ok {
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
