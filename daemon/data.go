package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/bus"
	engine "github.com/switchboardhq/switchboard/internal/daemon"
)

// The values below are the engine's (TestConstantsAreTheEngines pins
// them), spelled out so that go doc shows them.

// Names under the data root.
const (
	TokenFile = "admin.token"
	DBFile    = "switchboard.db"
)

// Bus kinds OpenBus accepts (serve's --bus).
const (
	BusAuto     = ""         // the store decides: postgres on a Postgres store, else local
	BusLocal    = "local"    // in-process: one daemon per store
	BusPostgres = "postgres" // LISTEN/NOTIFY on the store's database: several replicas
)

// DefaultIssuer is the iss of backend assertions when AssertionOptions
// names none: the daemon's base URL at its default address.
const DefaultIssuer = "http://127.0.0.1:7766"

// Defaults of ReplicaOptions.
const (
	DefaultReplicaHeartbeat = 5 * time.Second
	DefaultReplicaTimeout   = 30 * time.Second
)

// Defaults of RetentionOptions.
const (
	DefaultRetainInvocations    = 30 * 24 * time.Hour
	DefaultRetainRuns           = time.Hour
	DefaultRetainSearchExamples = 90 * 24 * time.Hour
	DefaultRetentionInterval    = time.Minute
)

// EventAgentStatus names the AG-UI CUSTOM event of an agent session's
// transition, on run streams and (as the SSE event kind) on tab streams.
const EventAgentStatus = "switchboard.agent.status"

// Bus carries browser dispatches, results and notifications between the
// replicas of one store. Close it after the daemons using it are closed.
type Bus struct {
	b     bus.Bus
	close func() error
}

// Close releases the bus.
func (b *Bus) Close() error { return b.close() }

// OpenBus opens the bus for a daemon on store (as OpenStore opened it). By
// default (BusAuto) a Postgres store gets the Postgres bus, so replicas of
// one database reach each other's tabs, waiting callers and subscribers,
// and SQLite gets the in-process bus. kind overrides that: BusLocal on
// Postgres suits a single replica; BusPostgres needs a Postgres store,
// whose driver's connections it uses (close the bus before the store).
func OpenBus(ctx context.Context, kind string, store switchboard.Store, log *slog.Logger) (*Bus, error) {
	b, closeBus, err := engine.OpenBus(ctx, kind, store, log)
	if err != nil {
		return nil, err
	}
	return &Bus{b: b, close: closeBus}, nil
}

// OpenStore opens the store named by spec: a postgres:// or postgresql://
// URL selects Postgres; empty selects SQLite (DBFile) under dataDir.
func OpenStore(ctx context.Context, spec, dataDir string, opts ...StoreOption) (switchboard.Store, error) {
	eo := make([]engine.StoreOption, len(opts))
	for i, o := range opts {
		eo[i] = o.o
	}
	return engine.OpenStore(ctx, spec, dataDir, eo...)
}

// StoreOption tunes OpenStore.
type StoreOption struct{ o engine.StoreOption }

// WithDurability picks which failures a commit survives; empty keeps the
// driver's default.
func WithDurability(d switchboard.Durability) StoreOption {
	return StoreOption{engine.WithDurability(d)}
}

// DataDir resolves the data root: flag, else $SWITCHBOARD_DATA, else the
// XDG data directory ($XDG_DATA_HOME or ~/.local/share) + "/switchboard".
func DataDir(flag string) (string, error) { return engine.DataDir(flag) }

// LoadOrCreateToken returns the admin token saved under dir (TokenFile),
// creating a random one (mode 0600) on first start.
func LoadOrCreateToken(dir string) (string, error) { return engine.LoadOrCreateToken(dir) }

// ReadToken reads the admin token under dir without creating one.
func ReadToken(dir string) (string, error) { return engine.ReadToken(dir) }

// NewSecret returns 256 random bits, hex encoded: an admin token, say.
func NewSecret() string { return engine.NewSecret() }

// SecureDataDir makes an existing data root private (the directory 0700,
// the token, the database and the ledger's anchor and key 0600) and
// returns the paths whose mode it tightened, for the caller to log.
func SecureDataDir(dir string) ([]string, error) { return engine.SecureDataDir(dir) }

// Anchor keeps the ledger's head checkpoint in a private directory
// outside the store, so that verifying the ledger notices deleted last
// entries across restarts (docs/governance.md, "Anchoring the chain").
// Pass it in GovernanceOptions.LedgerAnchor; close it after the daemon.
type Anchor struct {
	a *activity.Anchor
}

// OpenAnchor opens the anchor kept in dir (serve's is the data root),
// creating its key (mode 0600) on first use, and starts writing the
// checkpoint. durability is the store's setting, "" when unknown: it says
// whether a crash may roll back entries a checkpoint names.
func OpenAnchor(dir string, durability switchboard.Durability, log *slog.Logger) (*Anchor, error) {
	a, err := activity.OpenAnchor(dir, &activity.AnchorOptions{Durability: durability, Logger: log})
	if err != nil {
		return nil, err
	}
	a.Start()
	return &Anchor{a: a}, nil
}

// Close stops the writer and writes the newest checkpoint, marked clean.
func (a *Anchor) Close() error { return a.a.Close() }
