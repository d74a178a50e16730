// The calls view: recent invocations (GET /invocations), jobs with their
// progress (GET /jobs) and the assistant's runs (GET /runs), each run's
// AG-UI event timeline read from GET /runs/{id}/events. Refresh re-reads;
// a daemon without a list route says so instead of failing.
import { $, el, api, stream, button, badge, statusKind, when, jsonBlock, showError, fillTable } from './lib.js';

const open = ['pending', 'awaiting_approval', 'dispatched', 'running'];

function bar(inv, job) {
  const p = el('progress');
  if (job) {
    p.max = 1;
    p.value = job.status === 'succeeded' ? 1 : Math.max(0, Math.min(1, job.progress || 0));
    p.title = job.message || `${Math.round(p.value * 100)}%`;
  } else if (!open.includes(inv.status)) {
    p.max = 1;
    p.value = 1;
  } // an open call without a job: indeterminate
  p.setAttribute('aria-label', `progress of ${(job || inv).tool}`);
  return p;
}

function invRow(inv) {
  const tr = el('tr');
  const st = el('td');
  st.append(badge(inv.status, statusKind(inv.status)));
  if (inv.error) st.append(el('small', ' ' + inv.error.code, 'error'));
  const t = el('td');
  t.append(when(inv.createdAt));
  const more = el('td');
  more.append(jsonBlock('record', inv));
  const prog = el('td');
  prog.append(bar(inv));
  tr.append(el('td', inv.invocationId || inv.id), el('td', inv.tool), el('td', inv.caller || '—'), st, prog, t, more);
  return tr;
}

function jobRow(j) {
  const tr = el('tr');
  tr.dataset.job = j.jobId;
  const st = el('td');
  st.append(badge(j.status, statusKind(j.status)));
  const prog = el('td');
  prog.append(bar(null, j), el('small', ` ${Math.round((j.status === 'succeeded' ? 1 : j.progress || 0) * 100)}% ${j.message || ''}`, 'muted'));
  const t = el('td');
  t.append(when(j.updatedAt));
  const act = el('td');
  if (j.status === 'running') {
    const b = button('Cancel', async () => {
      b.disabled = true;
      try { await api('POST', `/api/v1/jobs/${encodeURIComponent(j.jobId)}/cancel`); await loadJobs(); } catch (e) { showError(act, e); }
    }, 'danger');
    b.setAttribute('aria-label', `Cancel job ${j.jobId}`);
    act.append(b);
  }
  tr.append(el('td', j.jobId), el('td', j.tool), st, prog, t, act);
  return tr;
}

// summary is one line for an AG-UI event in the timeline.
function summary(ev) {
  const sb = (ev.metadata && ev.metadata.switchboard) || {};
  switch (ev.type) {
    case 'TOOL_CALL_START': return ev.toolCallName;
    case 'TOOL_CALL_RESULT': return [sb.status, String(ev.content || '').slice(0, 100)].filter(Boolean).join(' · ');
    case 'TEXT_MESSAGE_START': return ev.role + ':';
    case 'STEP_STARTED': case 'STEP_FINISHED': return ev.stepName;
    case 'CUSTOM': return ev.name;
    case 'STATE_DELTA': return `${(ev.delta || []).length} changes`;
    case 'RUN_ERROR': return ev.message;
    case 'RUN_FINISHED': return ev.outcome ? ev.outcome.type : '';
    default: return '';
  }
}

// timeline reads a run's events into a list; streamed pieces (text and
// tool argument deltas) join the line of the event that opened them.
async function timeline(run, box) {
  const list = el('ol', undefined, 'timeline');
  box.replaceChildren(el('h3', 'Run ' + run.runId), list);
  const ctrl = new AbortController();
  let collecting = null; // the element collecting deltas
  try {
    await stream(`/api/v1/runs/${encodeURIComponent(run.runId)}/events`, (_kind, ev) => {
      if (!ev || typeof ev !== 'object') return;
      if ((ev.type === 'TEXT_MESSAGE_CONTENT' || ev.type === 'TOOL_CALL_ARGS') && collecting) { collecting.textContent += ev.delta || ''; return; }
      const li = el('li');
      li.append(badge(ev.type || 'event', /ERROR/.test(ev.type) ? 'bad' : /RUN_FINISHED/.test(ev.type) ? 'good' : ''), el('span', ' ' + summary(ev)));
      collecting = null;
      if (ev.type === 'TEXT_MESSAGE_START' || ev.type === 'TOOL_CALL_START') { collecting = el('q'); li.append(' ', collecting); }
      li.append(jsonBlock('event', ev));
      list.append(li);
      if (ev.type === 'RUN_FINISHED' || ev.type === 'RUN_ERROR') ctrl.abort();
    }, ctrl.signal);
  } catch (e) {
    if (!ctrl.signal.aborted) box.append(el('p', e.message, 'error'));
  }
  if (!list.childNodes.length) list.append(el('li', 'No events.', 'muted'));
}

function runRow(run) {
  const tr = el('tr');
  tr.dataset.run = run.runId;
  const st = el('td');
  st.append(badge(run.status, statusKind(run.status)));
  const t = el('td');
  t.append(when(run.createdAt));
  const act = el('td');
  act.append(button('Timeline', () => timeline(run, $('run-timeline')).then(() => $('run-timeline').scrollIntoView({ block: 'nearest' }))));
  act.firstChild.setAttribute('aria-label', `Timeline of run ${run.runId}`);
  tr.append(el('td', run.runId), el('td', run.threadId), st, el('td', run.steps), el('td', run.events), t, act);
  return tr;
}

async function fill(path, body, count, row, noun) {
  const items = await fillTable(path, body, count, row, noun);
  if (items.some((x) => open.includes(x.status))) busy = true;
}

const status = () => $('c-status').value;
let busy = false; // something listed is still running
let timer = null;
const loadInvocations = () => fill('/api/v1/invocations?limit=100' + (status() ? '&status=' + status() : ''), 'inv-list', 'inv-count', invRow, 'invocations');
const loadJobs = () => fill('/api/v1/jobs?limit=100', 'job-list', 'job-count', jobRow, 'jobs');
const loadRuns = () => fill('/api/v1/runs?limit=100', 'run-list', 'run-count', runRow, 'runs');

// loadCalls reads all three lists; while anything listed runs and the
// view shows, it reads them again every second, so progress bars move.
export async function loadCalls() {
  clearTimeout(timer);
  busy = false;
  await Promise.all([loadInvocations(), loadJobs(), loadRuns()]);
  if (busy) timer = setTimeout(() => { if (!$('calls').hidden) loadCalls().catch(() => {}); }, 1000);
}

export function initCalls(guard) {
  $('calls-refresh').addEventListener('click', () => guard(loadCalls));
  $('c-status').addEventListener('change', () => guard(loadInvocations));
}
