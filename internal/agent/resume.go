package agent

import (
	"context"
	"slices"
	"time"

	"github.com/switchboardhq/switchboard"
	"github.com/switchboardhq/switchboard/agui"
)

// A resume on another replica: an AG-UI resume or an AI SDK approval
// response may land on a replica that does not hold the chat's
// interrupted run. Its waiting calls are parked in the broker of the
// replica that ran it (or, if that replica died, of the survivor that
// kept their approvals: internal/daemon/sweep.go), and the interrupt state that
// parked them is that replica's memory. With a run store, this replica
// rebuilds what a resume needs from the store: the interrupted run (its
// record says waiting, with the approvals), each interrupt's tool call
// (the run's stored RUN_FINISHED names them) and the conversation when it
// stopped (the MESSAGES_SNAPSHOT before it). The resume then decides the
// approval records here — the one decision, which wakes the parked call
// where it waits — and each call's outcome is read from the store once
// its invocation is terminal (Runtime.settle). Nothing runs twice: the call
// runs where it was parked, and only there.

// storedSettleWait bounds the wait for an interrupted run's final flush.
const storedSettleWait = 5 * time.Second

// storedInterrupt rebuilds the interrupt state of req's chat from the
// store when its interrupted run is another replica's (nil when it is not,
// or there is no run store: planResume then explains the resume's
// refusal as it always did).
func (rt *Runtime) storedInterrupt(ctx context.Context, req StartRequest) (*interruptState, error) {
	if rt.opts.Runs == nil || rt.approvals == nil || len(req.Resume) == 0 {
		return nil, nil
	}
	a, err := rt.approvals.Get(ctx, req.Resume[0].InterruptID)
	if err != nil || a.RunID == "" {
		return nil, nil
	}
	if _, err := rt.Get(a.RunID); err == nil {
		return nil, nil // this process's own run, already resumed or stopped
	}
	rec, err := rt.opts.Runs.RunGet(ctx, a.RunID)
	if err == nil && rec.Status == switchboard.RunRunning && rec.ThreadID == req.ThreadID {
		// The client saw the run end with its interrupt as its replica
		// appended the event; the stored status follows with that
		// replica's next flush, a moment later.
		rec, err = rt.awaitChange(ctx, rec, storedSettleWait, nil)
	}
	if err != nil || rec.Status != switchboard.RunWaiting || rec.ThreadID != req.ThreadID || !slices.Contains(rec.Waiting, a.ID) || rec.Events < 2 {
		return nil, nil
	}
	evs, err := rt.opts.Runs.RunEventList(ctx, rec.RunID, rec.Events-2, 2)
	if err != nil {
		return nil, err
	}
	if len(evs) != 2 {
		return nil, nil
	}
	snap, _ := decodeAs[*agui.MessagesSnapshot](evs[0].JSON)
	fin, _ := decodeAs[*agui.RunFinished](evs[1].JSON)
	if fin == nil || fin.Outcome == nil || fin.Outcome.Type != agui.OutcomeInterrupt {
		return nil, nil
	}
	intr := &interruptState{runID: rec.RunID}
	if snap != nil {
		intr.conv = snap.Messages
	}
	for _, in := range fin.Outcome.Interrupts {
		ap, err := rt.approvals.Get(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		c := call{id: in.ToolCallID, name: ap.Tool, args: string(ap.Input)}
		if inv, err := rt.opts.Runs.InvocationGet(ctx, ap.InvocationID); err == nil && inv.Surface == switchboard.SurfaceAPI {
			c.tool = &offered{real: ap.Tool, kind: kindCatalog} // edited arguments are checked against its schema
		}
		p := &parked{c: c, approval: ap, id: ap.InvocationID}
		intr.calls = append(intr.calls, p)
	}
	rt.log.InfoContext(ctx, "resuming another replica's interrupted run from the store", "run", rec.RunID, "replica", rec.Replica, "chat", req.ThreadID)
	return intr, nil
}

func decodeAs[T agui.Event](b []byte) (T, bool) {
	var zero T
	ev, err := agui.Decode(b)
	if err != nil {
		return zero, false
	}
	t, ok := ev.(T)
	return t, ok
}
