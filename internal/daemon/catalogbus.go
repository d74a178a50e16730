package daemon

import (
	"context"

	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/registry"
)

// topicCatalog tells every replica that the catalog changed; the payload
// is empty: each replica re-reads the store's catalog revision.
const topicCatalog = "catalog.changed"

// relayCatalog carries catalog changes between replicas (issue 16 item 1):
// this registry's own changes are published on the bus, and a publish
// from any replica makes this registry re-check the store at once, which
// reloads it, refreshes its search index and notifies its subscribers
// (MCP list_changed among them). A lost message costs nothing worse than
// before: every read still re-checks after registry.RefreshInterval.
func (d *Daemon) relayCatalog(b bus.Bus, reg *registry.Registry) error {
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan registry.Change, 16)
	stopChanges := reg.Subscribe(changes)
	poke := make(chan struct{}, 1)
	unsub, err := b.Subscribe(topicCatalog, func([]byte) {
		select { // handlers must not block: coalesce pokes
		case poke <- struct{}{}:
		default:
		}
	})
	if err != nil {
		stopChanges()
		cancel()
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case c := <-changes:
				if !c.Local {
					continue // another replica's, which it announced itself
				}
				if err := b.Publish(ctx, topicCatalog, nil); err != nil && ctx.Err() == nil {
					d.log.Warn("other replicas learn of this catalog change at their next read", "err", err)
				}
			case <-poke:
				if err := reg.Refresh(ctx); err != nil && ctx.Err() == nil {
					d.log.Warn("catalog refresh after another replica's change failed", "err", err)
				}
			}
		}
	}()
	d.stopCatalog = func() {
		unsub()
		stopChanges()
		cancel()
		<-done
	}
	return nil
}
