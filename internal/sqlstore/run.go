package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Agent runs: the record and event log of each run, written by the replica
// that runs it in batches (internal/agent/persist.go) and read by any replica.

const runCols = `id, thread, session, owner, replica, status, harness, model, steps, usage, cost, events, error, waiting, created_at, finished_at, acts_for`

const sqlSelectRun = `SELECT ` + runCols + ` FROM runs WHERE id = ?`

// runEventRows bounds the rows of one multi-row event insert (Postgres
// takes at most 65535 parameters; a flush rarely holds more).
const runEventRows = 256

// finishedRunStatuses are the statuses RunExpire may delete.
var finishedRunStatuses = []any{string(switchboard.RunSucceeded), string(switchboard.RunFailed), string(switchboard.RunCancelled)}

func scanRun(row Row) (switchboard.RunRecord, error) {
	var (
		r                         switchboard.RunRecord
		model, usage, errJ, waitJ json.RawMessage
		cost                      sql.NullFloat64
		status                    string
	)
	err := row.Scan(&r.RunID, &r.ThreadID, &r.SessionID, &r.Owner, &r.Replica, &status, &r.Harness, scanJSON(&model),
		&r.Steps, scanJSON(&usage), &cost, &r.Events, scanJSON(&errJ), scanJSON(&waitJ), scanTime(&r.CreatedAt), scanTime(&r.FinishedAt), &r.User)
	if err != nil {
		return r, err
	}
	r.Status = switchboard.RunStatus(status)
	if len(model) > 0 && string(model) != "null" {
		r.Model = new(switchboard.RunModel)
		if err := json.Unmarshal(model, r.Model); err != nil {
			return r, switchboard.Errorf(switchboard.CodeInternal, "stored run model does not decode: %w", err)
		}
	}
	if len(usage) > 0 {
		if err := json.Unmarshal(usage, &r.Usage); err != nil {
			return r, switchboard.Errorf(switchboard.CodeInternal, "stored run usage does not decode: %w", err)
		}
	}
	if cost.Valid {
		r.Cost = &cost.Float64
	}
	if r.Error, err = decodeError(errJ); err != nil {
		return r, err
	}
	if len(waitJ) > 0 {
		if err := json.Unmarshal(waitJ, &r.Waiting); err != nil {
			return r, switchboard.Errorf(switchboard.CodeInternal, "stored run approvals do not decode: %w", err)
		}
		if len(r.Waiting) == 0 {
			r.Waiting = nil
		}
	}
	return r, nil
}

// runValues are the bound values of a run's mutable columns: model,
// usage, cost, error, waiting.
func runValues(r switchboard.RunRecord) (model, usage, cost, errJ, waiting any, err error) {
	if r.Model != nil {
		b, _ := json.Marshal(r.Model) // three strings: cannot fail
		model = string(b)
	}
	b, _ := json.Marshal(r.Usage) // integers: cannot fail
	usage = string(b)
	if r.Cost != nil {
		cost = *r.Cost
	}
	if errJ, err = encodeError(r.Error); err != nil {
		return
	}
	waiting = globList(r.Waiting)
	return
}

// RunCreate inserts a run, replacing a waiting one of the same id.
func (s *Store) RunCreate(ctx context.Context, r switchboard.RunRecord) error {
	const op = "run create"
	if err := s.check(op); err != nil {
		return err
	}
	if r.RunID == "" || r.ThreadID == "" || r.Status == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: run id, thread id and status are required", op)
	}
	model, usage, cost, errJ, waiting, err := runValues(r)
	if err != nil {
		return err
	}
	created := normTime(s.stamp(r.CreatedAt))
	var busy string // the chat's running run, when a start finds one
	err = s.db.Tx(ctx, op, func(tx Tx) error {
		busy = ""
		if r.Status == switchboard.RunRunning {
			// A chat runs one run at a time across replicas; the unique
			// index on running runs' thread settles two racing starts.
			err := tx.QueryRow(ctx, s.sql(`SELECT id FROM runs WHERE thread = ? AND status = 'running' AND id <> ? LIMIT 1`),
				r.ThreadID, r.RunID).Scan(&busy)
			switch {
			case err == nil:
				return switchboard.ErrConflict
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		var status string
		err := tx.QueryRow(ctx, s.sql(`SELECT status FROM runs WHERE id = ?`), r.RunID).Scan(&status)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case status != string(switchboard.RunWaiting):
			return switchboard.ErrConflict
		default: // an interrupted run whose resume takes its id over
			if _, err := tx.Exec(ctx, s.sql(`DELETE FROM run_events WHERE run_id = ?`), r.RunID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, s.sql(`DELETE FROM runs WHERE id = ?`), r.RunID); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, s.sql(`INSERT INTO runs (`+runCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)`),
			r.RunID, r.ThreadID, r.SessionID, r.Owner, r.Replica, string(r.Status), r.Harness, model, r.Steps, usage, cost,
			errJ, waiting, s.d.Time(created), s.time(r.FinishedAt), r.User)
		return err
	})
	if switchboard.CodeOf(err) != switchboard.CodeConflict {
		return err
	}
	if busy == "" && r.Status == switchboard.RunRunning { // a racing insert's unique violation: which index?
		_ = s.read(ctx, op, func(q Reader) error {
			return q.QueryRow(ctx, s.sql(`SELECT id FROM runs WHERE thread = ? AND status = 'running' AND id <> ? LIMIT 1`),
				r.ThreadID, r.RunID).Scan(&busy)
		})
	}
	if busy != "" {
		return switchboard.Errorf(switchboard.CodeConflict,
			"chat session %s has run %s in progress (perhaps on another replica); cancel it or send a follow-up", r.ThreadID, busy).
			WithDetails(map[string]any{"runId": busy})
	}
	return switchboard.Errorf(switchboard.CodeConflict, "%s: run %s already exists", op, r.RunID)
}

// RunAppend stores a flush of the owning replica: events and the record,
// in one transaction, while the run is still that replica's.
func (s *Store) RunAppend(ctx context.Context, r switchboard.RunRecord, events []switchboard.RunEvent) error {
	const op = "run append"
	if err := s.check(op); err != nil {
		return err
	}
	from := -1
	for i, e := range events {
		if i == 0 {
			from = e.Seq
		}
		if e.Seq != from+i || !json.Valid(e.JSON) {
			return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: events must be valid JSON with consecutive positions (event %d has %d)", op, i, e.Seq)
		}
	}
	model, usage, cost, errJ, waiting, err := runValues(r)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, op, func(tx Tx) error {
		n, err := tx.Exec(ctx, s.sql(`UPDATE runs SET status = ?, model = ?, steps = ?, usage = ?, cost = ?, error = ?, waiting = ?,
			finished_at = ?, events = events + ? WHERE id = ? AND replica = ? AND (? < 0 OR events = ?)`),
			string(r.Status), model, r.Steps, usage, cost, errJ, waiting, s.time(r.FinishedAt), len(events),
			r.RunID, r.Replica, from, from)
		if err != nil {
			return err
		}
		if n == 0 {
			var replica string
			var stored int
			err := tx.QueryRow(ctx, s.sql(`SELECT replica, events FROM runs WHERE id = ?`), r.RunID).Scan(&replica, &stored)
			if errors.Is(err, sql.ErrNoRows) {
				return notFound("run", r.RunID)
			}
			if err != nil {
				return err
			}
			if replica != r.Replica {
				return switchboard.Errorf(switchboard.CodeConflict, "%s: run %s is no longer replica %s's (%s ended it)", op, r.RunID, r.Replica, replica)
			}
			return switchboard.Errorf(switchboard.CodeConflict, "%s: run %s has %d events stored; these start at %d", op, r.RunID, stored, from)
		}
		return s.insertRunEvents(ctx, tx, r.RunID, events)
	})
}

// insertRunEvents inserts events in multi-row statements.
func (s *Store) insertRunEvents(ctx context.Context, tx Tx, id string, events []switchboard.RunEvent) error {
	for len(events) > 0 {
		batch := events[:min(len(events), runEventRows)]
		events = events[len(batch):]
		q := `INSERT INTO run_events (run_id, seq, event) VALUES (?, ?, ?)` + strings.Repeat(", (?, ?, ?)", len(batch)-1)
		args := make([]any, 0, 3*len(batch))
		for _, e := range batch {
			args = append(args, id, e.Seq, string(e.JSON))
		}
		if _, err := tx.Exec(ctx, s.sql(q), args...); err != nil {
			return err
		}
	}
	return nil
}

// RunGet returns one stored run.
func (s *Store) RunGet(ctx context.Context, id string) (switchboard.RunRecord, error) {
	return get(ctx, s, "run get", "run", id, scanRun, sqlSelectRun)
}

// RunEventList returns up to limit events of a run from seq from on.
func (s *Store) RunEventList(ctx context.Context, id string, from, limit int) ([]switchboard.RunEvent, error) {
	if limit <= 0 {
		limit = 1000
	}
	return list(ctx, s, "run event list", `SELECT seq, event FROM run_events WHERE run_id = ? AND seq >= ? ORDER BY seq LIMIT ?`,
		[]any{id, max(from, 0), limit}, func(row Row) (switchboard.RunEvent, error) {
			var e switchboard.RunEvent
			var raw json.RawMessage
			err := row.Scan(&e.Seq, scanJSON(&raw))
			e.JSON = raw
			return e, err
		})
}

// RunList returns stored runs, newest first.
func (s *Store) RunList(ctx context.Context, f switchboard.RunFilter) ([]switchboard.RunRecord, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q, args := `SELECT `+runCols+` FROM runs WHERE 1=1`, []any{}
	if f.ThreadID != "" {
		q, args = q+` AND thread = ?`, append(args, f.ThreadID)
	}
	if f.Status != "" {
		q, args = q+` AND status = ?`, append(args, string(f.Status))
	}
	if f.User != "" {
		q, args = q+` AND acts_for = ?`, append(args, f.User)
	}
	return list(ctx, s, "run list", q+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit), scanRun)
}

// RunFailInFlight ends the running runs of replicas, one transaction each.
func (s *Store) RunFailInFlight(ctx context.Context, replicas []string, end func(switchboard.RunRecord) (switchboard.RunRecord, []byte)) (int, error) {
	const op = "run fail in flight"
	if end == nil {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: an end function is required", op)
	}
	if len(replicas) == 0 {
		return 0, s.check(op)
	}
	next := `SELECT ` + runCols + ` FROM runs WHERE status = 'running' AND replica ` + in(len(replicas)) + ` AND id > ? ORDER BY id LIMIT 1`
	n, after := 0, ""
	for {
		args := make([]any, 0, len(replicas)+1)
		for _, r := range replicas {
			args = append(args, r)
		}
		var cur switchboard.RunRecord
		err := s.read(ctx, op, func(q Reader) error {
			var err error
			cur, err = scanRun(q.QueryRow(ctx, s.sql(next), append(args, after)...))
			return err
		})
		if errors.Is(err, sql.ErrNoRows) || switchboard.CodeOf(err) == switchboard.CodeNotFound {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		after = cur.RunID
		final, ev := end(cur)
		if !json.Valid(ev) {
			return n, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: the terminal event of run %s is not valid JSON", op, cur.RunID)
		}
		errJ, err := encodeError(final.Error)
		if err != nil {
			return n, err
		}
		ended := false
		err = s.db.Tx(ctx, op, func(tx Tx) error {
			var events int
			err := tx.QueryRow(ctx, s.sql(`UPDATE runs SET status = ?, error = ?, finished_at = ?, replica = ?, events = events + 1
				WHERE id = ? AND status = 'running' AND replica = ? RETURNING events`),
				string(final.Status), errJ, s.time(s.stamp(final.FinishedAt)), final.Replica, cur.RunID, cur.Replica).Scan(&events)
			if errors.Is(err, sql.ErrNoRows) {
				return nil // it ended meanwhile
			}
			if err != nil {
				return err
			}
			ended = true
			return s.insertRunEvents(ctx, tx, cur.RunID, []switchboard.RunEvent{{Seq: events - 1, JSON: ev}})
		})
		if err != nil {
			return n, err
		}
		if ended {
			n++
		}
	}
}

// RunExpire deletes up to limit (at most ExpireBatch) finished runs that
// finished before before, and their events, in one transaction.
func (s *Store) RunExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	const op = "run expire"
	if err := s.check(op); err != nil {
		return 0, err
	}
	if before.IsZero() || limit <= 0 {
		return 0, switchboard.Errorf(switchboard.CodeInvalidInput, "%s: a time bound and a positive limit are required", op)
	}
	agg := `json_group_array(id)`
	if s.d.Numbered {
		agg = `coalesce(json_agg(id), '[]')`
	}
	pick := `SELECT ` + agg + ` FROM (SELECT id FROM runs WHERE status ` + in(len(finishedRunStatuses)) +
		` AND finished_at < ? ORDER BY finished_at LIMIT ?) picked`
	var n int64
	err := s.db.Tx(ctx, op, func(tx Tx) error {
		var raw json.RawMessage
		args := append(append([]any{}, finishedRunStatuses...), s.d.Time(normTime(before)), min(limit, ExpireBatch))
		if err := tx.QueryRow(ctx, s.sql(pick), args...).Scan(scanJSON(&raw)); err != nil {
			return err
		}
		var ids []string
		if err := json.Unmarshal(raw, &ids); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		idArgs := make([]any, len(ids))
		for i, id := range ids {
			idArgs[i] = id
		}
		if _, err := tx.Exec(ctx, s.sql(`DELETE FROM run_events WHERE run_id `+in(len(ids))), idArgs...); err != nil {
			return err
		}
		var err error
		n, err = tx.Exec(ctx, s.sql(`DELETE FROM runs WHERE id `+in(len(ids))+` AND status `+in(len(finishedRunStatuses))),
			append(idArgs, finishedRunStatuses...)...)
		return err
	})
	return int(n), err
}
