package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/switchboardhq/switchboard"
)

// Delegated tasks: one row each, the record kept whole as JSON beside the
// columns lists filter on, updated only through a compare-and-swap on its
// revision.

const taskCols = `doc, replica, revision, created_at, updated_at`

func scanTask(row Row) (switchboard.Task, error) {
	var (
		t   switchboard.Task
		doc json.RawMessage
	)
	if err := row.Scan(scanJSON(&doc), &t.Replica, &t.Revision, scanTime(&t.CreatedAt), scanTime(&t.UpdatedAt)); err != nil {
		return t, err
	}
	replica, rev, created, updated := t.Replica, t.Revision, t.CreatedAt, t.UpdatedAt
	if err := json.Unmarshal(doc, &t); err != nil {
		return t, switchboard.Errorf(switchboard.CodeInternal, "stored task does not decode: %w", err)
	}
	t.Replica, t.Revision, t.CreatedAt, t.UpdatedAt = replica, rev, created, updated
	return t, nil
}

func taskDoc(t switchboard.Task) (string, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return "", switchboard.Errorf(switchboard.CodeInvalidInput, "task %s does not encode: %v", t.ID, err)
	}
	return string(b), nil
}

// TaskCreate inserts a task at revision 1.
func (s *Store) TaskCreate(ctx context.Context, t switchboard.Task) error {
	const op = "task create"
	if err := s.check(op); err != nil {
		return err
	}
	if t.ID == "" || t.Owner == "" || t.Status == "" || t.Assignee == "" {
		return switchboard.Errorf(switchboard.CodeInvalidInput, "%s: id, owner, assignee and status are required", op)
	}
	t.CreatedAt = normTime(s.stamp(t.CreatedAt))
	t.UpdatedAt = normTime(s.stamp(t.UpdatedAt))
	t.Revision = 1
	doc, err := taskDoc(t)
	if err != nil {
		return err
	}
	err = s.db.Write(ctx, op, func(q Querier) error {
		_, err := q.Exec(ctx, s.sql(`INSERT INTO tasks (id, owner, creator, assignee, status, replica, revision, created_at, updated_at, doc)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), t.ID, t.Owner, t.Creator, t.Assignee, string(t.Status), t.Replica, t.Revision,
			s.d.Time(t.CreatedAt), s.d.Time(t.UpdatedAt), doc)
		return err
	})
	if switchboard.CodeOf(err) == switchboard.CodeConflict {
		return switchboard.Errorf(switchboard.CodeConflict, "%s: task %s already exists", op, t.ID)
	}
	return err
}

// TaskGet returns one task or NOT_FOUND.
func (s *Store) TaskGet(ctx context.Context, id string) (switchboard.Task, error) {
	const op = "task get"
	var t switchboard.Task
	err := s.read(ctx, op, func(q Reader) error {
		var err error
		t, err = scanTask(q.QueryRow(ctx, s.sql(`SELECT `+taskCols+` FROM tasks WHERE id = ?`), id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("task", id)
		}
		return err
	})
	return t, err
}

// TaskUpdate stores t only if the stored revision is still t.Revision, and
// returns it at the next revision; otherwise it changes nothing and
// returns the current task with CONFLICT.
func (s *Store) TaskUpdate(ctx context.Context, t switchboard.Task) (switchboard.Task, error) {
	const op = "task update"
	if err := s.check(op); err != nil {
		return t, err
	}
	prev := t.Revision
	t.Revision++
	t.UpdatedAt = normTime(s.stamp(t.UpdatedAt))
	doc, err := taskDoc(t)
	if err != nil {
		return t, err
	}
	var changed int64
	err = s.db.Write(ctx, op, func(q Querier) error {
		var err error
		changed, err = q.Exec(ctx, s.sql(`UPDATE tasks SET status = ?, replica = ?, revision = ?, updated_at = ?, doc = ?
			WHERE id = ? AND revision = ?`), string(t.Status), t.Replica, t.Revision, s.d.Time(t.UpdatedAt), doc, t.ID, prev)
		return err
	})
	if err != nil {
		return t, err
	}
	if changed == 1 {
		return t, nil
	}
	cur, err := s.TaskGet(ctx, t.ID)
	if err != nil {
		return cur, err
	}
	return cur, switchboard.Errorf(switchboard.CodeConflict, "%s: task %s changed (revision %d, not %d)", op, t.ID, cur.Revision, prev)
}

// TaskList returns the tasks f selects, newest first.
func (s *Store) TaskList(ctx context.Context, f switchboard.TaskFilter) ([]switchboard.Task, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q, args := `SELECT `+taskCols+` FROM tasks WHERE 1=1`, []any{}
	if f.Owner != "" {
		q, args = q+` AND owner = ?`, append(args, f.Owner)
	}
	if f.Creator != "" {
		q, args = q+` AND creator = ?`, append(args, f.Creator)
	}
	if f.Assignee != "" {
		q, args = q+` AND assignee = ?`, append(args, f.Assignee)
	}
	if len(f.Status) > 0 {
		q += ` AND status ` + in(len(f.Status))
		for _, st := range f.Status {
			args = append(args, string(st))
		}
	}
	return list(ctx, s, "task list", q+` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit), scanTask)
}
