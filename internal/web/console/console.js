// The operator console: plain DOM, no framework, no innerHTML. Every value
// from the daemon goes through textContent. This module is the shell:
// sign-in and sign-out, the views and which one shows (the URL's #hash),
// and the live approvals stream while signed in. Each view is its own
// module. Two ways in: the operator's admin token (everything), or a
// person of the host app signed in through the daemon's authorization
// server (auth.js), who gets their own approvals, activity, agents and
// access only.
import { $, KEY, MODE, REFRESH, el, userMode, whenUnauthorized, whenExpired } from './lib.js';
import { userSignIn, startUserSignIn, finishUserSignIn, renewUserToken, signedInAs } from './auth.js';
import { loadAccess } from './access.js';
import { loadTasks, initTasks } from './tasks.js';
import { loadCatalog, initCatalog } from './catalog.js';
import { loadApprovals, followApprovals, forgetApprovals } from './approvals.js';
import { loadActivity, initActivity } from './activity.js';
import { loadCalls, initCalls } from './calls.js';
import { loadAgents, loadTabs, initTabs, loadTokens, initTokens } from './agents.js';
import { loadAssistant, refreshModelStatus, hideModelStatus } from './assistant.js';

const views = {
  catalog: loadCatalog, approvals: loadApprovals, activity: loadActivity, calls: loadCalls,
  tokens: loadTokens, agents: loadAgents, tabs: loadTabs, assistant: loadAssistant, access: loadAccess, tasks: loadTasks,
};
// The views a user signed in as themselves has; the first is theirs to start on.
const userViews = ['approvals', 'activity', 'agents', 'tasks', 'access'];

// offerUserSignIn shows the "Sign in as a user" button, or the sentence
// saying why this daemon has none.
let offered = null;
async function offerUserSignIn() {
  offered = offered || userSignIn();
  const o = await offered;
  $('signin-user').hidden = !o.offered;
  $('user-signin-note').textContent = o.offered ? 'You go to the app\'s sign-in page, then approve this console; then you are back here.' : o.why;
}

function signedOut(message) {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(MODE);
  sessionStorage.removeItem(REFRESH);
  document.body.classList.remove('as-user');
  // However the session ended (sign-out, a refused token), the next
  // sign-in must start the approvals stream again.
  following = false;
  forgetApprovals();
  hideModelStatus();
  document.querySelectorAll('.view').forEach((v) => (v.hidden = true));
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  $('status').textContent = 'not signed in';
  $('status').className = 'pill';
  $('signout').hidden = true;
  $('nav').hidden = true;
  $('signin-token').focus();
  offerUserSignIn();
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

whenUnauthorized((e, why) => signedOut(why || 'That token was refused: ' + e.message));
whenExpired(renewUserToken);

async function show() {
  if (!sessionStorage.getItem(KEY)) return signedOut();
  const asUser = userMode();
  const allowed = asUser ? userViews : Object.keys(views).filter((v) => v !== 'access');
  const want = location.hash.slice(1);
  const name = allowed.includes(want) ? want : allowed[0];
  document.body.classList.toggle('as-user', asUser);
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
  $('status').textContent = asUser ? 'signed in as ' + (signedInAs() || 'a user') : 'signed in';
  $('status').className = 'pill ok';
  if (!following) {
    following = true;
    followApprovals();
    // The assistant view reads it itself; a user has no model status.
    if (name !== 'assistant' && !asUser) refreshModelStatus();
  }
  await guard(views[name]);
}

$('login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  sessionStorage.removeItem(MODE);
  sessionStorage.removeItem(REFRESH);
  sessionStorage.setItem(KEY, $('signin-token').value.trim());
  $('signin-token').value = '';
  await show();
});
$('signin-user').addEventListener('click', async () => {
  $('signin-user').disabled = true;
  try {
    await startUserSignIn(location.hash.slice(1));
  } catch (e) {
    $('login-error').textContent = 'Could not start the sign-in: ' + e.message;
    $('signin-user').disabled = false;
  }
});
$('signout').addEventListener('click', () => signedOut('Signed out. The token is forgotten in this tab.'));
initCatalog(guard);
initActivity(guard);
initTasks(guard);
initCalls(guard);
initTabs(guard);
initTokens(guard);
window.addEventListener('hashchange', show);
// data-console=ready says the handlers above are attached: a sign-in typed
// before then would submit the bare form (and tests wait for it).
// A sign-in the authorization server sent back here is finished first.
finishUserSignIn()
  .then((failed) => (failed ? signedOut(failed) : show()))
  .finally(() => { document.documentElement.dataset.console = 'ready'; });
