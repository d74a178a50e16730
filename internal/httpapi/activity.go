package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/internal/activity"
	"github.com/switchboardhq/switchboard/internal/sse"
	"github.com/switchboardhq/switchboard/internal/strictjson"
	"github.com/switchboardhq/switchboard/internal/workspace"
)

// The ledger's routes. There is no route that updates or deletes an entry:
// the ledger is append-only (a PUT, PATCH or DELETE falls through to 404).
func (s *Server) activityRoutes() {
	s.mux.HandleFunc("GET /api/v1/activity", s.adminOrUser(s.listActivity))
	s.mux.HandleFunc("GET /api/v1/activity/verify", s.admin(s.verifyActivity))
	s.mux.HandleFunc("GET /api/v1/activity/checkpoint", s.admin(s.checkpointActivity))
	s.mux.HandleFunc("GET /api/v1/activity/{id}", s.adminOrUser(s.getActivity))
	if s.opts.Broker != nil {
		s.mux.HandleFunc("POST /api/v1/activity/{id}/reverse", s.caller(s.reverseActivity))
	}
}

// activityPage is one page of the ledger.
type activityPage struct {
	Items      []switchboard.ActivityEntry `json:"items"`
	NextCursor string                      `json:"nextCursor,omitempty"`
}

// activityFilter reads ?actor= ?verb= ?since= (RFC 3339, or a duration
// such as 1h meaning that long ago) ?limit= and ?after= (the cursor).
func activityFilter(r *http.Request, now time.Time) (switchboard.ActivityFilter, bool, error) {
	q := r.URL.Query()
	f := switchboard.ActivityFilter{Actor: q.Get("actor"), Verb: q.Get("verb"), Limit: 100}
	if v := q.Get("since"); v != "" {
		t, err := workspace.ParseSince(v, now)
		if err != nil {
			return f, false, err
		}
		f.Since = t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return f, false, switchboard.Errorf(switchboard.CodeInvalidInput, "limit must be within 1..1000")
		}
		f.Limit = n
	}
	after := q.Get("after")
	if after == "" {
		after = r.Header.Get("Last-Event-ID")
	}
	if after == "" {
		return f, false, nil
	}
	n, err := strconv.ParseInt(after, 10, 64)
	if err != nil || n < 0 {
		return f, false, switchboard.Errorf(switchboard.CodeInvalidInput, "after must be an entry id (the nextCursor of a page), not %q", after)
	}
	f.AfterID = n
	return f, true, nil
}

// listActivity pages the ledger. Without ?after= it answers the newest
// entries (served from the in-memory ring); with it, the entries after
// that cursor, oldest first. ?follow=1 streams instead (SSE).
func (s *Server) listActivity(w http.ResponseWriter, r *http.Request) {
	f, cursor, err := activityFilter(r, time.Now())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if v := r.URL.Query().Get("follow"); v == "1" || v == "true" {
		s.followActivity(w, r, f, cursor)
		return
	}
	if ownUser(r) != "" {
		s.listOwnActivity(w, r, f, cursor)
		return
	}
	l := s.opts.Governance.Ledger
	var items []switchboard.ActivityEntry
	if cursor {
		items, err = l.List(r.Context(), f)
	} else {
		items, err = l.Tail(r.Context(), f)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page := activityPage{Items: items}
	if n := len(items); n > 0 {
		page.NextCursor = strconv.FormatInt(items[n-1].ID, 10)
	} else if cursor {
		page.NextCursor = strconv.FormatInt(f.AfterID, 10)
	}
	writeJSON(w, http.StatusOK, page)
}

// ownActivityScan bounds the entries one forward page of a person's own
// ledger reads: the ledger is one chain of everyone's entries, so theirs
// are found by reading it (workspace.SeesEntry), a bounded stretch per
// page. The newest page reads the ledger's in-memory tail only
// (activity.DefaultRingSize entries), so it never scans the store.
const ownActivityScan = 2000

// listOwnActivity pages the entries a person signed in to the console
// may see. The newest page is theirs among the newest entries of the
// ledger's in-memory tail; with ?after= (0 for the start) it reads
// forward from the cursor. NextCursor is where the read stopped, so the
// next page continues the scan even when a stretch held none of theirs.
func (s *Server) listOwnActivity(w http.ResponseWriter, r *http.Request, f switchboard.ActivityFilter, cursor bool) {
	p, want := principal(r), f.Limit
	f.Limit = ownActivityScan
	if !cursor {
		f.Limit = activity.DefaultRingSize
	}
	l := s.opts.Governance.Ledger
	var (
		read []switchboard.ActivityEntry
		err  error
	)
	if cursor {
		read, err = l.List(r.Context(), f)
	} else {
		read, err = l.Tail(r.Context(), f)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page := activityPage{Items: []switchboard.ActivityEntry{}}
	if !cursor { // the newest of theirs, oldest first like Tail
		for i := len(read) - 1; i >= 0 && len(page.Items) < want; i-- {
			if workspace.SeesEntry(p, read[i]) {
				page.Items = append(page.Items, read[i])
			}
		}
		slices.Reverse(page.Items)
		if n := len(read); n > 0 {
			page.NextCursor = strconv.FormatInt(read[n-1].ID, 10)
		}
		writeJSON(w, http.StatusOK, page)
		return
	}
	last := f.AfterID
	for _, e := range read {
		if len(page.Items) == want {
			break
		}
		last = e.ID
		if workspace.SeesEntry(p, e) {
			page.Items = append(page.Items, e)
		}
	}
	page.NextCursor = strconv.FormatInt(last, 10)
	writeJSON(w, http.StatusOK, page)
}

// activityHeartbeat spaces keep-alive comments on an idle ledger tail.
const activityHeartbeat = 15 * time.Second

// followActivity streams entries as SSE "activity" events whose id is the
// entry's ID (reconnect with Last-Event-ID to resume): after the cursor
// when one is given, else only new entries. Comments keep it alive.
func (s *Server) followActivity(w http.ResponseWriter, r *http.Request, f switchboard.ActivityFilter, cursor bool) {
	after := int64(-1)
	if cursor {
		after = f.AfterID
	}
	w.Header().Set("Cache-Control", "no-store")
	sw := sse.Start(w, streamWriteTimeout)
	ctx, cancel := context.WithCancel(r.Context())
	alive := make(chan struct{})
	defer func() { cancel(); <-alive }() // the keep-alive is done with w before the handler returns
	go func() {
		defer close(alive)
		t := time.NewTicker(activityHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				sw.Comment(sse.Heartbeat)
				if sw.Flush() != nil {
					cancel()
					return
				}
			}
		}
	}()
	own, p := ownUser(r) != "", principal(r)
	err := s.opts.Governance.Ledger.Follow(ctx, after, f, func(e switchboard.ActivityEntry) error {
		if own && !workspace.SeesEntry(p, e) {
			return nil
		}
		b, _ := json.Marshal(e)
		sw.Event(sse.Event{ID: strconv.FormatInt(e.ID, 10), Event: "activity", Data: b})
		return sw.Flush()
	})
	if err != nil && ctx.Err() == nil {
		s.log.WarnContext(r.Context(), "activity stream ended", "err", err)
	}
}

func (s *Server) getActivity(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeNotFound, "no activity entry %q", r.PathValue("id")))
		return
	}
	e, err := s.opts.Governance.Ledger.Get(r.Context(), id)
	if err == nil && ownUser(r) != "" && !workspace.SeesEntry(principal(r), e) {
		err = switchboard.Errorf(switchboard.CodeNotFound, "no activity entry %q", r.PathValue("id")) // one answer for unknown and not theirs
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// verifyActivity recomputes the hash chain and holds it to the daemon's
// checkpoint and, given ?checkpoint=<JSON>, an operator's exported one; a
// break is named in the report (the answer is 200 either way: the check
// itself worked).
func (s *Server) verifyActivity(w http.ResponseWriter, r *http.Request) {
	var (
		rep activity.Report
		err error
	)
	if raw := r.URL.Query().Get("checkpoint"); raw != "" {
		var cp switchboard.LedgerCheckpoint
		if err := strictjson.Decode([]byte(raw), &cp, ""); err != nil {
			msg := err.Error()
			if se := (*switchboard.Error)(nil); errors.As(err, &se) {
				msg = se.Message
			}
			s.writeError(w, r, switchboard.Errorf(switchboard.CodeInvalidInput,
				"?checkpoint= must be the JSON that GET /api/v1/activity/checkpoint answered: %s", msg))
			return
		}
		rep, err = s.opts.Governance.Ledger.VerifyCheckpoint(r.Context(), cp)
	} else {
		rep, err = s.opts.Governance.Ledger.Verify(r.Context())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// checkpointActivity verifies the ledger and answers a signed checkpoint of
// its head for the operator to keep elsewhere (CONFLICT when the ledger
// does not verify).
func (s *Server) checkpointActivity(w http.ResponseWriter, r *http.Request) {
	cp, err := s.opts.Governance.Ledger.Checkpoint(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, cp)
}

// reverseActivity runs an entry's declared inverse as a fresh call under
// the requester, through approval like any call; ?wait=false or
// {"async": true} answers 202 once it is recorded.
func (s *Server) reverseActivity(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		s.writeError(w, r, switchboard.Errorf(switchboard.CodeNotFound, "no activity entry %q", r.PathValue("id")))
		return
	}
	var body struct {
		Async bool `json:"async,omitempty"`
	}
	if r.ContentLength != 0 {
		if err := s.decode(w, r, &body, 4<<10); err != nil && !isEmptyBody(err) {
			s.writeError(w, r, err)
			return
		}
	}
	req, err := s.opts.Broker.PlanReversal(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if p, ok := switchboard.PrincipalFrom(r.Context()); ok {
		req.Caller = &p // the inverse runs as whoever asked for it
	}
	s.answerCall(w, r, wantsAsync(r, body.Async), req, nil)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
