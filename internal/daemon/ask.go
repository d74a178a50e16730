package daemon

import (
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/internal/cluster"
)

// startAsker starts this replica's end of cluster asks: the panels,
// agent sessions and chat follow-ups register what they answer for on it
// (internal/panel/remote.go, agentsbus.go, followups.go).
func (d *Daemon) startAsker(b bus.Bus) error {
	a, err := cluster.NewAsker(b, stayAlive(d.replica.id), d.log)
	d.asker = a
	return err
}

// stayAlive is the Liveness asks use until the cluster's membership is
// wired: no replica is reported gone, so an ask to a dead owner ends at
// its deadline.
type stayAlive string

func (s stayAlive) Self() string              { return string(s) }
func (stayAlive) Gone(string) <-chan struct{} { return nil }
