// Tasks: work handed to the assistant (GET /api/v1/tasks). The operator
// sees every user's; a person signed in as themself sees and hands over
// their own. Cancel and Resume are the task routes'; a task's steps,
// budget and answer are in its row's details.
import { $, el, api, button, badge, statusKind, when, showError, jsonBlock, fillTable } from './lib.js';

const open = ['submitted', 'working', 'input_required'];

function taskRow(t) {
  const tr = el('tr');
  tr.dataset.task = t.id;
  const goal = el('td');
  goal.append(el('span', t.goal));
  const d = jsonBlock('details', { id: t.id, projects: t.projects, envelope: t.envelope, usage: t.usage, steps: t.steps, artifacts: t.artifacts, error: t.error });
  goal.append(d);
  const st = el('td');
  st.append(badge(t.status.replace('_', ' '), statusKind(t.status === 'completed' ? 'succeeded' : t.status)));
  const created = el('td');
  created.append(when(t.createdAt));
  const act = el('td');
  const out = el('span', '', 'result');
  out.setAttribute('aria-live', 'polite');
  const act1 = (label, verb) => {
    const b = button(label, async () => {
      b.disabled = true;
      try {
        await api('POST', `/api/v1/tasks/${encodeURIComponent(t.id)}/${verb}`);
        await loadTasks();
      } catch (e) {
        showError(out, e);
        b.disabled = false;
      }
    }, verb === 'cancel' ? 'danger' : '');
    b.setAttribute('aria-label', `${label} task: ${t.goal}`);
    return b;
  };
  if (open.includes(t.status)) act.append(act1('Cancel', 'cancel'));
  else if (t.status === 'failed' || t.status === 'cancelled') act.append(act1('Resume', 'resume'));
  act.append(out);
  tr.append(goal, el('td', t.owner), st, created, act);
  return tr;
}

let timer = null;

// loadTasks lists the tasks; while one is open and the view shows, it
// reads them again every two seconds, so a task's end shows without a
// reload.
export async function loadTasks() {
  clearTimeout(timer);
  const items = await fillTable('/api/v1/tasks?limit=100', 'task-list', 'task-count', taskRow, 'tasks');
  if (items.some((t) => open.includes(t.status))) {
    timer = setTimeout(() => { if (!$('tasks').hidden) loadTasks().catch(() => {}); }, 2000);
  }
}

export function initTasks(guard) {
  $('task-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    guard(async () => {
      const goal = $('task-goal').value.trim();
      if (!goal) return;
      const out = $('task-result');
      out.replaceChildren();
      try {
        const t = await api('POST', '/api/v1/tasks', { goal });
        $('task-goal').value = '';
        out.append(el('p', `Handed over as ${t.id}.`, 'muted'));
      } catch (e) {
        showError(out, e);
      }
      await loadTasks();
    });
  });
}
