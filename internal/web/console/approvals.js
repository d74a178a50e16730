// The approvals inbox: pending requests, kept current by the daemon's
// approval event stream (GET /approvals/events) while the console is
// signed in, whatever view is showing, with a count in the navigation.
// After a decision the card stays with its outcome: approved → the call's
// status and result (read from its invocation), denied → denied. A user
// signed in as themselves sees (and the stream announces) their own
// requests only; an approved call's outcome is read from their activity,
// invocations being the operator's.
import { $, el, api, stream, button, badge, statusKind, when, jsonBlock, absent, followCall, userMode } from './lib.js';

const decided = new Map(); // approval id → card showing its outcome
let ctrl = null;

function card(a) {
  const c = el('article', undefined, 'card');
  c.dataset.approval = a.approvalId;
  const head = el('h3');
  head.append(el('span', a.tool), badge(a.agent || 'anonymous', 'tag'));
  c.append(head);
  if (a.summary) c.append(el('p', a.summary));
  c.append(jsonBlock('Input', a.input || {}, true));
  const meta = el('p', undefined, 'muted');
  meta.append('asked ', when(a.createdAt), ' · expires ', when(a.expiresAt), ` · invocation ${a.invocationId}`);
  c.append(meta);
  const reason = el('input');
  reason.type = 'text';
  reason.placeholder = 'reason (optional)';
  reason.setAttribute('aria-label', 'reason for ' + a.tool);
  const out = el('div', undefined, 'result');
  out.setAttribute('aria-live', 'polite');
  const row = el('div', undefined, 'row');
  const decide = (decision) => async () => {
    row.querySelectorAll('button').forEach((b) => (b.disabled = true));
    out.replaceChildren(el('p', decision === 'approve' ? 'approving…' : 'denying…', 'muted'));
    try {
      const r = await api('POST', '/api/v1/approvals/' + encodeURIComponent(a.approvalId), { decision, ...(reason.value ? { reason: reason.value } : {}) });
      decided.set(a.approvalId, c);
      c.classList.add('decided');
      row.remove();
      await outcome(out, r);
      loadApprovals();
    } catch (e) {
      out.replaceChildren(el('p', e.message, 'error'));
      row.querySelectorAll('button').forEach((b) => (b.disabled = false));
    }
  };
  row.append(button('Approve', decide('approve'), 'primary'), button('Deny', decide('deny'), 'danger'), reason);
  c.append(row, out);
  return c;
}

// outcome shows what became of a decided request; for an approved one it
// follows the invocation until it settles.
async function outcome(out, a) {
  const head = el('p');
  head.append(badge(a.status, statusKind(a.status)), el('span', ` by ${a.decidedBy || 'you'}` + (a.reason ? ` — ${a.reason}` : ''), 'muted'));
  out.replaceChildren(head);
  if (a.status === 'approved' && a.invocationId) await (userMode() ? followInActivity : followCall)(out, a.invocationId);
}

// followInActivity waits for the ledger entry of the call's completion
// (tool.call, details.invocationId) and shows its status.
async function followInActivity(out, id) {
  const line = el('p', 'running…', 'muted');
  out.append(line);
  for (let i = 0; i < 120; i++) {
    let res;
    try { res = await api('GET', '/api/v1/activity?verb=tool.call&limit=50'); } catch (e) { line.textContent = e.message; line.className = 'error'; return; }
    const e = (res.items || []).find((x) => x.details && x.details.invocationId === id && x.details.status);
    if (e) {
      line.className = '';
      line.replaceChildren(el('span', 'call '), badge(e.details.status, statusKind(e.details.status)), el('small', ` activity #${e.id}`, 'muted'));
      return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  line.textContent = 'The call has not finished yet; its outcome will show in Activity.';
}

export async function loadApprovals() {
  const list = $('approval-list');
  let res;
  try {
    res = await api('GET', '/api/v1/approvals');
  } catch (e) {
    if (absent(e)) { list.replaceChildren(el('p', 'This daemon has no approvals route.', 'muted')); return; }
    throw e;
  }
  const items = res.items || [];
  const count = $('approval-count');
  count.textContent = items.length ? String(items.length) : '';
  count.hidden = !items.length;
  const cards = items.map((a) => list.querySelector(`[data-approval="${CSS.escape(a.approvalId)}"]`) || card(a));
  const done = [...decided.values()];
  const none = cards.length ? [] : [el('p', 'Nothing is waiting for you.', 'muted')];
  const past = done.length ? [el('h2', 'Decided here')] : [];
  list.replaceChildren(...none, ...cards, ...past, ...done);
}

// follow keeps the inbox live while signed in; it reconnects after a drop
// with a growing pause, and re-reads the list on every event.
export function followApprovals() {
  stopApprovals();
  const my = (ctrl = new AbortController());
  const live = $('approvals-live');
  (async () => {
    let pause = 500;
    while (!my.signal.aborted) {
      try {
        await stream('/api/v1/approvals/events', (kind) => {
          if (kind === 'ready') { live.textContent = 'live'; live.className = 'badge good'; pause = 500; }
          loadApprovals().catch(() => {});
        }, my.signal);
      } catch (e) {
        if (my.signal.aborted) return;
        if (absent(e)) { live.textContent = 'not live (older daemon)'; live.className = 'badge muted'; return; }
        if (e.status === 401) return;
      }
      live.textContent = 'reconnecting…';
      live.className = 'badge wait';
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(pause * 2, 10000);
    }
  })();
}

export function stopApprovals() {
  if (ctrl) ctrl.abort();
  ctrl = null;
}

// forgetApprovals clears the inbox at sign-out: whoever signs in next (the
// operator, another user) must not see the cards decided here before.
export function forgetApprovals() {
  stopApprovals();
  decided.clear();
  $('approval-list').replaceChildren();
  $('approval-count').hidden = true;
}
