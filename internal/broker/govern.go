package broker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/canonjson"
	"github.com/switchboardhq/switchboard/internal/ratelimit"
)

// The governed parts of the call path: approval, jobs, rate limits and
// idempotency keys. None of them costs a store write on a call that needs
// no approval and carries no key.

// Defaults for the governance options.
const (
	// DefaultJobTimeout bounds a job whose tool sets no timeoutMs.
	DefaultJobTimeout = time.Hour
	// DefaultIdempotencyTTL is how long an idempotency key is remembered.
	DefaultIdempotencyTTL = 24 * time.Hour
	// maxKeyLen bounds an idempotency key.
	maxKeyLen = 255
)

// callWithApproval records the call as awaiting_approval, asks the policy
// for a decision and waits for it — holding no concurrency slot, and before
// the tool's timeout starts — then runs the call like any other.
func (b *Broker) callWithApproval(ctx context.Context, c *call, req CallRequest) (switchboard.Invocation, error) {
	c.announce = true // the decision may be made, and the outcome asked for, anywhere
	inv := b.newInvocation(c, req, switchboard.StatusAwaitingApproval)
	// The approval's id is minted with the record, so the record names
	// its approval from its first write (no second write, no search); the
	// request itself is stored next, under that id.
	inv.ApprovalID = NewApprovalID()
	if err := b.record(ctx, c, inv); err != nil {
		return switchboard.Invocation{}, err
	}
	id, err := b.policy.RequestApproval(ctx, inv, c.tool)
	if err != nil {
		return b.finish(ctx, ctx, c, inv, nil, err)
	}
	if req.OnRecord != nil {
		req.OnRecord(inv)
	}
	if err := b.policy.AwaitApproval(ctx, id, inv); err != nil {
		if req.Durable != nil && errors.Is(context.Cause(ctx), req.Durable) && errors.Is(err, req.Durable) || b.stopped(ctx, req, err) {
			return inv, err // left awaiting approval, to be resumed
		}
		if ctx.Err() != nil && switchboard.CodeOf(err) != switchboard.CodeUserDenied {
			err = ctxError(ctx)
		}
		return b.approvalFailed(ctx, c, inv, err)
	}
	return b.runApproved(ctx, c, inv)
}

// approvalFailed ends a call whose wait for approval failed — denied,
// expired, cancelled, or its approval already used — but only while the
// call still awaits approval: a replica that took the call over (this one
// was cut off from the store past the replica timeout) may have used the
// approval and be running it, and that run's outcome is the call's, not
// this wait's failure written over it.
func (b *Broker) approvalFailed(ctx context.Context, c *call, inv switchboard.Invocation, err error) (switchboard.Invocation, error) {
	if b.approvalUsed(ctx, inv) {
		// Another waiter — a survivor that took the call over — consumed
		// the approval, and with it the one right to run the call, which
		// it may not have marked dispatched yet: this wait's failure must
		// not end the record first. Its run's outcome is this call's.
		return b.outcome(ctx, inv.ID)
	}
	c.from = []switchboard.Status{switchboard.StatusAwaitingApproval}
	stored, ferr := b.finish(ctx, ctx, c, inv, nil, err)
	if stored.Status.Terminal() || stored.ID == "" {
		return stored, ferr
	}
	// Taken over and running elsewhere: its outcome, when it comes.
	return b.outcome(context.WithoutCancel(ctx), inv.ID)
}

// outcome awaits the end of call id, run by whoever runs it, and answers
// with it as Call would.
func (b *Broker) outcome(ctx context.Context, id string) (switchboard.Invocation, error) {
	got, err := b.Await(ctx, id, Terminal)
	if err != nil {
		return got, err
	}
	return got, invocationError(got)
}

// approvalUsed reports whether the approval inv awaits was consumed: by
// whoever's wait got it first, which then runs the call.
func (b *Broker) approvalUsed(ctx context.Context, inv switchboard.Invocation) bool {
	if inv.ApprovalID == "" {
		return false
	}
	a, err := b.store.ApprovalGet(context.WithoutCancel(ctx), inv.ApprovalID)
	return err == nil && !a.ConsumedAt.IsZero()
}

// runApproved runs an approved call recorded awaiting_approval: it waits
// for a slot — the tool's timeout starts now — and dispatches it.
func (b *Broker) runApproved(ctx context.Context, c *call, inv switchboard.Invocation) (switchboard.Invocation, error) {
	timeout := b.timeoutFor(c.tool)
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, timeoutError(c.tool.Name, timeout))
	defer cancel()
	release, err := b.limits.acquire(cctx, c.tool.Name, b.limitFor(c.tool))
	if err != nil {
		return b.finish(ctx, cctx, c, inv, nil, b.queueError(cctx, c.tool.Name, err))
	}
	inv.Status, inv.UpdatedAt = switchboard.StatusDispatched, b.now()
	stored, err := b.store.InvocationUpdate(ctx, inv, switchboard.StatusAwaitingApproval)
	if err != nil {
		release()
		if stored.Status.Terminal() { // ended meanwhile (a restart sweep): its outcome stands
			return stored, invocationError(stored)
		}
		return b.finish(ctx, cctx, c, inv, nil, err)
	}
	return b.dispatch(ctx, cctx, c, stored, timeout, release)
}

// Adopt resumes (Resume) a call whose approval outlived its replica — a
// previous start, or a replica that died — as a call of this broker's
// own: it waits for the decision and, approved, runs the call once, in
// the background, until Stop, which leaves it awaiting approval for the
// next start. The restart sweep and a survivor's takeover hand calls
// here.
func (b *Broker) Adopt(id, approvalID string) error {
	ctx, release, err := b.detach(context.Background())
	if err != nil {
		return err
	}
	go func() {
		defer release()
		got, err := b.Resume(ctx, id, approvalID)
		if ctx.Err() == nil {
			b.log.Info("resumed call ended", "invocation", id, "approval", approvalID, "status", got.Status, "err", err)
		}
	}()
	return nil
}

// Resume carries on a call that a previous run recorded awaiting the
// approval approvalID, whose caller is gone: it waits for the decision and,
// approved, runs the call once, recording the outcome in its invocation
// (GET /invocations/{id} reads it; a retry with the call's idempotency key
// replays it). Denied or expired, the record ends so. When ctx ends first
// (the daemon stops) the record is left awaiting approval for the next
// start, and ctx's cause is returned. The tool is resolved when the
// decision arrives, by name and as the catalog has it then; the approval
// binds the tool's version and arguments, so a changed tool is refused.
func (b *Broker) Resume(ctx context.Context, id, approvalID string) (switchboard.Invocation, error) {
	inv, err := b.store.InvocationGet(ctx, id)
	if err != nil {
		return inv, err
	}
	if inv.Status != switchboard.StatusAwaitingApproval || b.policy == nil {
		if !inv.Status.Terminal() && b.policy != nil {
			// Approved and running already, by the waiter that got the
			// approval first: its outcome is the answer.
			return b.outcome(ctx, inv.ID)
		}
		return inv, invocationError(inv)
	}
	c := &call{input: inv.Input, announce: true}
	if c.caller, c.hasCaller = parsePrincipal(inv.Caller); c.hasCaller {
		// The person the agent acted for, from the record (an older
		// record has it only on the approval, asked of that person):
		// without it the call would run for the operator (the assertion's
		// sub, a Go tool's caller).
		if c.caller.Kind != switchboard.PrincipalUser {
			c.caller.User = inv.User
			if a, err := b.store.ApprovalGet(ctx, approvalID); inv.User == "" && err == nil {
				c.caller.User = a.User
			}
		}
		ctx = switchboard.WithPrincipal(ctx, c.caller) // the tool runs as its caller
	}
	if err := b.policy.AwaitApproval(ctx, approvalID, inv); err != nil {
		if ctx.Err() != nil {
			return inv, context.Cause(ctx)
		}
		if inv.ApprovalID == "" {
			inv.ApprovalID = approvalID // a record written before records named it
		}
		return b.approvalFailed(ctx, c, inv, err)
	}
	// The catalog as the approver saw it: scope was checked when the call
	// was made; the user's approval is what lets it run now.
	rctx := context.WithoutCancel(context.Background())
	if c.tool, err = b.reg.Get(rctx, inv.Tool); err == nil {
		c.in, c.out, err = b.reg.Schemas(rctx, inv.Tool)
	}
	if err != nil {
		return b.finish(ctx, ctx, c, inv, nil, err)
	}
	return b.runApproved(ctx, c, inv)
}

// NewApprovalID returns a fresh approval request id ("apr_" and 128 random
// bits, hex encoded): unguessable, as a decision names it.
func NewApprovalID() string { return "apr_" + NewID() }

// parsePrincipal reads an invocation's Caller ("kind:id") back.
func parsePrincipal(s string) (switchboard.Principal, bool) {
	kind, id, ok := strings.Cut(s, ":")
	if !ok || id == "" {
		return switchboard.Principal{}, false
	}
	return switchboard.Principal{Kind: switchboard.PrincipalKind(kind), ID: id}, true
}

// SweptEntry is the tool.call ledger entry of a record the start-up sweep
// ends (inv as it will be stored, with its cause): the call's one entry,
// as finish would have written it.
func SweptEntry(inv switchboard.Invocation) *switchboard.ActivityEntry {
	return (&Broker{now: time.Now}).entry(recordCall(inv), inv)
}

// recordCall is the call inv records, as far as its ledger entry needs
// it: for an end whose call does not wait in this process.
func recordCall(inv switchboard.Invocation) *call {
	c := &call{}
	c.caller, c.hasCaller = parsePrincipal(inv.Caller)
	return c
}

// Jobs runs the work of `job` tools in the background; the job package
// implements it.
type Jobs interface {
	// Start records a running job for the invocation inv and runs work in
	// the background with a context of its own (cancelled by the job's
	// cancel, carrying ctx's principal and progress reporting). If it
	// returns an error, work was not started.
	Start(ctx context.Context, inv switchboard.Invocation, work func(ctx context.Context) (json.RawMessage, error)) (switchboard.Job, error)
}

// jobHandle is the result of a call of a job tool: the call ends at once.
type jobHandle struct {
	JobID  string                `json:"jobId"`
	Status switchboard.JobStatus `json:"status"`
}

// startJob hands the call's execution to Jobs. The job keeps the call's
// concurrency slot until it ends; its own deadline is the tool's timeout,
// else Options.JobTimeout.
func (b *Broker) startJob(ctx context.Context, c *call, inv switchboard.Invocation, release func()) (json.RawMessage, error) {
	timeout := b.opts.JobTimeout
	if c.tool.TimeoutMs > 0 {
		timeout = time.Duration(c.tool.TimeoutMs) * time.Millisecond
	}
	work := func(jctx context.Context) (json.RawMessage, error) {
		jctx, cancel := context.WithTimeoutCause(jctx, timeout, timeoutError(c.tool.Name, timeout))
		defer cancel()
		result, err := b.execute(jctx, c, release)
		if err == nil {
			result, err = b.checkResult(c, result)
		}
		return result, err
	}
	j, err := b.jobs.Start(ctx, inv, work)
	if err != nil {
		release()
		return nil, err
	}
	return json.Marshal(jobHandle{JobID: j.ID, Status: j.Status})
}

// Rate is a token bucket's refill rate and burst (the limiter itself is
// internal; embedders tune it through RateLimit).
type Rate = ratelimit.Rate

// RateLimit bounds calls per principal (Principal.Key: an agent acting
// for alice and the same agent name acting for bob are two) and per tool
// with token buckets.
// By default only agents are limited: they are what can run away.
type RateLimit struct {
	PerPrincipal Rate
	PerTool      Rate
	// Users also limits user principals and calls without a principal.
	Users bool
}

type rates struct {
	principal, tool *ratelimit.Limiter
	opts            RateLimit
}

func newRates(rl *RateLimit, now func() time.Time) *rates {
	if rl == nil {
		return nil
	}
	return &rates{principal: ratelimit.New(rl.PerPrincipal, now), tool: ratelimit.New(rl.PerTool, now), opts: *rl}
}

// admit takes a token from the caller's and the tool's buckets, or refuses
// with RATE_LIMITED and how long to wait (details.retryAfterMs; the HTTP
// transport also sets Retry-After).
func (r *rates) admit(c *call) error {
	if r == nil {
		return nil
	}
	agent := c.hasCaller && c.caller.Kind == switchboard.PrincipalAgent
	if !agent && !r.opts.Users {
		return nil
	}
	who := "anonymous"
	if c.hasCaller {
		who = c.caller.Key() // one agent name acting for two users: two buckets
	}
	if ok, wait := r.principal.Allow(who); !ok {
		return limited(wait, "principal", r.opts.PerPrincipal, "%s is calling tools faster than %g per second; retry in %s", who, r.opts.PerPrincipal.PerSecond, wait.Round(time.Millisecond))
	}
	if ok, wait := r.tool.Allow(c.tool.Name); !ok {
		return limited(wait, "tool", r.opts.PerTool, "%s is being called faster than %g per second; retry in %s", c.tool.Name, r.opts.PerTool.PerSecond, wait.Round(time.Millisecond))
	}
	return nil
}

func limited(wait time.Duration, scope string, rate ratelimit.Rate, format string, args ...any) error {
	ms := max(wait.Milliseconds(), 1)
	return switchboard.Errorf(switchboard.CodeRateLimited, format, args...).WithDetails(map[string]any{
		"retryAfterMs": ms, "limit": scope, "perSecond": rate.PerSecond, "burst": rate.Burst,
	})
}

// claim is the idempotency key a call will claim when it is recorded.
type claim struct{ scope, key, digest string }

// errClaimLost is record's answer when another call claimed the key
// between claimKey's check and the record: nothing was written.
var errClaimLost = errors.New("idempotency key claimed by another call")

// record stores inv — with the call's idempotency key in the same
// transaction when it has one (Store.IdempotencyClaim), so a key never
// exists without the invocation it names.
func (b *Broker) record(ctx context.Context, c *call, inv switchboard.Invocation) error {
	if c.claim == nil {
		return b.store.InvocationCreate(ctx, inv)
	}
	now := b.now()
	r := switchboard.IdempotencyRecord{Scope: c.claim.scope, Key: c.claim.key, Digest: c.claim.digest, InvocationID: inv.ID, CreatedAt: now}
	_, fresh, err := b.store.IdempotencyClaim(ctx, r, now.Add(-b.opts.IdempotencyTTL), inv)
	if err == nil && !fresh {
		err = errClaimLost
	}
	return err
}

// claimKey checks req's idempotency key before the call is recorded. For
// a key already used it returns the stored outcome (a replay, record and
// error as the first call ended), CONFLICT while that call is still in
// flight, or IDEMPOTENCY_CONFLICT when the key was used for a different
// call; for a free key it returns a zero record and nil, and the key is
// claimed with the record (record). A replay so never waits for a
// concurrency slot.
//
// With req.AwaitInFlight, a call in flight is waited for instead of
// answered with CONFLICT: until its record is terminal (a replay), or ctx
// ends — through Await, which is woken wherever the twin ends, and
// re-reads the store for a twin ended by a survivor's sweep.
func (b *Broker) claimKey(ctx context.Context, c *call, req *CallRequest) (switchboard.Invocation, error) {
	for {
		inv, busy, err := b.tryClaim(ctx, c, req)
		if busy && !req.AwaitInFlight {
			return switchboard.Invocation{}, err // CONFLICT: retry later
		}
		if !busy {
			return inv, err
		}
		if b.awaitHook != nil {
			b.awaitHook(req.IdempotencyKey)
		}
		if _, werr := b.Await(ctx, inv.ID, Terminal); werr != nil && ctx.Err() != nil {
			return switchboard.Invocation{}, annotate(ctxError(ctx), "while waiting for the first call with idempotency key "+strconv.Quote(req.IdempotencyKey))
		}
		// Ended (or unreadable): claim again, which replays the outcome.
	}
}

// tryClaim is one check of claimKey; busy reports that the key's call is
// still in flight (err is then CONFLICT).
func (b *Broker) tryClaim(ctx context.Context, c *call, req *CallRequest) (inv switchboard.Invocation, busy bool, err error) {
	key := req.IdempotencyKey
	if len(key) > maxKeyLen {
		return switchboard.Invocation{}, false, switchboard.Errorf(switchboard.CodeInvalidInput, "idempotency key is %d bytes; the limit is %d", len(key), maxKeyLen)
	}
	scope := req.IdempotencyScope
	if scope == "" {
		scope = "anonymous"
		if c.hasCaller {
			scope = c.caller.Key() // one user's key never replays another's call
		}
	}
	c.claim = &claim{scope: scope, key: key, digest: callDigest(c, *req)}
	got, err := b.store.IdempotencyGet(ctx, scope, key)
	switch {
	case switchboard.CodeOf(err) == switchboard.CodeNotFound:
		return switchboard.Invocation{}, false, nil
	case err != nil:
		return switchboard.Invocation{}, false, err
	}
	if got.CreatedAt.Before(b.now().Add(-b.opts.IdempotencyTTL)) {
		// Past its TTL the key is free once its call is terminal; until
		// then it holds, so a retry finds that call
		// instead of starting a second one. The store's claim applies
		// the same rule.
		prev, err := b.store.InvocationGet(ctx, got.InvocationID)
		if err != nil && switchboard.CodeOf(err) != switchboard.CodeNotFound {
			return switchboard.Invocation{}, false, err
		}
		if err != nil || prev.Status.Terminal() {
			return switchboard.Invocation{}, false, nil // expired: the claim replaces it
		}
	}
	if got.Digest != c.claim.digest && got.Digest != legacyDigest(c, *req) {
		return switchboard.Invocation{}, false, switchboard.Errorf(switchboard.CodeIdempotencyConflict,
			"idempotency key %q was already used for a different call (another tool, session or input); nothing was run — use a new key for a new call", key).
			WithDetails(map[string]any{"invocationId": got.InvocationID})
	}
	inv, err = b.store.InvocationGet(ctx, got.InvocationID)
	switch {
	case switchboard.CodeOf(err) == switchboard.CodeNotFound:
		// A key without its invocation was left by an older daemon that
		// claimed the key and recorded the call in two transactions and
		// stopped in between — before the call was recorded, so before it
		// ran (the start-up sweep releases these too). Give it back.
		if rerr := b.store.IdempotencyRelease(ctx, scope, key, got.InvocationID); rerr != nil {
			return switchboard.Invocation{}, false, rerr
		}
		return switchboard.Invocation{}, false, nil
	case err != nil:
		return switchboard.Invocation{}, false, err
	}
	// A key shared across callers (IdempotencyScope: one reversal per
	// entry, whoever asks) replays only a success: one caller's denied or
	// failed attempt must not block another's — the user's own undo after
	// denying an agent's.
	if req.IdempotencyScope != "" && inv.Status.Terminal() && inv.Status != switchboard.StatusSucceeded && !req.retried {
		if rerr := b.store.IdempotencyRelease(ctx, scope, key, got.InvocationID); rerr != nil {
			return switchboard.Invocation{}, false, rerr
		}
		req.retried = true
		return switchboard.Invocation{}, false, nil
	}
	if !inv.Status.Terminal() {
		// The twin in flight, for claimKey to await; the caller that does
		// not await gets only the error.
		return switchboard.Invocation{ID: inv.ID}, true, switchboard.Errorf(switchboard.CodeConflict,
			"a call with idempotency key %q is still in flight (invocation %s, %s); retry later to get its outcome", key, got.InvocationID, inv.Status).
			WithDetails(map[string]any{"invocationId": got.InvocationID, "status": inv.Status})
	}
	return inv, false, invocationError(inv)
}

// callDigest fingerprints what a call does: tool, session and input, the
// input in its canonical form (internal/canonjson), so the same value with
// other whitespace, key order or number spelling (0 and 0.0) is the same
// call. Input that has no canonical form (not valid JSON) counts as its
// bytes.
func callDigest(c *call, req CallRequest) string {
	in, err := canonjson.Canonical(c.input)
	if err != nil {
		in = c.input
	}
	return digest(c, req, in)
}

// legacyDigest is callDigest as it was before inputs were canonicalized
// (compacted bytes), so a key claimed by an older daemon still replays on a
// retry with the very same bytes. It can go once no such key can be alive
// (DefaultIdempotencyTTL after the upgrade).
func legacyDigest(c *call, req CallRequest) string {
	var buf bytes.Buffer
	if json.Compact(&buf, c.input) != nil {
		buf.Reset()
		buf.Write(c.input)
	}
	return digest(c, req, buf.Bytes())
}

func digest(c *call, req CallRequest, in []byte) string {
	h := sha256.New()
	h.Write([]byte(c.tool.Name + "\x00" + req.SessionID + "\x00"))
	h.Write(in)
	return hex.EncodeToString(h.Sum(nil))
}
