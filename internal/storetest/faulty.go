package storetest

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Faulty wraps a Store and fails chosen calls before they reach it, the way
// a busy or failing database would: the call returns
// the injected error and the wrapped store is not touched, so nothing is
// half-written and a retry reaches the real store.
//
// FailNext is asked before every call with the method name ("ToolPut",
// "ActivityAppend", ...); a non-nil result is returned instead of calling
// the store. It may be called from many goroutines at once. Close is never
// intercepted.
type Faulty struct {
	switchboard.Store
	FailNext func(op string) error
}

var _ switchboard.Store = (*Faulty)(nil)

// Busy returns the error a driver reports when its database is locked.
func Busy(op string) error {
	return switchboard.Errorf(switchboard.CodeUnavailable, "%s: database is locked (injected)", op)
}

// FailOnce returns a FailNext that fails the first call of op with err and
// lets every other call through.
func FailOnce(op string, err error) func(string) error {
	return FailTimes(op, 1, err)
}

// FailTimes returns a FailNext that fails the first n calls of op with err.
func FailTimes(op string, n int, err error) func(string) error {
	var left atomic.Int64
	left.Store(int64(n))
	return func(got string) error {
		if got == op && left.Add(-1) >= 0 {
			return err
		}
		return nil
	}
}

func (f *Faulty) fail(op string) error {
	if f.FailNext == nil {
		return nil
	}
	return f.FailNext(op)
}

func (f *Faulty) ToolPut(ctx context.Context, source switchboard.Source, tools []switchboard.Tool) error {
	if err := f.fail("ToolPut"); err != nil {
		return err
	}
	return f.Store.ToolPut(ctx, source, tools)
}

func (f *Faulty) ToolDelete(ctx context.Context, source switchboard.Source, name string) error {
	if err := f.fail("ToolDelete"); err != nil {
		return err
	}
	return f.Store.ToolDelete(ctx, source, name)
}

func (f *Faulty) ToolList(ctx context.Context) ([]switchboard.Tool, error) {
	if err := f.fail("ToolList"); err != nil {
		return nil, err
	}
	return f.Store.ToolList(ctx)
}

func (f *Faulty) CatalogRevision(ctx context.Context) (int64, error) {
	if err := f.fail("CatalogRevision"); err != nil {
		return 0, err
	}
	return f.Store.CatalogRevision(ctx)
}

func (f *Faulty) InvocationCreate(ctx context.Context, inv switchboard.Invocation) error {
	if err := f.fail("InvocationCreate"); err != nil {
		return err
	}
	return f.Store.InvocationCreate(ctx, inv)
}

func (f *Faulty) InvocationGet(ctx context.Context, id string) (switchboard.Invocation, error) {
	if err := f.fail("InvocationGet"); err != nil {
		return switchboard.Invocation{}, err
	}
	return f.Store.InvocationGet(ctx, id)
}

func (f *Faulty) InvocationUpdate(ctx context.Context, inv switchboard.Invocation, from ...switchboard.Status) (switchboard.Invocation, error) {
	if err := f.fail("InvocationUpdate"); err != nil {
		return switchboard.Invocation{}, err
	}
	return f.Store.InvocationUpdate(ctx, inv, from...)
}

func (f *Faulty) InvocationFailInFlight(ctx context.Context, at time.Time, resolve func(switchboard.Invocation) (*switchboard.Error, *switchboard.ActivityEntry)) (int, error) {
	if err := f.fail("InvocationFailInFlight"); err != nil {
		return 0, err
	}
	return f.Store.InvocationFailInFlight(ctx, at, resolve)
}

func (f *Faulty) SessionCreate(ctx context.Context, s switchboard.Session) error {
	if err := f.fail("SessionCreate"); err != nil {
		return err
	}
	return f.Store.SessionCreate(ctx, s)
}

func (f *Faulty) SettingGet(ctx context.Context, key string) (json.RawMessage, error) {
	if err := f.fail("SettingGet"); err != nil {
		return nil, err
	}
	return f.Store.SettingGet(ctx, key)
}

func (f *Faulty) SettingPut(ctx context.Context, key string, value json.RawMessage, at time.Time) error {
	if err := f.fail("SettingPut"); err != nil {
		return err
	}
	return f.Store.SettingPut(ctx, key, value, at)
}

func (f *Faulty) SessionGet(ctx context.Context, id string) (switchboard.Session, error) {
	if err := f.fail("SessionGet"); err != nil {
		return switchboard.Session{}, err
	}
	return f.Store.SessionGet(ctx, id)
}

func (f *Faulty) SessionClose(ctx context.Context, id string, at time.Time) error {
	if err := f.fail("SessionClose"); err != nil {
		return err
	}
	return f.Store.SessionClose(ctx, id, at)
}

func (f *Faulty) SessionAdvertise(ctx context.Context, id string, tools []switchboard.Tool, at time.Time) error {
	if err := f.fail("SessionAdvertise"); err != nil {
		return err
	}
	return f.Store.SessionAdvertise(ctx, id, tools, at)
}

func (f *Faulty) SessionReport(ctx context.Context, id string, r switchboard.TabReport, at time.Time) error {
	if err := f.fail("SessionReport"); err != nil {
		return err
	}
	return f.Store.SessionReport(ctx, id, r, at)
}

func (f *Faulty) SessionStream(ctx context.Context, id, replica string, attached bool, at time.Time) error {
	if err := f.fail("SessionStream"); err != nil {
		return err
	}
	return f.Store.SessionStream(ctx, id, replica, attached, at)
}

func (f *Faulty) SessionList(ctx context.Context, sf switchboard.SessionFilter) ([]switchboard.Session, error) {
	if err := f.fail("SessionList"); err != nil {
		return nil, err
	}
	return f.Store.SessionList(ctx, sf)
}

func (f *Faulty) ActivityAppend(ctx context.Context, e *switchboard.ActivityEntry) error {
	if err := f.fail("ActivityAppend"); err != nil {
		return err
	}
	return f.Store.ActivityAppend(ctx, e)
}

func (f *Faulty) ActivityList(ctx context.Context, fl switchboard.ActivityFilter) ([]switchboard.ActivityEntry, error) {
	if err := f.fail("ActivityList"); err != nil {
		return nil, err
	}
	return f.Store.ActivityList(ctx, fl)
}

func (f *Faulty) InvocationFinish(ctx context.Context, inv switchboard.Invocation, e *switchboard.ActivityEntry, from ...switchboard.Status) (switchboard.Invocation, error) {
	if err := f.fail("InvocationFinish"); err != nil {
		return switchboard.Invocation{}, err
	}
	return f.Store.InvocationFinish(ctx, inv, e, from...)
}

func (f *Faulty) InvocationCreateFinished(ctx context.Context, inv switchboard.Invocation, e *switchboard.ActivityEntry) error {
	if err := f.fail("InvocationCreateFinished"); err != nil {
		return err
	}
	return f.Store.InvocationCreateFinished(ctx, inv, e)
}

func (f *Faulty) ActivityHead(ctx context.Context) (int64, error) {
	if err := f.fail("ActivityHead"); err != nil {
		return 0, err
	}
	return f.Store.ActivityHead(ctx)
}

func (f *Faulty) ChatGet(ctx context.Context, sessionID string) (switchboard.ChatHistory, error) {
	if err := f.fail("ChatGet"); err != nil {
		return switchboard.ChatHistory{}, err
	}
	return f.Store.ChatGet(ctx, sessionID)
}

func (f *Faulty) ChatPut(ctx context.Context, h switchboard.ChatHistory) (switchboard.ChatHistory, error) {
	if err := f.fail("ChatPut"); err != nil {
		return switchboard.ChatHistory{}, err
	}
	return f.Store.ChatPut(ctx, h)
}

func (f *Faulty) TokenCreate(ctx context.Context, t switchboard.AgentToken) error {
	if err := f.fail("TokenCreate"); err != nil {
		return err
	}
	return f.Store.TokenCreate(ctx, t)
}

func (f *Faulty) TokenGet(ctx context.Context, id string) (switchboard.AgentToken, error) {
	if err := f.fail("TokenGet"); err != nil {
		return switchboard.AgentToken{}, err
	}
	return f.Store.TokenGet(ctx, id)
}

func (f *Faulty) TokenList(ctx context.Context) ([]switchboard.AgentToken, error) {
	if err := f.fail("TokenList"); err != nil {
		return nil, err
	}
	return f.Store.TokenList(ctx)
}

func (f *Faulty) TokenRevoke(ctx context.Context, id string, at time.Time) (switchboard.AgentToken, error) {
	if err := f.fail("TokenRevoke"); err != nil {
		return switchboard.AgentToken{}, err
	}
	return f.Store.TokenRevoke(ctx, id, at)
}

func (f *Faulty) ApprovalCreate(ctx context.Context, a switchboard.ApprovalRequest) error {
	if err := f.fail("ApprovalCreate"); err != nil {
		return err
	}
	return f.Store.ApprovalCreate(ctx, a)
}

func (f *Faulty) ApprovalGet(ctx context.Context, id string) (switchboard.ApprovalRequest, error) {
	if err := f.fail("ApprovalGet"); err != nil {
		return switchboard.ApprovalRequest{}, err
	}
	return f.Store.ApprovalGet(ctx, id)
}

func (f *Faulty) ApprovalList(ctx context.Context, fl switchboard.ApprovalFilter) ([]switchboard.ApprovalRequest, error) {
	if err := f.fail("ApprovalList"); err != nil {
		return nil, err
	}
	return f.Store.ApprovalList(ctx, fl)
}

func (f *Faulty) ApprovalDecide(ctx context.Context, a switchboard.ApprovalRequest) (switchboard.ApprovalRequest, error) {
	if err := f.fail("ApprovalDecide"); err != nil {
		return switchboard.ApprovalRequest{}, err
	}
	return f.Store.ApprovalDecide(ctx, a)
}

func (f *Faulty) ApprovalConsume(ctx context.Context, id string, at time.Time) (switchboard.ApprovalRequest, error) {
	if err := f.fail("ApprovalConsume"); err != nil {
		return switchboard.ApprovalRequest{}, err
	}
	return f.Store.ApprovalConsume(ctx, id, at)
}

func (f *Faulty) ApprovalCancelPending(ctx context.Context, at time.Time, reason string) (int, error) {
	if err := f.fail("ApprovalCancelPending"); err != nil {
		return 0, err
	}
	return f.Store.ApprovalCancelPending(ctx, at, reason)
}

func (f *Faulty) JobCreate(ctx context.Context, j switchboard.Job) error {
	if err := f.fail("JobCreate"); err != nil {
		return err
	}
	return f.Store.JobCreate(ctx, j)
}

func (f *Faulty) InvocationList(ctx context.Context, flt switchboard.InvocationFilter) ([]switchboard.Invocation, error) {
	if err := f.fail("InvocationList"); err != nil {
		return nil, err
	}
	return f.Store.InvocationList(ctx, flt)
}

func (f *Faulty) JobList(ctx context.Context, flt switchboard.JobFilter) ([]switchboard.Job, error) {
	if err := f.fail("JobList"); err != nil {
		return nil, err
	}
	return f.Store.JobList(ctx, flt)
}

func (f *Faulty) JobGet(ctx context.Context, id string) (switchboard.Job, error) {
	if err := f.fail("JobGet"); err != nil {
		return switchboard.Job{}, err
	}
	return f.Store.JobGet(ctx, id)
}

func (f *Faulty) JobUpdate(ctx context.Context, j switchboard.Job, from ...switchboard.JobStatus) (switchboard.Job, error) {
	if err := f.fail("JobUpdate"); err != nil {
		return switchboard.Job{}, err
	}
	return f.Store.JobUpdate(ctx, j, from...)
}

func (f *Faulty) JobFailRunning(ctx context.Context, at time.Time, cause *switchboard.Error, replicas ...string) (int, error) {
	if err := f.fail("JobFailRunning"); err != nil {
		return 0, err
	}
	return f.Store.JobFailRunning(ctx, at, cause, replicas...)
}

func (f *Faulty) IdempotencyClaim(ctx context.Context, r switchboard.IdempotencyRecord, notBefore time.Time, inv switchboard.Invocation) (switchboard.IdempotencyRecord, bool, error) {
	if err := f.fail("IdempotencyClaim"); err != nil {
		return switchboard.IdempotencyRecord{}, false, err
	}
	return f.Store.IdempotencyClaim(ctx, r, notBefore, inv)
}

func (f *Faulty) IdempotencyGet(ctx context.Context, scope, key string) (switchboard.IdempotencyRecord, error) {
	if err := f.fail("IdempotencyGet"); err != nil {
		return switchboard.IdempotencyRecord{}, err
	}
	return f.Store.IdempotencyGet(ctx, scope, key)
}

func (f *Faulty) IdempotencyReleaseOrphans(ctx context.Context) (int, error) {
	if err := f.fail("IdempotencyReleaseOrphans"); err != nil {
		return 0, err
	}
	return f.Store.IdempotencyReleaseOrphans(ctx)
}

func (f *Faulty) InvocationExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := f.fail("InvocationExpire"); err != nil {
		return 0, err
	}
	return f.Store.InvocationExpire(ctx, before, limit)
}

func (f *Faulty) IdempotencyExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := f.fail("IdempotencyExpire"); err != nil {
		return 0, err
	}
	return f.Store.IdempotencyExpire(ctx, before, limit)
}

func (f *Faulty) IdempotencyRelease(ctx context.Context, scope, key, invocationID string) error {
	if err := f.fail("IdempotencyRelease"); err != nil {
		return err
	}
	return f.Store.IdempotencyRelease(ctx, scope, key, invocationID)
}

func (f *Faulty) ReplicaRegister(ctx context.Context, r switchboard.Replica) error {
	if err := f.fail("ReplicaRegister"); err != nil {
		return err
	}
	return f.Store.ReplicaRegister(ctx, r)
}

func (f *Faulty) ReplicaHeartbeat(ctx context.Context, id string, at time.Time) (switchboard.Replica, error) {
	if err := f.fail("ReplicaHeartbeat"); err != nil {
		return switchboard.Replica{}, err
	}
	return f.Store.ReplicaHeartbeat(ctx, id, at)
}

func (f *Faulty) ReplicaStop(ctx context.Context, id string, at time.Time) error {
	if err := f.fail("ReplicaStop"); err != nil {
		return err
	}
	return f.Store.ReplicaStop(ctx, id, at)
}

func (f *Faulty) ReplicaList(ctx context.Context) ([]switchboard.Replica, error) {
	if err := f.fail("ReplicaList"); err != nil {
		return nil, err
	}
	return f.Store.ReplicaList(ctx)
}

func (f *Faulty) ReplicaClaim(ctx context.Context, id, by string, beats int64, at time.Time) (switchboard.Replica, error) {
	if err := f.fail("ReplicaClaim"); err != nil {
		return switchboard.Replica{}, err
	}
	return f.Store.ReplicaClaim(ctx, id, by, beats, at)
}

func (f *Faulty) ReplicaDelete(ctx context.Context, id string) error {
	if err := f.fail("ReplicaDelete"); err != nil {
		return err
	}
	return f.Store.ReplicaDelete(ctx, id)
}

func (f *Faulty) InvocationAdopt(ctx context.Context, from, to string) (int, error) {
	if err := f.fail("InvocationAdopt"); err != nil {
		return 0, err
	}
	return f.Store.InvocationAdopt(ctx, from, to)
}

func (f *Faulty) AgentPut(ctx context.Context, r switchboard.AgentRecord) error {
	if err := f.fail("AgentPut"); err != nil {
		return err
	}
	return f.Store.AgentPut(ctx, r)
}

func (f *Faulty) AgentGet(ctx context.Context, id string) (switchboard.AgentRecord, error) {
	if err := f.fail("AgentGet"); err != nil {
		return switchboard.AgentRecord{}, err
	}
	return f.Store.AgentGet(ctx, id)
}

func (f *Faulty) AgentList(ctx context.Context, filter switchboard.AgentFilter) ([]switchboard.AgentRecord, error) {
	if err := f.fail("AgentList"); err != nil {
		return nil, err
	}
	return f.Store.AgentList(ctx, filter)
}

func (f *Faulty) AgentTouch(ctx context.Context, id string, at time.Time) (switchboard.AgentRecord, error) {
	if err := f.fail("AgentTouch"); err != nil {
		return switchboard.AgentRecord{}, err
	}
	return f.Store.AgentTouch(ctx, id, at)
}

func (f *Faulty) AgentPrune(ctx context.Context, keep int) (int, error) {
	if err := f.fail("AgentPrune"); err != nil {
		return 0, err
	}
	return f.Store.AgentPrune(ctx, keep)
}

func (f *Faulty) PanelInstancePut(ctx context.Context, p switchboard.PanelInstance, prev int64) (switchboard.PanelInstance, error) {
	if err := f.fail("PanelInstancePut"); err != nil {
		return p, err
	}
	return f.Store.PanelInstancePut(ctx, p, prev)
}

func (f *Faulty) PanelInstanceGet(ctx context.Context, id string) (switchboard.PanelInstance, error) {
	if err := f.fail("PanelInstanceGet"); err != nil {
		return switchboard.PanelInstance{}, err
	}
	return f.Store.PanelInstanceGet(ctx, id)
}

func (f *Faulty) PanelInstanceList(ctx context.Context, sessionID string) ([]switchboard.PanelInstance, error) {
	if err := f.fail("PanelInstanceList"); err != nil {
		return nil, err
	}
	return f.Store.PanelInstanceList(ctx, sessionID)
}

func (f *Faulty) PanelInstanceDelete(ctx context.Context, id string) error {
	if err := f.fail("PanelInstanceDelete"); err != nil {
		return err
	}
	return f.Store.PanelInstanceDelete(ctx, id)
}

func (f *Faulty) PanelInstanceDeleteSession(ctx context.Context, sessionID string) (int, error) {
	if err := f.fail("PanelInstanceDeleteSession"); err != nil {
		return 0, err
	}
	return f.Store.PanelInstanceDeleteSession(ctx, sessionID)
}

func (f *Faulty) RunCreate(ctx context.Context, r switchboard.RunRecord) error {
	if err := f.fail("RunCreate"); err != nil {
		return err
	}
	return f.Store.RunCreate(ctx, r)
}

func (f *Faulty) RunAppend(ctx context.Context, r switchboard.RunRecord, events []switchboard.RunEvent) error {
	if err := f.fail("RunAppend"); err != nil {
		return err
	}
	return f.Store.RunAppend(ctx, r, events)
}

func (f *Faulty) RunGet(ctx context.Context, id string) (switchboard.RunRecord, error) {
	if err := f.fail("RunGet"); err != nil {
		return switchboard.RunRecord{}, err
	}
	return f.Store.RunGet(ctx, id)
}

func (f *Faulty) RunEventList(ctx context.Context, id string, from, limit int) ([]switchboard.RunEvent, error) {
	if err := f.fail("RunEventList"); err != nil {
		return nil, err
	}
	return f.Store.RunEventList(ctx, id, from, limit)
}

func (f *Faulty) RunList(ctx context.Context, filter switchboard.RunFilter) ([]switchboard.RunRecord, error) {
	if err := f.fail("RunList"); err != nil {
		return nil, err
	}
	return f.Store.RunList(ctx, filter)
}

func (f *Faulty) RunFailInFlight(ctx context.Context, replicas []string, end func(switchboard.RunRecord) (switchboard.RunRecord, []byte)) (int, error) {
	if err := f.fail("RunFailInFlight"); err != nil {
		return 0, err
	}
	return f.Store.RunFailInFlight(ctx, replicas, end)
}

func (f *Faulty) RunExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := f.fail("RunExpire"); err != nil {
		return 0, err
	}
	return f.Store.RunExpire(ctx, before, limit)
}

func (f *Faulty) SearchExampleAdd(ctx context.Context, ex switchboard.SearchExample, perTool, perCaller int) error {
	if err := f.fail("SearchExampleAdd"); err != nil {
		return err
	}
	return f.Store.SearchExampleAdd(ctx, ex, perTool, perCaller)
}

func (f *Faulty) SearchExampleList(ctx context.Context, tool string) ([]switchboard.LearnedQuery, error) {
	if err := f.fail("SearchExampleList"); err != nil {
		return nil, err
	}
	return f.Store.SearchExampleList(ctx, tool)
}

func (f *Faulty) SearchExampleDelete(ctx context.Context, tool string) (int, error) {
	if err := f.fail("SearchExampleDelete"); err != nil {
		return 0, err
	}
	return f.Store.SearchExampleDelete(ctx, tool)
}

func (f *Faulty) SearchExampleDeleteInvocation(ctx context.Context, id string) ([]string, error) {
	if err := f.fail("SearchExampleDeleteInvocation"); err != nil {
		return nil, err
	}
	return f.Store.SearchExampleDeleteInvocation(ctx, id)
}

func (f *Faulty) SearchExampleExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := f.fail("SearchExampleExpire"); err != nil {
		return 0, err
	}
	return f.Store.SearchExampleExpire(ctx, before, limit)
}

func (f *Faulty) QuotaAdd(ctx context.Context, subject, day string, add, limit switchboard.QuotaUsage) (switchboard.QuotaUsage, bool, error) {
	if err := f.fail("QuotaAdd"); err != nil {
		return switchboard.QuotaUsage{}, false, err
	}
	return f.Store.QuotaAdd(ctx, subject, day, add, limit)
}

func (f *Faulty) QuotaGet(ctx context.Context, subject, day string) (switchboard.QuotaUsage, error) {
	if err := f.fail("QuotaGet"); err != nil {
		return switchboard.QuotaUsage{}, err
	}
	return f.Store.QuotaGet(ctx, subject, day)
}

func (f *Faulty) QuotaList(ctx context.Context, day string, limit int) ([]switchboard.QuotaRow, error) {
	if err := f.fail("QuotaList"); err != nil {
		return nil, err
	}
	return f.Store.QuotaList(ctx, day, limit)
}

func (f *Faulty) QuotaExpire(ctx context.Context, before string, limit int) (int, error) {
	if err := f.fail("QuotaExpire"); err != nil {
		return 0, err
	}
	return f.Store.QuotaExpire(ctx, before, limit)
}

func (f *Faulty) SigningKeyCreate(ctx context.Context, k switchboard.SigningKey) error {
	if err := f.fail("SigningKeyCreate"); err != nil {
		return err
	}
	return f.Store.SigningKeyCreate(ctx, k)
}

func (f *Faulty) SigningKeyList(ctx context.Context, since time.Time) ([]switchboard.SigningKey, error) {
	if err := f.fail("SigningKeyList"); err != nil {
		return nil, err
	}
	return f.Store.SigningKeyList(ctx, since)
}

func (f *Faulty) SigningKeyDelete(ctx context.Context, before time.Time) (int, error) {
	if err := f.fail("SigningKeyDelete"); err != nil {
		return 0, err
	}
	return f.Store.SigningKeyDelete(ctx, before)
}

func (f *Faulty) PanelRegistrationPut(ctx context.Context, regs []switchboard.PanelRegistration, at time.Time) error {
	if err := f.fail("PanelRegistrationPut"); err != nil {
		return err
	}
	return f.Store.PanelRegistrationPut(ctx, regs, at)
}

func (f *Faulty) PanelRegistrationDelete(ctx context.Context, kind, name string) error {
	if err := f.fail("PanelRegistrationDelete"); err != nil {
		return err
	}
	return f.Store.PanelRegistrationDelete(ctx, kind, name)
}

func (f *Faulty) PanelRegistrationList(ctx context.Context) ([]switchboard.PanelRegistration, error) {
	if err := f.fail("PanelRegistrationList"); err != nil {
		return nil, err
	}
	return f.Store.PanelRegistrationList(ctx)
}

func (f *Faulty) OAuthPut(ctx context.Context, r switchboard.OAuthRecord) error {
	if err := f.fail("OAuthPut"); err != nil {
		return err
	}
	return f.Store.OAuthPut(ctx, r)
}

func (f *Faulty) OAuthGet(ctx context.Context, kind, id string) (switchboard.OAuthRecord, error) {
	if err := f.fail("OAuthGet"); err != nil {
		return switchboard.OAuthRecord{}, err
	}
	return f.Store.OAuthGet(ctx, kind, id)
}

func (f *Faulty) OAuthUpdate(ctx context.Context, kind, id, user string, data []byte) error {
	if err := f.fail("OAuthUpdate"); err != nil {
		return err
	}
	return f.Store.OAuthUpdate(ctx, kind, id, user, data)
}

func (f *Faulty) OAuthUse(ctx context.Context, kind, id string, at time.Time) (switchboard.OAuthRecord, error) {
	if err := f.fail("OAuthUse"); err != nil {
		return switchboard.OAuthRecord{}, err
	}
	return f.Store.OAuthUse(ctx, kind, id, at)
}

func (f *Faulty) OAuthRevoke(ctx context.Context, kind, id string, at time.Time) (switchboard.OAuthRecord, error) {
	if err := f.fail("OAuthRevoke"); err != nil {
		return switchboard.OAuthRecord{}, err
	}
	return f.Store.OAuthRevoke(ctx, kind, id, at)
}

func (f *Faulty) OAuthList(ctx context.Context, kind, user string) ([]switchboard.OAuthRecord, error) {
	if err := f.fail("OAuthList"); err != nil {
		return nil, err
	}
	return f.Store.OAuthList(ctx, kind, user)
}

func (f *Faulty) OAuthDeleteExpired(ctx context.Context, before time.Time) (int, error) {
	if err := f.fail("OAuthDeleteExpired"); err != nil {
		return 0, err
	}
	return f.Store.OAuthDeleteExpired(ctx, before)
}

func (f *Faulty) TaskCreate(ctx context.Context, t switchboard.Task) error {
	if err := f.fail("TaskCreate"); err != nil {
		return err
	}
	return f.Store.TaskCreate(ctx, t)
}

func (f *Faulty) TaskGet(ctx context.Context, id string) (switchboard.Task, error) {
	if err := f.fail("TaskGet"); err != nil {
		return switchboard.Task{}, err
	}
	return f.Store.TaskGet(ctx, id)
}

func (f *Faulty) TaskUpdate(ctx context.Context, t switchboard.Task) (switchboard.Task, error) {
	if err := f.fail("TaskUpdate"); err != nil {
		return t, err
	}
	return f.Store.TaskUpdate(ctx, t)
}

func (f *Faulty) TaskList(ctx context.Context, flt switchboard.TaskFilter) ([]switchboard.Task, error) {
	if err := f.fail("TaskList"); err != nil {
		return nil, err
	}
	return f.Store.TaskList(ctx, flt)
}
