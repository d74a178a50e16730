package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/bus"
	"github.com/switchboardhq/switchboard/postgres"
)

// Bus kinds OpenBus accepts (serve's --bus).
const (
	BusAuto     = ""         // the store decides: postgres on a Postgres store, else local
	BusLocal    = "local"    // in-process: one daemon per store
	BusPostgres = "postgres" // LISTEN/NOTIFY on the store's database: several replicas
)

// OpenBus opens the bus for a daemon on store (as OpenStore opened it). By
// default a Postgres store gets the Postgres bus, so replicas of one
// database reach each other's tabs, waiting callers and subscribers, and
// SQLite gets the in-process bus. kind overrides that: local on Postgres
// is right for a single replica (it saves the listening connection);
// postgres needs a Postgres store, since the bus lives in the store's
// database and schema and runs on the store driver's connections (its
// notifier: NOTIFY on the store's pool, one listening connection). close
// releases the bus after the daemon is closed and before the store is.
func OpenBus(ctx context.Context, kind string, store switchboard.Store, log *slog.Logger) (b bus.Bus, close func() error, err error) {
	ps, pg := store.(*postgres.Store)
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
	n, err := ps.Notifier(ctx)
	if err != nil {
		return nil, nil, err
	}
	p, err := bus.NewPostgres(ctx, n, &bus.PostgresOptions{Logger: log})
	if err != nil {
		return nil, nil, err
	}
	return p, p.Close, nil
}
