// The operator console: plain DOM, no framework, no innerHTML. Every value
// from the daemon goes through textContent. This module is the shell:
// sign-in and sign-out, the views and which one shows (the URL's #hash),
// and the live approvals stream while signed in. Each view is its own
// module.
import { $, KEY, el, whenUnauthorized } from './lib.js';
import { loadCatalog, initCatalog } from './catalog.js';
import { loadApprovals, followApprovals, stopApprovals } from './approvals.js';
import { loadActivity, initActivity } from './activity.js';
import { loadCalls, initCalls } from './calls.js';
import { loadAgents, loadTabs, initTabs, loadTokens, initTokens } from './agents.js';
import { loadAssistant, refreshModelStatus, hideModelStatus } from './assistant.js';

const views = {
  catalog: loadCatalog, approvals: loadApprovals, activity: loadActivity, calls: loadCalls,
  tokens: loadTokens, agents: loadAgents, tabs: loadTabs, assistant: loadAssistant,
};

function signedOut(message) {
  sessionStorage.removeItem(KEY);
  // However the session ended (sign-out, a refused token), the next
  // sign-in must start the approvals stream again.
  following = false;
  stopApprovals();
  hideModelStatus();
  document.querySelectorAll('.view').forEach((v) => (v.hidden = true));
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  $('status').textContent = 'not signed in';
  $('status').className = 'pill';
  $('signout').hidden = true;
  $('nav').hidden = true;
  $('signin-token').focus();
}

// guard runs a view's work and shows what went wrong in the view itself;
// a refused token signs out (the API client reports 401s).
async function guard(fn) {
  const box = $('view-error');
  box.replaceChildren();
  try {
    await fn();
  } catch (e) {
    if (e.status === 401) return;
    box.append(el('p', e.message, 'error'));
  }
}

let following = false;

whenUnauthorized((e) => signedOut('That token was refused: ' + e.message));

async function show() {
  if (!sessionStorage.getItem(KEY)) return signedOut();
  const name = location.hash.slice(1) in views ? location.hash.slice(1) : 'catalog';
  $('login').hidden = true;
  $('nav').hidden = false;
  $('signout').hidden = false;
  document.querySelectorAll('.view').forEach((v) => (v.hidden = v.id !== name));
  document.querySelectorAll('#nav a').forEach((a) => {
    const on = a.dataset.view === name;
    a.classList.toggle('active', on);
    if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
  // The hash names a view, not a place to jump to: keep the header in sight.
  window.scrollTo(0, 0);
  $('status').textContent = 'signed in';
  $('status').className = 'pill ok';
  if (!following) {
    following = true;
    followApprovals();
    if (name !== 'assistant') refreshModelStatus(); // the view reads it itself
  }
  await guard(views[name]);
}

$('login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(KEY, $('signin-token').value.trim());
  $('signin-token').value = '';
  await show();
});
$('signout').addEventListener('click', () => signedOut('Signed out. The token is forgotten in this tab.'));
initCatalog(guard);
initActivity(guard);
initCalls(guard);
initTabs(guard);
initTokens(guard);
window.addEventListener('hashchange', show);
// data-console=ready says the handlers above are attached: a sign-in typed
// before then would submit the bare form (and tests wait for it).
show().finally(() => { document.documentElement.dataset.console = 'ready'; });
