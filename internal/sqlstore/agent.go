package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Agent sessions: the registry every replica lists and reaches
// (workspace.Agents keeps the live half in its owner's memory and writes
// through here). The session document is stored whole; the columns beside
// it are what the queries select on, and last_seen is its own column so a
// heartbeat received by any replica updates one value.

const agentCols = `id, replica, user_name, heartbeat, last_seen, doc`

const sqlSelectAgent = `SELECT ` + agentCols + ` FROM agent_sessions WHERE id = ?`

// sqlAgentPut inserts a record or replaces a live one: an ended record is
// final (the WHERE makes the upsert change nothing), and last_seen only
// moves forward.
const sqlAgentPut = `INSERT INTO agent_sessions (id, replica, user_name, heartbeat, started_at, last_seen, ended_at, doc)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO UPDATE SET replica = excluded.replica, user_name = excluded.user_name,
		heartbeat = excluded.heartbeat, ended_at = excluded.ended_at, doc = excluded.doc,
		last_seen = CASE WHEN excluded.last_seen > agent_sessions.last_seen THEN excluded.last_seen ELSE agent_sessions.last_seen END
	WHERE agent_sessions.ended_at IS NULL`

func scanAgent(row Row) (switchboard.AgentRecord, error) {
	var (
		r    switchboard.AgentRecord
		beat int64
		seen time.Time
		doc  json.RawMessage
	)
	if err := row.Scan(&r.Session.ID, &r.Replica, &r.User, &beat, scanTime(&seen), scanJSON(&doc)); err != nil {
		return r, err
	}
	id := r.Session.ID
	if err := json.Unmarshal(doc, &r.Session); err != nil {
		return r, switchboard.Errorf(switchboard.CodeInternal, "agent session %s: stored document does not decode: %v", id, err)
	}
	r.Session.ID, r.Heartbeat = id, beat != 0
	r.Session.LastSeen = seen
	r.Session.StartedAt = normTime(r.Session.StartedAt)
	r.Session.EndedAt = normTime(r.Session.EndedAt)
	return r, nil
}

// AgentPut inserts or replaces a live agent record.
func (s *Store) AgentPut(ctx context.Context, r switchboard.AgentRecord) error {
	const op = "agent put"
	if err := s.check(op); err != nil {
		return err
	}
	a := r.Session
	if a.ID == "" || a.StartedAt.IsZero() {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: the session's id and start time are required", op)
	}
	if a.Status.Final() != !a.EndedAt.IsZero() {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: session %s is %s but its end time is %v: an ended session has both", op, a.ID, a.Status, a.EndedAt)
	}
	seen := a.LastSeen
	if seen.IsZero() {
		seen = a.StartedAt
	}
	a.StartedAt, a.EndedAt, a.LastSeen = normTime(a.StartedAt), normTime(a.EndedAt), normTime(seen)
	doc, err := json.Marshal(a)
	if err != nil {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: session %s does not encode: %v", op, a.ID, err)
	}
	beat := 0
	if r.Heartbeat {
		beat = 1
	}
	var n int64
	err = s.db.Write(ctx, op, func(q Querier) error {
		var err error
		n, err = q.Exec(ctx, s.sql(sqlAgentPut), a.ID, r.Replica, r.User, beat, s.time(a.StartedAt), s.time(a.LastSeen),
			s.time(a.EndedAt), string(doc))
		return err
	})
	if err == nil && n == 0 {
		err = switchboard.Errorf(switchboard.CodeConflict, "%s: agent session %s already ended", op, a.ID)
	}
	return err
}

// AgentAdopt inserts r, a new session named by key (an external agent's
// principal, user, transport and connection), unless a live session holds
// key: then that session comes back with adopted true and nothing is
// written. So an agent whose requests reach several replicas is one
// session, whichever replica started it.
func (s *Store) AgentAdopt(ctx context.Context, r switchboard.AgentRecord, key string) (stored switchboard.AgentRecord, adopted bool, err error) {
	const op = "agent adopt"
	if err := s.check(op); err != nil {
		return r, false, err
	}
	a := r.Session
	if a.ID == "" || a.StartedAt.IsZero() || key == "" || a.Status.Final() {
		return r, false, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a live session with an id, a start time and a key is required", op)
	}
	seen := a.LastSeen
	if seen.IsZero() {
		seen = a.StartedAt
	}
	a.StartedAt, a.LastSeen = normTime(a.StartedAt), normTime(seen)
	doc, err := json.Marshal(a)
	if err != nil {
		return r, false, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: session %s does not encode: %v", op, a.ID, err)
	}
	beat := 0
	if r.Heartbeat {
		beat = 1
	}
	// The holder may end between the refused insert and the read: then
	// the key is free and the insert goes again.
	for range 3 {
		err = s.db.Write(ctx, op, func(q Querier) error {
			n, err := q.Exec(ctx, s.sql(`INSERT INTO agent_sessions (id, replica, user_name, heartbeat, started_at, last_seen, doc, ext_key)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
				a.ID, r.Replica, r.User, beat, s.time(a.StartedAt), s.time(a.LastSeen), string(doc), key)
			if err != nil || n == 1 {
				return err
			}
			stored, err = scanAgent(q.QueryRow(ctx, s.sql(`SELECT `+agentCols+` FROM agent_sessions WHERE ext_key = ? AND ended_at IS NULL`), key))
			adopted = err == nil
			return err
		})
		if switchboard.CodeOf(err) != switchboard.CodeNotFound {
			break
		}
	}
	if err != nil {
		return r, false, err
	}
	if !adopted {
		return r, false, nil
	}
	if stored.Session.ID == a.ID { // this very session, stored by an earlier try
		return r, false, nil
	}
	return stored, true, nil
}

// AgentGet reads one agent record.
func (s *Store) AgentGet(ctx context.Context, id string) (switchboard.AgentRecord, error) {
	return get(ctx, s, "agent get", "agent session", id, scanAgent, sqlSelectAgent)
}

// AgentList returns the records f selects, newest start first.
func (s *Store) AgentList(ctx context.Context, f switchboard.AgentFilter) ([]switchboard.AgentRecord, error) {
	q := `SELECT ` + agentCols + ` FROM agent_sessions WHERE 1 = 1`
	var args []any
	if f.Active {
		q += ` AND ended_at IS NULL`
	}
	if len(f.Replicas) > 0 {
		q += ` AND replica ` + in(len(f.Replicas))
		for _, r := range f.Replicas {
			args = append(args, r)
		}
	}
	return list(ctx, s, "agent list", q+` ORDER BY started_at DESC, id`, args, scanAgent)
}

// AgentTouch records a heartbeat of a live session.
func (s *Store) AgentTouch(ctx context.Context, id string, at time.Time) (switchboard.AgentRecord, error) {
	const op = "agent touch"
	var (
		stored   switchboard.AgentRecord
		conflict bool
	)
	t := s.time(s.stamp(at))
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		stored, conflict, err = swap(ctx, s, q, "agent session", id, scanAgent,
			`UPDATE agent_sessions SET last_seen = CASE WHEN ? > last_seen THEN ? ELSE last_seen END
			WHERE id = ? AND ended_at IS NULL RETURNING `+agentCols,
			[]any{t, t, id}, sqlSelectAgent)
		return err
	})
	if err == nil && conflict {
		err = switchboard.Errorf(switchboard.CodeConflict, "%s: agent session %s already ended %s", op, id, stored.Session.Status)
	}
	return stored, err
}

// AgentPrune deletes ended records past the newest keep.
func (s *Store) AgentPrune(ctx context.Context, keep int) (int, error) {
	const op = "agent prune"
	if err := s.check(op); err != nil {
		return 0, err
	}
	if keep < 0 {
		keep = 0
	}
	var n int64
	err := s.db.Write(ctx, op, func(q Querier) error {
		var err error
		n, err = q.Exec(ctx, s.sql(`DELETE FROM agent_sessions WHERE ended_at IS NOT NULL AND id NOT IN
			(SELECT id FROM agent_sessions WHERE ended_at IS NOT NULL ORDER BY ended_at DESC, id LIMIT ?)`), keep)
		return err
	})
	return int(n), err
}
