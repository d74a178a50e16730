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

// vouch is activity.Options.Vouch: whether a live replica other than this
// one signed cp, asked of all of them at once.
func (d *Daemon) vouch(ctx context.Context, cp switchboard.LedgerCheckpoint) bool {
	if d.asker == nil || d.store == nil {
		return false
	}
	reps, err := d.store.ReplicaList(ctx)
	if err != nil {
		return false
	}
	req, err := json.Marshal(cp)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, vouchWait)
	defer cancel()
	yes := make(chan bool, len(reps))
	asked := 0
	for _, r := range reps {
		if r.ID == d.asker.Self() {
			continue
		}
		asked++
		go func(id string) {
			res, err := d.asker.Ask(ctx, id, askVouch, req)
			var ok bool
			yes <- err == nil && json.Unmarshal(res, &ok) == nil && ok
		}(r.ID)
	}
	for range asked {
		if <-yes {
			return true
		}
	}
	return false
}
