// The web chat page in headless Chromium (ctest browser.chat_page): strix-chat-server with
// --ws-port on a fresh SQLite database, two pages (alice, bob) and the console client over TCP
// (carol) log in, meet in one room, chat with each other, see each other come and go; alice's page
// drops its socket and comes back by itself. Each asserts what it sees. Screenshot of alice's page
// at the end: <build>/browser/chat-page.png.
//   node chat_page_test.mjs <build dir>
// Playwright (playwright-core, fetched by the web page's npm step) drives Debian's
// chromium-headless-shell; no browser is downloaded. Exits 77 (skipped) when no Chromium exists.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const build = path.resolve(process.argv[2] || 'build');
const chromium_paths = ['/usr/bin/chromium-headless-shell', '/usr/bin/chromium'];
const chromium_bin = chromium_paths.find((p) => existsSync(p));
if (!chromium_bin) {
  console.log(`SKIP: no Chromium at ${chromium_paths.join(' or ')} (scripts/install-deps.sh installs chromium-headless-shell)`);
  process.exit(77);
}
const require = createRequire(path.join(build, 'apps/chat/web/package.json'));
const { chromium } = require('playwright-core');

const work = mkdtempSync(path.join(tmpdir(), 'strix-browser-'));
const children = [];
let failed = false;

function fail(msg) {
  failed = true;
  throw new Error(msg);
}

// A child process whose output is collected; wait_for(re) resolves once a line matches.
function start(bin, args, env = {}) {
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

async function page_for(browser, url, name) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 640 } });
  const page = await context.newPage();
  page.on('pageerror', (e) => { console.log(`${name}: page error: ${e.message}`); failed = true; });
  await page.goto(url);
  await page.waitForSelector('#conn[data-state="open"]', { timeout: 10000 });
  await page.fill('#name', name);
  await page.fill('#password', `${name}-pw`);
  await page.click('#login-form button');
  await page.waitForSelector('body[data-login="yes"]', { timeout: 10000 });
  return page;
}

// Waits until the page's log has a line equal to `text`.
async function sees(page, who, text) {
  try {
    await page.waitForFunction((t) => [...document.querySelectorAll('#log div')].some((d) => d.textContent === t),
      text, { timeout: 10000 });
  } catch {
    const log = await page.$$eval('#log div', (ds) => ds.map((d) => d.textContent).join('\n'));
    fail(`${who} did not see '${text}'; the page shows:\n${log}`);
  }
}

async function members(page) {
  return (await page.$$eval('#members li', (ls) => ls.map((l) => l.textContent))).sort();
}

let browser;
try {
  const server = start(path.join(build, 'bin/strix-chat-server'), ['--port', '0', '--ws-port', '0', '--db',
    `sqlite:${work}/chat.db`, '--password-cost', 'fast', '--metrics-port', '0', '--shards', '2', '--no-pin']);
  const [, tcp_port] = await server.wait_for(/listening on 127\.0\.0\.1:(\d+)/, 'server start');
  const [, url] = await server.wait_for(/web chat page (http:\/\/127\.0\.0\.1:\d+\/)/, 'server start');

  browser = await chromium.launch({ executablePath: chromium_bin, args: ['--no-sandbox'], headless: true });
  const alice = await page_for(browser, url, 'alice');
  await alice.fill('#new-room', 'garden');
  await alice.click('#create-form button');
  await alice.waitForFunction(() => document.body.dataset.room !== '', null, { timeout: 10000 });
  const room = await alice.evaluate(() => document.body.dataset.room);

  const bob = await page_for(browser, url, 'bob');
  await bob.click('#refresh');
  await bob.click(`button[data-room="${room}"]`, { timeout: 10000 });
  await bob.waitForFunction((r) => document.body.dataset.room === r, room, { timeout: 10000 });
  await sees(alice, 'alice', '* bob joined');

  const carol = start(path.join(build, 'bin/strix-chat-client'),
    ['--port', tcp_port, '--name', 'carol', '--password', 'carol-pw', '--no-device-token'],
    { XDG_STATE_HOME: `${work}/state` });
  await carol.wait_for(/logged in as carol/, 'carol login');
  carol.say(`/join ${room}`);
  await carol.wait_for(new RegExp(`joined room ${room} 'garden' .*members: .*alice.*bob`), 'carol join');
  await sees(alice, 'alice', '* carol joined');
  await sees(bob, 'bob', '* carol joined');
  const want = ['alice', 'bob', 'carol'];
  for (const [who, p] of [['alice', alice], ['bob', bob]]) {
    const m = await members(p);
    if (JSON.stringify(m) !== JSON.stringify(want)) fail(`${who}'s member list is ${m}, expected ${want}`);
  }

  // Each says something; everyone sees the three lines with the same seqs.
  await alice.fill('#text', 'hello from alice');
  await alice.click('#chat-form button');
  await sees(bob, 'bob', `[${room}#1] alice: hello from alice`);
  await carol.wait_for(new RegExp(`\\[${room}#1\\] alice: hello from alice`), 'carol hears alice');
  carol.say('hi from the terminal');
  await sees(alice, 'alice', `[${room}#2] carol: hi from the terminal`);
  await sees(bob, 'bob', `[${room}#2] carol: hi from the terminal`);
  await bob.fill('#text', 'bob here');
  await bob.click('#chat-form button');
  await sees(alice, 'alice', `[${room}#3] bob: bob here`);
  await carol.wait_for(new RegExp(`\\[${room}#3\\] bob: bob here`), 'carol hears bob');

  // bob leaves; the others see it.
  await bob.click('#leave');
  await sees(bob, 'bob', `left room ${room}`);
  await sees(alice, 'alice', '* bob left');
  await carol.wait_for(new RegExp(`\\* bob left room ${room}`), 'carol sees bob leave');

  // alice's socket drops: the page says so, reconnects with backoff, logs in again and is put
  // back into her room by the server.
  await alice.click('#drop');
  await alice.waitForSelector('#conn[data-state="closed"]', { timeout: 5000 });
  await alice.waitForSelector('#conn[data-state="open"]', { timeout: 15000 });
  await alice.waitForFunction((r) => document.body.dataset.room === r, room, { timeout: 10000 });
  await alice.fill('#text', 'back again');
  await alice.click('#chat-form button');
  await carol.wait_for(new RegExp(`\\[${room}#4\\] alice: back again`), 'carol hears alice after her reconnect');
  await sees(alice, 'alice', `[${room}#4] alice: back again`);

  mkdirSync(path.join(build, 'browser'), { recursive: true });
  const shot = path.join(build, 'browser/chat-page.png');
  await alice.screenshot({ path: shot });
  console.log(`screenshot: ${shot}`);
  carol.say('/quit');
} catch (e) {
  failed = true;
  console.log(`FAIL: ${e.message}`);
} finally {
  if (browser) await browser.close();
  for (const c of children) if (c.p.exitCode === null) c.p.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 200));
  rmSync(work, { recursive: true, force: true });
}
if (failed) process.exit(1);
console.log('PASS: the web chat page in Chromium, with a TCP client');
