// The activity view: the append-only ledger, newest first, with each
// entry's outcome, full date and details; filters by actor and verb (asked
// of the daemon) and by target (applied to the page shown); Reverse on
// tool calls whose tool declares an inverse (POST /activity/{id}/reverse,
// through approval like any call); Verify recomputes the hash chain. A
// user signed in as themselves sees their own entries (the daemon picks
// them) and neither Reverse nor Verify, which are the operator's.
import { $, el, api, button, badge, statusKind, when, duration, jsonBlock, showError, followCall, labelled, userMode } from './lib.js';

function details(e) {
  if (!e.details) return {};
  return typeof e.details === 'object' ? e.details : {};
}

function outcome(e) {
  const d = details(e);
  const td = el('td');
  if (d.status) td.append(badge(d.status, statusKind(d.status)));
  if (d.code) td.append(el('small', ' ' + d.code, 'error'));
  if (typeof d.durationMs === 'number') td.append(duration(d.durationMs));
  if (e.reversal) td.append(badge('reversal of #' + (e.reversal.of ?? '?'), 'muted'));
  if (!td.childNodes.length) td.append(el('span', '—', 'muted'));
  return td;
}

// reversible: a succeeded tool call, not itself a reversal, of a tool that
// declares an inverse. The daemon decides again when asked.
function reversible(e, tools) {
  const t = tools.get(e.target);
  return e.verb === 'tool.call' && details(e).status === 'succeeded' && !e.reversal &&
    t && t.inverse && t.inverse.tool && t.reversible !== false;
}

function row(e, tools) {
  const tr = el('tr');
  tr.dataset.entry = e.id;
  const more = el('td');
  const blob = { details: e.details };
  if (e.provenance) blob.provenance = e.provenance;
  if (e.reversal) blob.reversal = e.reversal;
  blob.hash = e.hash;
  more.append(jsonBlock('details', blob));
  const act = el('td');
  if (reversible(e, tools)) {
    const out = el('div', undefined, 'result');
    out.setAttribute('aria-live', 'polite');
    const b = button('Reverse', async () => {
      b.disabled = true;
      out.replaceChildren(el('span', 'reversing…', 'muted'));
      try {
        const r = await api('POST', `/api/v1/activity/${e.id}/reverse`, { async: true });
        out.replaceChildren(el('small', 'undo: invocation ' + r.invocationId, 'muted'));
        if (r.status === 'awaiting_approval') out.append(el('p', 'The undo waits for approval.', 'muted'));
        await followCall(out, r.invocationId);
      } catch (err) {
        const body = err.body || {};
        out.replaceChildren(el('p', err.message, 'error'));
        if (body.invocationId) out.prepend(badge(body.status, statusKind(body.status)));
        b.disabled = false;
      }
    });
    b.setAttribute('aria-label', `Reverse entry ${e.id} (${e.target})`);
    act.append(b, out);
  }
  tr.append(el('td', e.id), el('td'), el('td', e.actor), el('td', e.verb), el('td', e.target), outcome(e), more, act);
  tr.children[1].append(when(e.ts));
  return tr;
}

async function toolMap() {
  if (userMode()) return new Map(); // the catalog is the operator's: no Reverse
  try {
    const m = await api('GET', '/api/v1/tools');
    return new Map(m.tools.map((t) => [t.name, t]));
  } catch {
    return new Map();
  }
}

export async function loadActivity() {
  const q = new URLSearchParams({ limit: '200' });
  const actor = $('f-actor').value.trim();
  const verb = $('f-verb').value.trim();
  const target = $('f-target').value.trim().toLowerCase();
  if (actor) q.set('actor', actor);
  if (verb) q.set('verb', verb);
  const [res, tools] = await Promise.all([api('GET', '/api/v1/activity?' + q), toolMap()]);
  const items = (res.items || []).filter((e) => !target || (e.target || '').toLowerCase().includes(target)).reverse();
  labelled($('entries'), items.map((e) => row(e, tools)));
  $('activity-count').textContent = `${items.length} ${items.length === 1 ? 'entry' : 'entries'}, newest first` +
    (actor || verb || target ? ' (filtered)' : '');
}

async function verify() {
  const box = $('verify-result');
  box.replaceChildren(el('span', 'verifying…', 'muted'));
  try {
    const r = await api('GET', '/api/v1/activity/verify');
    box.replaceChildren(badge(r.ok ? 'chain intact' : 'chain broken', r.ok ? 'good' : 'bad'),
      el('span', ` ${r.entries} ${r.entries === 1 ? 'entry' : 'entries'} checked, head #${r.headId}` +
        (r.ok ? '' : ` — entry #${r.badId}: ${r.problem}`), r.ok ? 'muted' : 'error'));
  } catch (e) {
    showError(box, e);
  }
}

export function initActivity(guard) {
  $('activity-filter').addEventListener('submit', (ev) => { ev.preventDefault(); guard(loadActivity); });
  $('activity-clear').addEventListener('click', () => {
    for (const id of ['f-actor', 'f-verb', 'f-target']) $(id).value = '';
    guard(loadActivity);
  });
  $('verify').addEventListener('click', () => guard(verify));
}
