// Helpers the web chat page's browser tests share (chat_page_test.mjs, chat_conversations_test.mjs):
// child processes (the server, the console client) whose output is waited on, pages logged in
// with a name, and waits and checks on what a page shows (its log, member list, room list with
// unread badges, typing line). A failed check throws after setting state.failed.
import { execFileSync, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The time zone the pages run in (Asia/Kolkata, UTC+05:30: not the machine's, whatever it is).
export const time_zone = 'Asia/Kolkata';
export const state = { failed: false };
const children = [];

/// Headless Chromium (Debian's chromium-headless-shell, driven by playwright-core from the web
/// page's npm step under <build>); exits 77 (skipped) when no Chromium exists.
export async function launch_browser(build) {
  const chromium_paths = ['/usr/bin/chromium-headless-shell', '/usr/bin/chromium'];
  const chromium_bin = chromium_paths.find((p) => existsSync(p));
  if (!chromium_bin) {
    console.log(`SKIP: no Chromium at ${chromium_paths.join(' or ')} (scripts/install-deps.sh installs chromium-headless-shell)`);
    process.exit(77);
  }
  const require = createRequire(path.join(build, 'apps/chat/web/package.json'));
  const { chromium } = require('playwright-core');
  return chromium.launch({ executablePath: chromium_bin, args: ['--no-sandbox'], headless: true });
}

/// Ends the children start() began (SIGTERM), then waits a moment for them to go.
export async function stop_children() {
  for (const c of children) if (c.p.exitCode === null) c.p.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 200));
}

/// strix-chat-server on a fresh SQLite database in `work`, with --ws-port and `args`: its process,
/// TCP port, metrics and page URLs.
export async function start_server(build, work, args = []) {
  const server = start(path.join(build, 'bin/strix-chat-server'), ['--port', '0', '--ws-port', '0', '--db',
    `sqlite:${work}/chat.db`, '--password-cost', 'fast', '--metrics-port', String(await free_port()), '--no-pin', ...args]);
  const [, tcp_port] = await server.wait_for(/listening on 127\.0\.0\.1:(\d+)/, 'server start');
  const [, metrics_url] = await server.wait_for(/metrics (http:\/\/127\.0\.0\.1:\d+\/metrics)/, 'server start');
  const [, url] = await server.wait_for(/web chat page (http:\/\/127\.0\.0\.1:\d+\/)/, 'server start');
  return { server, tcp_port, metrics_url, url };
}

export function fail(msg) {
  state.failed = true;
  throw new Error(msg);
}

// A child process whose output is collected; wait_for(re) resolves once a line matches.
export function start(bin, args, env = {}) {
  const p = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const c = { p, out: '' };
  p.stdout.on('data', (d) => { c.out += d; });
  p.stderr.on('data', (d) => { c.out += d; });
  c.wait_for = async (re, what, ms = 10000) => {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      const m = c.out.match(re);
      if (m) return m;
      if (p.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    fail(`${what}: no output matching ${re} within ${ms} ms; output:\n${c.out}`);
  };
  c.say = (line) => p.stdin.write(line + '\n');
  children.push(c);
  return c;
}

export async function page_for(browser, url, name) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 640 }, timezoneId: time_zone });
  await context.addInitScript(line_key_script);
  const page = await context.newPage();
  page.on('pageerror', (e) => { console.log(`${name}: page error: ${e.message}`); state.failed = true; });
  await page.goto(url);
  await page.waitForSelector('#conn[data-state="open"]', { timeout: 10000 });
  await page.fill('#name', name);
  await page.fill('#password', `${name}-pw`);
  await page.click('#login-form button');
  await page.waitForSelector('body[data-login="yes"]', { timeout: 10000 });
  return page;
}

// Every page gets line_key(div): a log line as the test compares it, a chat line as '#seq sender:
// text' (its time apart), a notice as its text. (An init script: the page's CSP forbids eval.)
export const line_key_script = `window.line_key = (d) => (d.classList.contains('chat')
  ? '#' + d.dataset.seq + ' ' + d.querySelector('.who').textContent + ': ' + d.querySelector('.text').textContent
  : d.textContent);`;

// Waits until the page's log (the shown room's) has a line equal to `text` (line_key).
export async function sees(page, who, text) {
  try {
    await page.waitForFunction((t) => [...document.querySelectorAll('#log div')].some((d) => window.line_key(d) === t),
      text, { timeout: 10000 });
  } catch {
    fail(`${who} did not see '${text}'; the page shows (room ${await page.evaluate(() => document.body.dataset.room)}):\n` +
      (await log_lines(page)).join('\n'));
  }
}

// The member list's names, sorted (an entry also holds its role and action buttons).
export async function members(page) {
  return (await page.$$eval('#members li', (ls) => ls.map((l) => l.dataset.name))).sort();
}

// The member list as 'name:yes|no' (data-online), sorted.
export async function online(page) {
  return (await page.$$eval('#members li', (ls) => ls.map((l) => `${l.dataset.name}:${l.dataset.online}`))).sort();
}

// Waits until `page` shows `name` with data-online = `want` (and the offline class when 'no').
export async function sees_online(page, who, name, want) {
  const sel = `#members li[data-name="${name}"][data-online="${want}"]`;
  try {
    await page.waitForSelector(sel, { timeout: 10000 });
  } catch {
    fail(`${who} did not show ${name} with data-online=${want}; the list: ${await online(page)}; the log:\n` +
      (await log_lines(page)).join('\n'));
  }
  const offline_class = await page.$eval(sel, (l) => l.classList.contains('offline'));
  if (offline_class !== (want === 'no')) fail(`${who}'s entry for ${name} (online ${want}) has offline class ${offline_class}`);
}

export async function log_lines(page, sel = '#log div') {
  return page.$$eval(sel, (ds) => ds.map((d) => window.line_key(d)));
}

export async function until(what, cond, ms = 10000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) fail(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function same(what, got, want) {
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    fail(`${what}:\n got  ${JSON.stringify(got).slice(0, 3000)}\n want ${JSON.stringify(want).slice(0, 3000)}`);
  }
}

// Just enough of a FlatBuffer reader for the frames the test looks at (docs/protocol.md): field i
// of the body's root table.
export function fields(frame) {
  const b = frame.subarray(12);
  const table = b.readUInt32LE(0);
  const vt = table - b.readInt32LE(table);
  const at = (i) => (4 + 2 * i < b.readUInt16LE(vt) ? b.readUInt16LE(vt + 4 + 2 * i) : 0);
  const ref = (i) => table + at(i) + b.readUInt32LE(table + at(i));
  return {
    type: frame.readUInt16LE(4),
    u8: (i) => (at(i) ? b[table + at(i)] : 0),
    u64: (i) => (at(i) ? b.readBigUInt64LE(table + at(i)) : 0n),
    str: (i) => (at(i) ? b.toString('utf8', ref(i) + 4, ref(i) + 4 + b.readUInt32LE(ref(i))) : ''),
    len: (i) => (at(i) ? b.readUInt32LE(ref(i)) : 0),
  };
}

// The counters of the server's /metrics (summed over shards by the server).
export async function metrics(url) {
  const text = await (await fetch(url)).text();
  return (name) => {
    const m = text.match(new RegExp(`^${name} (\\d+)$`, 'm'));
    if (!m) fail(`no ${name} on ${url}`);
    return Number(m[1]);
  };
}

// A port nothing listens on now, below the ephemeral range (scripts/free_port.py says why).
export async function free_port() {
  const script = fileURLToPath(new URL('../../scripts/free_port.py', import.meta.url));
  return Number(execFileSync('python3', [script], { encoding: 'utf8' }).trim());
}

// The rooms listed on a page's side panel (#my-rooms) as 'id:unread', current first-marked '*'.
export async function my_rooms(page) {
  return page.$$eval('#my-rooms li', (ls) => ls.map((l) => `${l.classList.contains('current') ? '*' : ''}${l.dataset.room}:${l.dataset.unread}`));
}

// Waits until a page's room list is `want` (my_rooms).
export async function lists(page, who, want) {
  try {
    await page.waitForFunction((w) => JSON.stringify([...document.querySelectorAll('#my-rooms li')].map((l) =>
      `${l.classList.contains('current') ? '*' : ''}${l.dataset.room}:${l.dataset.unread}`)) === w, JSON.stringify(want), { timeout: 10000 });
  } catch {
    fail(`${who}'s room list: got ${JSON.stringify(await my_rooms(page))}, want ${JSON.stringify(want)}`);
  }
}

// Waits until a page's typing line is `text`; the ms it took.
export async function typing_line(page, who, text, ms = 10000) {
  const t0 = Date.now();
  try {
    await page.waitForFunction((t) => document.getElementById('typing').textContent === t, text, { timeout: ms });
  } catch {
    fail(`${who}'s typing line: got '${await page.textContent('#typing')}', want '${text}' within ${ms} ms`);
  }
  return Date.now() - t0;
}
