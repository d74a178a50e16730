package switchboard

import (
	"context"
	"encoding/json"
	"time"
)

// Store is the persistence port: every operation the daemon needs of its
// database, each one required. Drivers (sqlite, postgres) implement all of
// it, guard that with `var _ switchboard.Store = (*Store)(nil)`, and pass
// the storetest conformance suite; nothing above a driver knows which
// database it talks to, and nothing discovers a method by type assertion.
// Consumers that need a few methods declare that subset where they use it
// (approval.Store, job.Store, scope.TokenStore, ...).
//
// Drivers translate their own errors into *Error values: ErrNotFound
// (NOT_FOUND) for missing rows, ErrConflict (CONFLICT) for unique
// violations and failed compare-and-swaps (with the current record),
// CodeUnavailable for busy, closed or failing storage.
//
// The interface grows with the daemon; it is meant to be implemented only
// by the drivers in this module.
type Store interface {
	// ToolPut upserts a batch of tools of one source atomically: all or
	// nothing. Each stored tool gets Origin.Source = source and Version = the
	// catalog revision of this write.
	ToolPut(ctx context.Context, source Source, tools []Tool) error
	// ToolDelete removes one source's declaration of name (ErrNotFound if
	// there is none) and bumps the catalog revision.
	ToolDelete(ctx context.Context, source Source, name string) error
	// ToolList returns every declaration of every source, ordered by name
	// then source rank. Merging by precedence is the registry's job.
	ToolList(ctx context.Context) ([]Tool, error)
	// CatalogRevision is a counter that grows with every catalog write, so a
	// cache can tell cheaply whether it is stale.
	CatalogRevision(ctx context.Context) (int64, error)

	// InvocationCreate inserts a new record (ErrConflict if the ID exists).
	InvocationCreate(ctx context.Context, inv Invocation) error
	// InvocationGet returns one record or ErrNotFound.
	InvocationGet(ctx context.Context, id string) (Invocation, error)
	// InvocationUpdate is a compare-and-swap: it stores inv's mutable fields
	// (status, session, result, error, sizes, timestamps) only if the stored
	// status is one of from, and returns the stored record. Otherwise it
	// changes nothing and returns the current record with ErrConflict.
	InvocationUpdate(ctx context.Context, inv Invocation, from ...Status) (Invocation, error)
	// InvocationFailInFlight visits every non-terminal record (at start:
	// nothing is left in flight by accident). resolve returns the error to
	// end each with — its status is StatusFor(cause.Code) — and the ledger
	// entry of that ending, written with it in one transaction
	// (InvocationFinish); a nil cause leaves the record as it is (a call
	// awaiting an approval that outlives the restart). It returns how many
	// records it ended.
	InvocationFailInFlight(ctx context.Context, at time.Time, resolve func(Invocation) (cause *Error, e *ActivityEntry)) (int, error)
	// InvocationFinish is InvocationUpdate's compare-and-swap and, only when
	// the swap succeeds, ActivityAppend of e, in one transaction: a call's
	// outcome and its ledger entry are written together or not at all. On a
	// failed compare it appends nothing, leaves e as it was, and returns the
	// current record with ErrConflict, exactly like InvocationUpdate.
	InvocationFinish(ctx context.Context, inv Invocation, e *ActivityEntry, from ...Status) (Invocation, error)
	// InvocationCreateFinished inserts a record that is already terminal —
	// a call that ran before anything was recorded (a read or ui call that
	// finished within the broker's RecordAfter) — and ActivityAppend of e,
	// in one transaction: the record and its ledger entry land together or
	// not at all. ErrConflict if the ID exists (then nothing is appended
	// and e is left as it was); INVALID_INPUT if inv.Status is not
	// terminal.
	InvocationCreateFinished(ctx context.Context, inv Invocation, e *ActivityEntry) error
	// InvocationList returns the records matching f, newest first (by
	// creation time, then ID).
	InvocationList(ctx context.Context, f InvocationFilter) ([]Invocation, error)

	// SessionCreate stores a new browser session (ErrConflict if the ID
	// exists), so a tab's token can be checked on any replica.
	SessionCreate(ctx context.Context, s Session) error
	// SessionGet returns one session, closed or not, or ErrNotFound.
	SessionGet(ctx context.Context, id string) (Session, error)
	// SessionClose stamps ClosedAt (a second close keeps the first time),
	// or returns ErrNotFound.
	SessionClose(ctx context.Context, id string, at time.Time) error
	// SessionAdvertise stores tools as session id's advertisement,
	// replacing the one before, and stamps SeenAt. ErrNotFound for an
	// unknown session; SESSION_GONE for a closed one (nothing written).
	SessionAdvertise(ctx context.Context, id string, tools []Tool, at time.Time) error
	// SessionReport stores r as what session id last reported of its
	// workspace, replacing the report before, and stamps SeenAt. The
	// errors are SessionAdvertise's.
	SessionReport(ctx context.Context, id string, r TabReport, at time.Time) error
	// SessionStream records where session id's event stream is: attached,
	// replica holds it now (Stream = replica); detached, replica no longer
	// does, which clears Stream only while replica still holds it (a stream
	// that moved to another replica stays recorded there). Either stamps
	// StreamAt and SeenAt when it changes Stream. ErrNotFound for an
	// unknown session.
	SessionStream(ctx context.Context, id, replica string, attached bool, at time.Time) error
	// SessionList returns the open sessions f selects, the newest first
	// (by creation time, then ID).
	SessionList(ctx context.Context, f SessionFilter) ([]Session, error)

	// SettingGet returns the value of a daemon-wide setting made at run
	// time (such as the host's canvas layer), or ErrNotFound if it was
	// never set.
	SettingGet(ctx context.Context, key string) (json.RawMessage, error)
	// SettingPut replaces setting key's value (a JSON document; INVALID_INPUT
	// otherwise), so every replica reads the same.
	SettingPut(ctx context.Context, key string, value json.RawMessage, at time.Time) error

	// SearchExampleAdd records ex, once per (tool, query, caller): a repeat
	// only moves its time and invocation. What ex's invocation taught the
	// tool under another query is replaced (a later call after the same
	// search changed which sentences the tool learns). It then keeps only the caller's
	// perTool newest examples of the tool and perCaller newest overall
	// (values ≤ 0 leave that bound off), in the same transaction, so one
	// caller's influence stays bounded.
	SearchExampleAdd(ctx context.Context, ex SearchExample, perTool, perCaller int) error
	// SearchExampleList aggregates the stored examples of tool ("" means
	// every tool) by query: the number of distinct callers and the last
	// use; ordered by tool, then most recent use first, then query.
	SearchExampleList(ctx context.Context, tool string) ([]LearnedQuery, error)
	// SearchExampleDelete deletes every example of tool and returns how
	// many.
	SearchExampleDelete(ctx context.Context, tool string) (int, error)
	// SearchExampleDeleteInvocation deletes the examples that invocation
	// id made (its call was reversed) and returns their tools.
	SearchExampleDeleteInvocation(ctx context.Context, id string) ([]string, error)
	// SearchExampleExpire deletes at most limit (and at most sqlstore's
	// batch) examples recorded before before, oldest first, and returns
	// how many. Retention.
	SearchExampleExpire(ctx context.Context, before time.Time, limit int) (int, error)

	// QuotaAdd adds add to subject's usage of day (a UTC date,
	// "2006-01-02") and returns the usage after, unless a call would take
	// Calls past limit.Calls (a zero limit is none): then it adds nothing
	// and returns the usage as it stands with ok false. Tokens and cost are
	// added whatever their limits (they are spent before they are known);
	// callers check them before spending. A negative amount gives back (a
	// call another quota refused). Atomic across replicas.
	QuotaAdd(ctx context.Context, subject, day string, add, limit QuotaUsage) (used QuotaUsage, ok bool, err error)
	// QuotaGet returns subject's usage of day (zero when none).
	QuotaGet(ctx context.Context, subject, day string) (QuotaUsage, error)
	// QuotaList returns the usage rows of day, most calls first, at most
	// limit (and at most sqlstore's batch).
	QuotaList(ctx context.Context, day string, limit int) ([]QuotaRow, error)
	// QuotaExpire deletes at most limit usage rows of days before day.
	QuotaExpire(ctx context.Context, before string, limit int) (int, error)

	// PanelRegistrationPut upserts a batch of panel registrations in one
	// transaction: all or nothing (INVALID_INPUT for an unknown kind, an
	// empty name or a definition that is not a JSON object).
	PanelRegistrationPut(ctx context.Context, regs []PanelRegistration, at time.Time) error
	// PanelRegistrationDelete removes one registration, or returns
	// ErrNotFound.
	PanelRegistrationDelete(ctx context.Context, kind, name string) error
	// PanelRegistrationList returns every registration ordered by kind,
	// then name.
	PanelRegistrationList(ctx context.Context) ([]PanelRegistration, error)
	// PanelInstancePut writes a panel instance as a compare-and-swap on its
	// version: prev 0 inserts it (ErrConflict if the ID exists); otherwise
	// it replaces the stored instance only if the stored version is prev,
	// and else changes nothing and returns the current instance with
	// ErrConflict (ErrNotFound when there is none). p.Version must be
	// greater than prev.
	PanelInstancePut(ctx context.Context, p PanelInstance, prev int64) (PanelInstance, error)
	// PanelInstanceGet returns one instance or ErrNotFound.
	PanelInstanceGet(ctx context.Context, id string) (PanelInstance, error)
	// PanelInstanceList returns a session's instances in Seq order.
	PanelInstanceList(ctx context.Context, sessionID string) ([]PanelInstance, error)
	// PanelInstanceDelete removes one instance; an unknown ID is not an
	// error (closing twice closes once).
	PanelInstanceDelete(ctx context.Context, id string) error
	// PanelInstanceDeleteSession removes every instance of a session (its
	// tab is gone for good) and returns how many.
	PanelInstanceDeleteSession(ctx context.Context, sessionID string) (int, error)

	// ActivityAppend appends e, assigning ID, PrevHash and Hash inside one
	// transaction so the chain has no forks.
	ActivityAppend(ctx context.Context, e *ActivityEntry) error
	// ActivityList pages the ledger oldest first (see ActivityFilter).
	ActivityList(ctx context.Context, f ActivityFilter) ([]ActivityEntry, error)
	// ActivityHead returns the ID of the last ledger entry (0 when empty),
	// so a ledger can notice entries other replicas wrote.
	ActivityHead(ctx context.Context) (int64, error)

	// ChatGet returns the history of a chat session, or ErrNotFound.
	ChatGet(ctx context.Context, sessionID string) (ChatHistory, error)
	// ChatPut stores h.Messages as the history of h.SessionID, creating the
	// row (with h.Owner) or replacing the messages of an existing one (its
	// owner is kept), and returns the stored record with its new revision.
	ChatPut(ctx context.Context, h ChatHistory) (ChatHistory, error)

	// TokenCreate inserts an agent token (ErrConflict if the ID exists).
	TokenCreate(ctx context.Context, t AgentToken) error
	// TokenGet returns one token, revoked or not, or ErrNotFound.
	TokenGet(ctx context.Context, id string) (AgentToken, error)
	// TokenList returns every token, oldest first.
	TokenList(ctx context.Context) ([]AgentToken, error)
	// TokenRevoke stamps RevokedAt (a second revoke keeps the first time)
	// and returns the token, or ErrNotFound.
	TokenRevoke(ctx context.Context, id string, at time.Time) (AgentToken, error)

	// SigningKeyCreate inserts a signing key (ErrConflict if its ID exists).
	SigningKeyCreate(ctx context.Context, k SigningKey) error
	// SigningKeyList returns the keys created at or after since, newest
	// first.
	SigningKeyList(ctx context.Context, since time.Time) ([]SigningKey, error)
	// SigningKeyDelete removes the keys created before before (retired keys
	// whose every signature has expired) and returns how many it removed.
	SigningKeyDelete(ctx context.Context, before time.Time) (int, error)

	// OAuthPut inserts a record of the embedded authorization server
	// (ErrConflict if its kind and ID exist).
	OAuthPut(ctx context.Context, r OAuthRecord) error
	// OAuthGet returns one record or ErrNotFound.
	OAuthGet(ctx context.Context, kind, id string) (OAuthRecord, error)
	// OAuthUpdate replaces a record's User and Data, only while it is
	// unused; ErrNotFound when it is missing, ErrConflict when used.
	OAuthUpdate(ctx context.Context, kind, id, user string, data []byte) error
	// OAuthUse stamps UsedAt on a record not used before and returns it;
	// ErrNotFound when missing, ErrConflict (with the record) when it was
	// used already: a one-time code or ticket is used by one caller only,
	// whichever replica the callers reach.
	OAuthUse(ctx context.Context, kind, id string, at time.Time) (OAuthRecord, error)
	// OAuthRevoke stamps RevokedAt (a second revoke keeps the first time)
	// and returns the record, or ErrNotFound.
	OAuthRevoke(ctx context.Context, kind, id string, at time.Time) (OAuthRecord, error)
	// OAuthList returns the records of kind for user (every user's when
	// user is ""), newest first.
	OAuthList(ctx context.Context, kind, user string) ([]OAuthRecord, error)
	// OAuthDeleteExpired removes records that expired before before and
	// returns how many it removed.
	OAuthDeleteExpired(ctx context.Context, before time.Time) (int, error)

	// ApprovalCreate inserts a request (ErrConflict if its ID or invocation
	// already has one).
	ApprovalCreate(ctx context.Context, a ApprovalRequest) error
	// ApprovalGet returns one request or ErrNotFound.
	ApprovalGet(ctx context.Context, id string) (ApprovalRequest, error)
	// ApprovalList returns requests matching f, oldest first.
	ApprovalList(ctx context.Context, f ApprovalFilter) ([]ApprovalRequest, error)
	// ApprovalDecide is a compare-and-swap from pending: it stores a's
	// Status, Reason, DecidedBy, Channel and DecidedAt only if the stored
	// request is still pending and returns the stored request; otherwise it
	// changes nothing and returns the current request with ErrConflict.
	ApprovalDecide(ctx context.Context, a ApprovalRequest) (ApprovalRequest, error)
	// ApprovalConsume marks an approved request used, once: ErrConflict
	// with the current request if it is not approved or already consumed.
	ApprovalConsume(ctx context.Context, id string, at time.Time) (ApprovalRequest, error)
	// ApprovalCancelPending moves every pending request to cancelled with
	// reason (at start: nobody waits for them any more) and returns how
	// many it moved.
	ApprovalCancelPending(ctx context.Context, at time.Time, reason string) (int, error)

	// JobCreate inserts a job (ErrConflict if the ID exists).
	JobCreate(ctx context.Context, j Job) error
	// JobGet returns one job or ErrNotFound.
	JobGet(ctx context.Context, id string) (Job, error)
	// JobUpdate is a compare-and-swap like InvocationUpdate: it stores j's
	// status, progress, message, result, error and times only if the
	// stored status is one of from.
	JobUpdate(ctx context.Context, j Job, from ...JobStatus) (Job, error)
	// JobFailRunning moves every running job owned by one of replicas to
	// failed with cause (at start, or when a survivor claims a dead
	// replica: a job whose process died is never left running) and returns
	// how many it moved. No replicas means every running job (one daemon
	// per store).
	JobFailRunning(ctx context.Context, at time.Time, cause *Error, replicas ...string) (int, error)
	// JobList returns the jobs matching f, newest first (by creation time,
	// then ID).
	JobList(ctx context.Context, f JobFilter) ([]Job, error)

	// IdempotencyClaim stores r and inserts inv (whose ID is
	// r.InvocationID) in one transaction, unless a record for (r.Scope,
	// r.Key) created at or after notBefore exists: then it writes nothing
	// and returns the stored record and false. An older record is
	// replaced once its invocation is terminal (or gone); one whose call
	// is still in flight is kept whatever its age, so a retry finds that
	// call rather than starting another. A key is
	// never stored without its invocation, so no crash can leave a key
	// behind that nothing settles.
	IdempotencyClaim(ctx context.Context, r IdempotencyRecord, notBefore time.Time, inv Invocation) (IdempotencyRecord, bool, error)
	// IdempotencyGet returns the record of (scope, key) or ErrNotFound.
	IdempotencyGet(ctx context.Context, scope, key string) (IdempotencyRecord, error)
	// IdempotencyRelease deletes the claim of (scope, key) if it still
	// names invocationID.
	IdempotencyRelease(ctx context.Context, scope, key, invocationID string) error
	// IdempotencyReleaseOrphans deletes every key whose invocation does not
	// exist (left by a daemon that claimed keys and recorded calls in two
	// transactions) and returns how many; called at start.
	IdempotencyReleaseOrphans(ctx context.Context) (int, error)

	// ReplicaRegister inserts a replica (ErrConflict if its ID exists).
	ReplicaRegister(ctx context.Context, r Replica) error
	// ReplicaHeartbeat adds one to Beats and stamps HeartbeatAt, and
	// returns the stored replica; ErrConflict with the current record if a
	// survivor claimed it (its work was resolved: it must stop), ErrNotFound
	// if there is none.
	ReplicaHeartbeat(ctx context.Context, id string, at time.Time) (Replica, error)
	// ReplicaStop stamps StoppedAt (a clean shutdown) or returns ErrNotFound.
	ReplicaStop(ctx context.Context, id string, at time.Time) error
	// ReplicaList returns every registered replica, oldest start first.
	ReplicaList(ctx context.Context) ([]Replica, error)
	// ReplicaClaim is a compare-and-swap: it stores ClaimedBy = by and
	// ClaimedAt = at only if the replica is unclaimed and its Beats still
	// equal beats, and returns the stored replica; otherwise it changes
	// nothing and returns the current record with ErrConflict. Of several
	// survivors claiming at once, exactly one wins.
	ReplicaClaim(ctx context.Context, id, by string, beats int64, at time.Time) (Replica, error)
	// ReplicaDelete removes a replica whose work has been resolved
	// (ErrNotFound if there is none).
	ReplicaDelete(ctx context.Context, id string) error
	// AgentPut inserts or replaces the record of agent session
	// r.Session.ID. An ended record (Session.EndedAt set) is final:
	// replacing it is ErrConflict, so of a survivor's end and a late
	// write of its owner the first stands. LastSeen never moves back (a
	// heartbeat another replica recorded stays).
	AgentPut(ctx context.Context, r AgentRecord) error
	// AgentGet returns one agent record or ErrNotFound.
	AgentGet(ctx context.Context, id string) (AgentRecord, error)
	// AgentList returns the agent records matching f, newest start first
	// (then by ID).
	AgentList(ctx context.Context, f AgentFilter) ([]AgentRecord, error)
	// AgentTouch moves a live record's LastSeen forward to at (a
	// heartbeat, on whichever replica it lands) and returns the record;
	// ErrConflict with the record once it ended, ErrNotFound without one.
	AgentTouch(ctx context.Context, id string, at time.Time) (AgentRecord, error)
	// AgentPrune deletes the ended records beyond the newest keep (by
	// EndedAt) and returns how many it deleted; live ones are kept.
	AgentPrune(ctx context.Context, keep int) (int, error)
	// InvocationAdopt moves every non-terminal invocation owned by replica
	// from to replica to (a survivor keeps a dead replica's calls that wait
	// for an approval) and returns how many it moved.
	InvocationAdopt(ctx context.Context, from, to string) (int, error)
	// InvocationExpire deletes at most limit terminal invocation records
	// (and at most sqlstore's batch, 128, in one short transaction) that
	// were created and finished before before, oldest first, and returns
	// how many it deleted. It never deletes a record in flight, one a
	// pending approval waits on, one an idempotency key still names (a
	// retry would find no outcome and run the call again), or one whose job
	// is still running; the decided approval of a deleted record goes with
	// it. The ledger is never touched. Retention (docs/architecture.md).
	InvocationExpire(ctx context.Context, before time.Time, limit int) (int, error)
	// IdempotencyExpire deletes at most limit idempotency keys (at most
	// the same batch) created before before, oldest first, and returns how
	// many it deleted. A key whose invocation is not terminal is never
	// deleted: its call may still run, and a retry must find it.
	IdempotencyExpire(ctx context.Context, before time.Time, limit int) (int, error)

	// RunCreate stores a new run (status running, no events yet). A stored
	// run of the same ID that ended waiting (RunWaiting: an interrupted run,
	// whose resume takes its ID over) is replaced and its events deleted;
	// any other is a CONFLICT.
	RunCreate(ctx context.Context, r RunRecord) error
	// RunAppend is the owning replica's flush: it appends events (their
	// Seq continuing the stored ones; a gap or a repeat is a CONFLICT) and
	// stores r's mutable fields (status, model, steps, usage, cost, error,
	// event count, waiting approvals, finish time), in one transaction,
	// only while the stored run is still r.Replica's. ErrConflict when a
	// survivor ended it (then nothing is written), ErrNotFound when there
	// is no such run.
	RunAppend(ctx context.Context, r RunRecord, events []RunEvent) error
	// RunGet returns one stored run or ErrNotFound.
	RunGet(ctx context.Context, id string) (RunRecord, error)
	// RunEventList returns at most limit events of run id from seq from
	// on, in order (none for an unknown run).
	RunEventList(ctx context.Context, id string, from, limit int) ([]RunEvent, error)
	// RunList returns stored runs, newest first (by creation time, then
	// ID).
	RunList(ctx context.Context, f RunFilter) ([]RunRecord, error)
	// RunFailInFlight visits every running run owned by one of replicas (a
	// dead replica's, or this daemon's previous start's). end returns the
	// run's final record — its Status, Error, FinishedAt and Replica (the
	// survivor's) are stored — and the terminal event, appended after the
	// stored ones (its seq is the stored count); both are written in one
	// transaction, only if the run is still running there. It returns how
	// many runs it ended.
	RunFailInFlight(ctx context.Context, replicas []string, end func(RunRecord) (final RunRecord, event []byte)) (int, error)
	// RunExpire deletes at most limit (at most sqlstore's batch, 128)
	// finished runs — succeeded, failed or cancelled — that finished
	// before before, with their events, oldest first, and returns how many.
	// A running or waiting run is never deleted.
	RunExpire(ctx context.Context, before time.Time, limit int) (int, error)

	// TaskCreate inserts a delegated task at revision 1 (ErrConflict if
	// the ID exists).
	TaskCreate(ctx context.Context, t Task) error
	// TaskGet returns one task or ErrNotFound.
	TaskGet(ctx context.Context, id string) (Task, error)
	// TaskUpdate is a compare-and-swap on the revision: it stores t (its
	// status, replica and record) only if the stored revision is still
	// t.Revision and returns it at the next revision; otherwise it changes
	// nothing and returns the current task with ErrConflict.
	TaskUpdate(ctx context.Context, t Task) (Task, error)
	// TaskList returns the tasks f selects, newest first (by creation
	// time, then ID).
	TaskList(ctx context.Context, f TaskFilter) ([]Task, error)

	// Close releases the database; every later call fails with
	// CodeUnavailable. It is safe to call more than once.
	Close() error
}

// Durability says which failures a committed write survives. Drivers map
// it to their engine's setting; docs/architecture.md ("Durability") states
// the contract and bench/README.md its measured cost.
type Durability string

const (
	// DurabilityProcess: a commit survives the daemon's crash (SIGKILL,
	// panic); an OS crash or power loss may roll back the last commits.
	// SQLite synchronous=NORMAL in WAL mode; Postgres synchronous_commit=off.
	DurabilityProcess Durability = "process"
	// DurabilityPower: a commit survives an OS crash and a power loss once
	// it is acknowledged. SQLite synchronous=FULL; Postgres
	// synchronous_commit=on.
	DurabilityPower Durability = "power"
)

// ParseDurability reads a durability setting; "" is the driver's default.
func ParseDurability(s string) (Durability, error) {
	switch d := Durability(s); d {
	case "", DurabilityProcess, DurabilityPower:
		return d, nil
	}
	return "", Errorf(CodeInvalidInput, "durability %q: use process (survive a daemon crash) or power (survive an OS crash or power loss)", s)
}
