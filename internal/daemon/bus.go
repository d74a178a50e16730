package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/switchboardhq/switchboard/internal/bus"
)

// Bus kinds OpenBus accepts (serve's --bus).
const (
	BusAuto     = ""         // the store decides: postgres on a Postgres store, else local
	BusLocal    = "local"    // in-process: one daemon per store
	BusPostgres = "postgres" // LISTEN/NOTIFY on the store's database: several replicas
)

// OpenBus opens the bus for a daemon whose store is named by storeSpec (as
// OpenStore takes it). By default a Postgres store gets the Postgres bus,
// so replicas of one database reach each other's tabs, waiting callers and
// subscribers, and SQLite gets the in-process bus. kind overrides that:
// local on Postgres is right for a single replica (it saves the listening
// connection); postgres needs a Postgres store, since the bus lives in the
// store's database and schema (its payload table comes with the store's
// migrations, so open the store first). close releases the bus after the
// daemon is closed.
func OpenBus(ctx context.Context, kind, storeSpec string, log *slog.Logger) (b bus.Bus, close func() error, err error) {
	pg := isPostgres(storeSpec)
	switch kind {
	case BusAuto:
		if !pg {
			l := bus.NewLocal()
			return l, l.Close, nil
		}
	case BusLocal:
		l := bus.NewLocal()
		return l, l.Close, nil
	case BusPostgres:
		if !pg {
			return nil, nil, fmt.Errorf("bus %q needs a Postgres store (--store postgres://...); SQLite runs one daemon and uses the local bus", kind)
		}
	default:
		return nil, nil, fmt.Errorf("unknown bus %q: use local or postgres, or leave it empty to follow the store", kind)
	}
	p, err := bus.OpenPostgres(ctx, storeSpec, &bus.PostgresOptions{Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return p, p.Close, nil
}
