// The chat app example end to end (ctest browser.chat_app): a real strix-chat-server on free
// ports with a fresh SQLite database, JWT logins only (--jwt-key), webhooks to the example's
// backend (--webhook-url, --webhook-secret, message.stored for "lobby"), and the backend
// (examples/chat_app/server.mjs, built into <build>/examples/chat_app) handing out 4-second
// tokens. The backend refuses a wrong password and webhooks with a bad signature or an old
// timestamp. Two users log in through the backend's page in headless Chromium, meet in "lobby"
// and chat (both pages show the same lines in seq order); their tokens expire and the pages
// refresh them (the chat goes on in the same session); an announcement through the backend
// reaches both pages where the server API posts messages (else the page shows the refusal). Then bob leaves, and the backend's
// verified webhooks are checked: who came online and went offline, and lobby's events in order
// (created, two joins, every message stored by seq). Screenshot: <build>/browser/chat-app.png.
//   node chat_app_test.mjs <build dir>
// Exits 77 (skipped) when no Chromium exists (tests/browser/page_helpers.mjs).
import { execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  fail, free_port, launch_browser, same, start, start_server, state, stop_children,
} from '../../../tests/browser/page_helpers.mjs';

const build = path.resolve(process.argv[2] || 'build');
const backend_js = path.join(build, 'examples/chat_app/server.mjs');
const work = mkdtempSync(path.join(tmpdir(), 'strix-chat-app-'));
const token_ttl_s = 4;

const help = execFileSync(path.join(build, 'bin/strix-chat-server'), ['--help'], { encoding: 'utf8' });
const has_api = help.includes('--api-port');

/// The backend's verified webhook events so far (GET /events).
async function events(app) {
  return (await fetch(`${app}/events`)).json();
}

/// Whether the server API takes POST /api/v1/rooms/{id}/messages: a room that does not exist is
/// unknown_room there, and not_found (no such endpoint) on a server without it.
async function api_posts(api, key) {
  const res = await fetch(`${api}/api/v1/rooms/999999/messages`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ text: 'probe', idempotency_key: 'probe' }),
  });
  const answer = await res.json();
  if (answer.error !== 'not_found' && answer.error !== 'unknown_room') fail(`the API's answer to a post: ${res.status} ${JSON.stringify(answer)}`);
  return answer.error === 'unknown_room';
}

/// A page logged in to the app as `user` and then into the chat with the backend's JWT, in lobby.
async function log_in(browser, app, user) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 760 } });
  const page = await context.newPage();
  page.on('pageerror', (e) => { console.log(`${user}: page error: ${e.message}`); state.failed = true; });
  await page.goto(app);
  await page.fill('#username', user);
  await page.fill('#password', 'demo');
  await page.click('#login-form button');
  try {
    await page.waitForSelector('body[data-state="open"][data-room]', { timeout: 10000 });
  } catch {
    fail(`${user} did not get into the room; the page says: ${await page.textContent('body')}`);
  }
  return page;
}

async function lines(page) {
  return page.$$eval('#log div.chat', (ds) => ds.map((d) => `#${d.dataset.seq} ${d.querySelector('.who').textContent}: ${d.querySelector('.text').textContent}`));
}

/// `who` says `text` and waits until both pages show the log `want`.
async function say(pages, who, text, want) {
  await pages[who].fill('#text', text);
  await pages[who].click('#chat-form button');
  for (const [name, page] of Object.entries(pages)) {
    try {
      await page.waitForFunction((n) => document.querySelectorAll('#log div.chat').length === n, want.length, { timeout: 10000 });
    } catch {
      fail(`${name} does not show ${want.length} lines after '${text}': ${JSON.stringify(await lines(page))}`);
    }
    same(`${name}'s log after ${who}: ${text}`, await lines(page), want);
  }
}

/// A webhook POST signed with `secret` at `timestamp`; its status.
async function post_webhook(app, secret, timestamp, body) {
  const signature = `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
  const res = await fetch(`${app}/webhooks`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Strix-Timestamp': String(timestamp), 'X-Strix-Signature': signature },
    body,
  });
  return res.status;
}

async function check_backend_refusals(app, webhook_secret) {
  const now = Math.floor(Date.now() / 1000);
  const forged = JSON.stringify({ id: 'forged', events: [{ id: 'forged-1', type: 'user.online', user: { id: 1, name: 'mallory' } }] });
  same('a webhook signed with another secret', await post_webhook(app, 'not-the-secret-0123456789', now, forged), 401);
  same('a webhook replayed from 10 minutes ago', await post_webhook(app, webhook_secret, now - 600, forged), 401);
  const unsigned = await fetch(`${app}/webhooks`, { method: 'POST', body: forged });
  same('a webhook without a signature', unsigned.status, 401);
  const got = await events(app);
  same('events after the refused webhooks (count, refused)', [got.events.length, got.refused], [0, 3]);

  const wrong = await fetch(`${app}/login`, { method: 'POST', body: JSON.stringify({ username: 'alice', password: 'nope' }) });
  same('a login with a wrong password', wrong.status, 401);
  same('a token without a session', (await fetch(`${app}/token`, { method: 'POST' })).status, 401);
}

async function main() {
  const browser = await launch_browser(build);
  if (!existsSync(backend_js)) fail(`no ${backend_js}: build the strix_example_chat_app target`);
  const jwt_key = `${work}/jwt.key`;
  const webhook_secret = randomBytes(32).toString('hex');
  writeFileSync(jwt_key, `${randomBytes(32).toString('hex')}\n`);
  writeFileSync(`${work}/webhook.secret`, `${webhook_secret}\n`);

  const app_port = await free_port();
  const app = `http://127.0.0.1:${app_port}`;
  const server_args = ['--jwt-key', jwt_key, '--jwt-leeway', '0', '--jwt-grace', '30', '--ws-origins', app,
    '--webhook-url', `${app}/webhooks`, '--webhook-secret', `${work}/webhook.secret`, '--webhook-messages', 'lobby',
    '--webhook-backoff-ms', '50'];
  const backend_args = ['--port', String(app_port), '--jwt-key', jwt_key, '--webhook-secret', `${work}/webhook.secret`,
    '--token-ttl', String(token_ttl_s)];
  const api_key = randomBytes(32).toString('hex');
  const api = has_api ? `http://127.0.0.1:${await free_port()}` : null;
  if (api) {
    writeFileSync(`${work}/api-keys`, `${api_key} backend\n`);
    server_args.push('--api-port', new URL(api).port, '--api-keys', `${work}/api-keys`);
    backend_args.push('--api-url', api, '--api-key', `${work}/api-keys`);
  }
  const { server, url } = await start_server(build, work, server_args);
  const can_post = api !== null && await api_posts(api, api_key);
  if (!can_post) console.log('SKIP the announcement: this strix-chat-server cannot post through its API (POST /api/v1/rooms/{id}/messages)');
  const chat_url = `ws://${new URL(url).host}/ws`;
  const backend = start('node', [backend_js, '--chat-url', chat_url, ...backend_args]);
  await backend.wait_for(/chat app backend http:\/\/127\.0\.0\.1:\d+\//, 'backend start');

  await check_backend_refusals(app, webhook_secret);

  // alice comes first and creates lobby; bob finds it and joins.
  const pages = {};
  pages.alice = await log_in(browser, app, 'alice');
  pages.bob = await log_in(browser, app, 'bob');
  const room = await pages.alice.evaluate(() => document.body.dataset.room);
  same("bob's room", await pages.bob.evaluate(() => document.body.dataset.room), room);
  await pages.alice.waitForFunction(() => [...document.querySelectorAll('#log .note')].some((d) => d.textContent === 'bob joined'),
    null, { timeout: 10000 });

  const want = [];
  const talk = [['alice', 'hello bob'], ['bob', 'hi alice'], ['alice', 'how is the weather?'], ['bob', 'sunny']];
  for (const [who, text] of talk) {
    want.push(`#${want.length + 1} ${who}: ${text}`);
    await say(pages, who, text, want);
  }

  // Both tokens last 4 s: each page is told tokenExpired, gets a fresh one from the backend and
  // refreshes; the same sessions chat on.
  for (const [who, page] of Object.entries(pages)) {
    try {
      await page.waitForFunction(() => Number(document.body.dataset.refreshes) >= 1, null, { timeout: (token_ttl_s + 8) * 1000 });
    } catch {
      fail(`${who}'s page did not refresh its token: ${await page.textContent('#log')}`);
    }
  }
  want.push(`#${want.length + 1} bob: still here after the refresh`);
  await say(pages, 'bob', 'still here after the refresh', want);
  same('pages still open (no reconnect)', await Promise.all(Object.values(pages).map((p) => p.evaluate(() => document.body.dataset.state))), ['open', 'open']);

  if (can_post) {
    await announce(pages, want);
  } else {
    // The page says why the backend could not post, and nothing reaches the room.
    await pages.alice.fill('#announce-text', 'not today');
    await pages.alice.click('#announce-form button');
    await pages.alice.waitForSelector('#announce-result[data-seq="error"]', { timeout: 10000 });
    const shown = await pages.alice.textContent('#announce-result');
    if (!shown.startsWith('refused: ')) fail(`alice's page after a refused announcement: ${shown}`);
  }

  mkdirSync(path.join(build, 'browser'), { recursive: true });
  await pages.alice.screenshot({ path: path.join(build, 'browser/chat-app.png'), fullPage: true });
  await pages.bob.context().close();
  await check_webhooks(app, room, want);
  await check_tcp_and_tls(app, server, jwt_key);
  await browser.close();
  server.p.kill('SIGTERM');
}

/// The same deployment from a terminal: carol signs in to the backend, takes the JWT it signs, and
/// strix-chat-client logs in with it over plain TCP and, on a second server with a certificate
/// (same --jwt-key), over TLS, verifying the server.
async function check_tcp_and_tls(app, server, jwt_key) {
  const signed_in = await fetch(`${app}/login`, { method: 'POST', body: JSON.stringify({ username: 'carol', password: 'demo' }) });
  same('carol signs in to the backend', signed_in.status, 200);
  const sid = signed_in.headers.get('set-cookie').split(';')[0];
  const minted = await fetch(`${app}/token`, { method: 'POST', headers: { cookie: sid } });
  same('the backend signs carol a token', minted.status, 200);
  const token_file = `${work}/carol.jwt`;
  writeFileSync(token_file, `${(await minted.json()).token}\n`);
  const client = (args) => execFileSync(path.join(build, 'bin/strix-chat-client'), [...args, '--jwt-file', token_file],
    { input: '/quit\n', encoding: 'utf8', timeout: 20000 });
  const tcp_port = server.out.match(/listening on 127\.0\.0\.1:(\d+)/)[1];
  const over_tcp = client(['--port', tcp_port]);
  if (!/logged in as carol \(player \d+\)/.test(over_tcp)) fail(`carol over TCP:\n${over_tcp}`);

  const tls_work = `${work}/tls`;
  mkdirSync(tls_work, { recursive: true });
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', `${tls_work}/key.pem`, '-out', `${tls_work}/cert.pem`, '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  const tls = start(path.join(build, 'bin/strix-chat-server'), ['--port', '0', '--db', `sqlite:${tls_work}/chat.db`,
    '--metrics-port', '0', '--no-pin', '--jwt-key', jwt_key, '--tls-cert', `${tls_work}/cert.pem`,
    '--tls-key', `${tls_work}/key.pem`]);
  const [, tls_port] = await tls.wait_for(/listening on 127\.0\.0\.1:(\d+) \(TLS\)/, 'the TLS server\'s start');
  const over_tls = client(['--tls', '--ca', `${tls_work}/cert.pem`, '--port', tls_port]);
  if (!/logged in as carol \(player \d+\), new account/.test(over_tls)) fail(`carol over TLS:\n${over_tls}`);
  tls.p.kill('SIGTERM');
}

/// alice announces through the backend (which posts with the server API): both pages show it.
async function announce(pages, want) {
  await pages.alice.fill('#announce-text', 'the lobby closes at ten');
  await pages.alice.click('#announce-form button');
  await pages.alice.waitForSelector('#announce-result[data-seq]', { timeout: 10000 });
  const seq = await pages.alice.getAttribute('#announce-result', 'data-seq');
  same('the announcement\'s seq', seq, String(want.length + 1));
  for (const [who, page] of Object.entries(pages)) {
    await page.waitForFunction((n) => document.querySelectorAll('#log div.chat').length === n, want.length + 1, { timeout: 10000 });
    const last = (await lines(page)).at(-1);
    same(`${who}'s log with the announcement`, await lines(page), [...want, `#${seq} system: Alice Example announces: the lobby closes at ten`]);
  }
  want.push(`#${seq} system: Alice Example announces: the lobby closes at ten`);
}

/// The backend's verified events: who came and went, and lobby's in order.
async function check_webhooks(app, room, want) {
  const got = () => events(app);
  let last;
  const end = Date.now() + 10000;
  for (;;) {
    last = await got();
    if (last.events.some((e) => e.type === 'user.offline' && e.user.name === 'bob')) break;
    if (Date.now() > end) fail(`no user.offline for bob; the backend has: ${JSON.stringify(last.events.map((e) => e.type))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const users = last.events.filter((e) => e.type.startsWith('user.')).map((e) => `${e.type} ${e.user.name}`);
  same('user events', users, ['user.online alice', 'user.online bob', 'user.offline bob']);
  const in_lobby = last.events.filter((e) => String(e.room?.id) === room);
  same('every room event names lobby', [...new Set(in_lobby.map((e) => e.room.name))], ['lobby']);
  same('lobby\'s events in order', in_lobby.map((e) => (e.type === 'message.stored' ? `${e.type} #${e.seq}` : `${e.type} ${e.user.name}`)), [
    'room.created alice', 'member.joined alice', 'member.joined bob', ...want.map((_, i) => `message.stored #${i + 1}`)]);
  const texts = in_lobby.filter((e) => e.type === 'message.stored').map((e) => `#${e.seq} ${e.user?.name ?? 'system'}: ${e.text}`);
  same('the messages stored, as webhooks', texts, want);
  same('events not in lobby or about users', last.events.length - in_lobby.length - users.length, 0);
  same('webhooks refused (the test\'s three)', last.refused, 3);
}

try {
  await main();
  console.log('chat app example: logins, chat, token refresh, webhooks OK');
} catch (e) {
  console.log(String(e?.stack ?? e));
  state.failed = true;
} finally {
  await stop_children();
  rmSync(work, { recursive: true, force: true });
}
process.exit(state.failed ? 1 : 0);
