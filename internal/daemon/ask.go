package daemon

import (
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/cluster"
)

// startAsker starts this replica's end of cluster asks: the panels,
// agent sessions and chat follow-ups register what they answer for on it
// (internal/panel/remote.go, agentsbus.go, followups.go). The membership
// tells it when an owner is gone, so an ask to a dead replica ends at once.
func (d *Daemon) startAsker(b bus.Bus) error {
	a, err := cluster.NewAsker(b, d.members, d.log)
	d.asker = a
	return err
}
