package daemon

import (
	"context"
	"fmt"

	"github.com/switchboardhq/switchboard"
)

// releaseOrphanKeys deletes idempotency keys that name no invocation. The
// broker claims a key in its invocation's own transaction, so only a
// daemon from before that change (which claimed first and recorded later)
// can have left one — by stopping between the two writes, before the call
// was recorded and so before it ran. Released, the caller's retry with the
// key runs the call once; resolved (a stored failure) it would replay an
// error for a call that never happened; kept, every retry is CONFLICT
// until the key expires.
func (d *Daemon) releaseOrphanKeys(ctx context.Context, st switchboard.Store) error {
	n, err := st.IdempotencyReleaseOrphans(ctx)
	if err != nil {
		return fmt.Errorf("release idempotency keys without a call: %w", err)
	}
	if n > 0 {
		d.log.Warn("released idempotency keys left without a recorded call by the previous run", "count", n)
	}
	return nil
}
