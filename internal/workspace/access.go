package workspace

import (
	"context"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/scope"
)

// ToolAgentsList is the catalog tool whose scope lets an agent token see
// the other agents at work.
const ToolAgentsList = "agents.list"

// Viewer is who asks about agent sessions. This file is the one home of
// who may see and control which session:
//
//   - a user (the admin token is user:admin, the daemon's own user) sees
//     and controls the sessions acting for them; user:admin sees all;
//   - a browser tab (its session token) is its signed-in user's: it sees
//     and controls that user's sessions, as the user would;
//   - an agent token sees and controls its own sessions, and sees the
//     others only when its scope admits agents.list;
//   - nobody else sees anything.
//
// "Control" is heartbeat and interrupt. Sessions a viewer may not see are
// AGENT_NOT_FOUND to it, so ids cannot be probed.
type Viewer struct {
	Principal switchboard.Principal
	// User is the tab's signed-in user when Principal is a session
	// ("user:alice"; "" means the daemon's user).
	User string
}

// ViewerOf returns the viewer of a principal (a user or an agent).
func ViewerOf(p switchboard.Principal) Viewer { return Viewer{Principal: p} }

// TabViewer returns the viewer of browser session sid opened for user.
func TabViewer(sid, user string) Viewer {
	return Viewer{Principal: switchboard.Principal{Kind: switchboard.PrincipalSession, ID: sid}, User: user}
}

// user is whose sessions the viewer stands for ("" for agents).
func (v Viewer) user() string {
	switch v.Principal.Kind {
	case switchboard.PrincipalUser:
		return v.Principal.String()
	case switchboard.PrincipalSession:
		return userOf(v.User)
	}
	return ""
}

func (v Viewer) admin() bool {
	return v.Principal.Kind == switchboard.PrincipalUser && v.Principal.ID == "admin"
}

func (v Viewer) canSee(st *agentState) bool {
	if v.canControl(st) {
		return true
	}
	// An agent whose scope admits agents.list sees the agents at work for
	// its user (the operator's agents: everyone's).
	return v.Principal.Kind == switchboard.PrincipalAgent && scope.AllowsTool(v.Principal, ToolAgentsList, switchboard.ClassRead) &&
		(v.Principal.ActsFor() == switchboard.Operator || st.user == v.Principal.ActsFor())
}

func (v Viewer) canControl(st *agentState) bool {
	switch v.Principal.Kind {
	case switchboard.PrincipalUser, switchboard.PrincipalSession:
		return v.admin() || st.user == v.user()
	case switchboard.PrincipalAgent:
		// An agent name minted for two users is two agents.
		return st.s.Principal == v.Principal.String() && st.user == v.Principal.ActsFor()
	}
	return false
}

// Sees reports whether v may see the stored session r (the same rule, for
// a session another replica owns or one that reached this replica as an
// event).
func (v Viewer) Sees(r switchboard.AgentRecord) bool { return v.canSee(stateOf(r)) }

// CanSee reports whether v may see session id (false for an unknown id).
func (a *Agents) CanSee(v Viewer, id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.sessions[id]
	return ok && v.canSee(st)
}

// ActsFor reports whether session id acts for user ("user:alice"; ""
// means the daemon's user): whose tabs may see and decide its approvals.
func (a *Agents) ActsFor(id, user string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.sessions[id]
	return ok && st.user == userOf(user)
}

// approvalUser is whom apr's call was made for; a request that names
// nobody (recorded before users were) is the operator's.
func approvalUser(apr switchboard.ApprovalRequest) string { return userOf(apr.User) }

// AskedOf is the person apr is asked of, as the principal a channel that
// answers for that person decides as (an MCP client's elicitation
// answer): the user the call was made for, or the operator for a request
// that names nobody — the same person SeesApproval and MayDecide read.
func AskedOf(apr switchboard.ApprovalRequest) switchboard.Principal {
	p, _ := switchboard.UserPrincipal(approvalUser(apr))
	return p
}

// SeesApproval is the one rule of who may see an approval request, for
// every channel that lists, shows or decides one (the approvals routes,
// the digest, a tab's events, MCP elicitation, a chat's resume, and
// approval.Service.Decide itself):
//
//   - the operator (user:admin) sees every request;
//   - another user sees the requests of calls made for them (an agent
//     acting for user:alice asks user:alice);
//   - a browser tab sees what TabMayDecide gives it, never another
//     user's;
//   - an agent sees its own calls' requests made for its own user.
//
// A request v may not see reads as not found. agents may be nil (the tab
// rule then knows only the tab's own assistant).
func SeesApproval(ctx context.Context, agents *Agents, v Viewer, apr switchboard.ApprovalRequest) bool {
	switch v.Principal.Kind {
	case switchboard.PrincipalUser:
		return v.admin() || approvalUser(apr) == v.user()
	case switchboard.PrincipalSession:
		return TabMayDecide(ctx, agents, apr, v.Principal.ID, v.User)
	case switchboard.PrincipalAgent:
		return apr.Agent == v.Principal.String() && approvalUser(apr) == v.Principal.ActsFor()
	}
	return false
}

// MayDecide reports whether v may decide apr: a person (a user, or a tab
// as its user) who may see it. No agent decides, its own calls or anyone's.
func MayDecide(ctx context.Context, agents *Agents, v Viewer, apr switchboard.ApprovalRequest) bool {
	return v.Principal.Kind != switchboard.PrincipalAgent && SeesApproval(ctx, agents, v, apr)
}

// Override reports whether by deciding apr overrides the person it was
// asked of: the operator deciding a call made for another user. The
// ledger records such a decision as an override.
// by is the decider as the ledger names it ("user:admin").
func Override(by string, apr switchboard.ApprovalRequest) bool {
	return by == switchboard.Operator && approvalUser(apr) != switchboard.Operator
}

// UserFilter is the ApprovalFilter.User that lists what v may see from
// the store: "" (every user's) for the operator and for tabs (filtered
// by SeesApproval after reading), the user otherwise.
func UserFilter(v Viewer) string {
	switch {
	case v.admin(), v.Principal.Kind == switchboard.PrincipalSession:
		return ""
	case v.Principal.Kind == switchboard.PrincipalAgent:
		return v.Principal.ActsFor()
	}
	return v.user()
}

// TabMayDecide is the one rule of which approvals a browser tab may see
// and decide, as its signed-in user (user; "" is the daemon's user):
//
//   - the built-in assistant's calls made in that very tab, and
//   - the calls of a background or external agent session acting for the
//     tab's user (escalated approvals: no chat in front of the user asks).
//
// A tab is never shown another user's agents' calls, and agents act for
// the user their credential belongs to (an agent token for the daemon's
// user), so a tab an agent could open for another user (--demo opens
// "demo" sessions) cannot decide that agent's calls. agents may be nil
// (no registry: only the first rule). An agent session another replica
// owns is judged from the store.
func TabMayDecide(ctx context.Context, agents *Agents, apr switchboard.ApprovalRequest, sid, user string) bool {
	if apr.SessionID == sid && apr.Agent == switchboard.Assistant().String() {
		return true
	}
	if approvalUser(apr) != userOf(user) {
		return false // another user's agent's call
	}
	if agents == nil || apr.AgentID == "" {
		return false
	}
	agents.mu.Lock()
	st, ok := agents.sessions[apr.AgentID]
	agents.mu.Unlock()
	if !ok {
		r, err := agents.stored(ctx, apr.AgentID)
		if err != nil {
			return false
		}
		st = stateOf(r)
	}
	return escalates(st.s.Kind) && st.user == userOf(user)
}

// SeesRecord is the one rule of who may read an invocation or job record
// (GET /invocations/{id}, /jobs/{id} and their lists; caller and user are
// the record's Caller and User):
//
//   - the operator (user:admin) reads every record;
//   - another user reads the records of calls made for them, by whichever
//     agent;
//   - an agent reads its own calls made for its own user: one agent name
//     acting for alice and for bob is two agents, and neither reads the
//     other's records;
//   - a tab reads none here (its calls come back on its own stream).
//
// A record that names no user (written before records named one) is the
// operator's alone. A record v may not read is NOT_FOUND, like an unknown
// id.
func SeesRecord(v Viewer, caller, user string) bool {
	switch {
	case v.admin():
		return true
	case v.Principal.Kind == switchboard.PrincipalUser:
		return user != "" && user == v.user()
	case v.Principal.Kind == switchboard.PrincipalAgent:
		return caller == v.Principal.String() && user != "" && user == v.Principal.ActsFor()
	}
	return false
}

// RecordFilter is the Caller and User filter that lists from the store
// exactly the records SeesRecord lets v read. ok is false when v may list
// none.
func RecordFilter(v Viewer) (caller, user string, ok bool) {
	switch {
	case v.admin():
		return "", "", true
	case v.Principal.Kind == switchboard.PrincipalUser:
		return "", v.user(), v.user() != ""
	case v.Principal.Kind == switchboard.PrincipalAgent:
		return v.Principal.String(), v.Principal.ActsFor(), true
	}
	return "", "", false
}
