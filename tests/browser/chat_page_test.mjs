// The web chat page in headless Chromium (ctest browser.chat_page): strix-chat-server with
// --ws-port on a fresh SQLite database, two pages (alice, bob) and the console client over TCP
// (carol) log in, meet in one room, chat with each other, see each other come and go and go
// offline. alice's page loses its socket twice and is kept down (the test holds its reconnects)
// while the others talk; when it is let back it logs in with its resume token (round 1) or, the
// token revoked meanwhile, with the password (round 2), and recovers what it missed: by resume_req
// (round 1, over two resume_res frames) or, over --resume-max, by history_req pages (round 2).
// The test holds the resume answer until a live message has reached the page, so the page must
// put the recovered messages before it. Each asserts what it sees, what alice's page sent (the
// test sits on its socket: Playwright's routeWebSocket) and the server's metrics. Screenshot of
// alice's page at the end: <build>/browser/chat-page.png; bob's while alice is offline:
// <build>/browser/chat-page-presence.png. Then the pages are in two rooms each (protocol version
// 2): a message in the room a page does not show raises that room's unread badge, on alice's
// second page too (whose login counts it); opening the room clears it (read_req, and read_marker
// on the other page); typing shows a line on the others' pages, for 5 s or until the typist
// speaks; alice's page drops again and resumes each room; a leave takes the room off the list. Chat lines show the sender and the server's time
// in the page's time zone (the test's pages run in Asia/Kolkata, UTC+05:30).
//   node chat_page_test.mjs <build dir>
// Playwright (playwright-core, fetched by the web page's npm step) drives Debian's
// chromium-headless-shell; no browser is downloaded. Exits 77 (skipped) when no Chromium exists.
// Helpers: page_helpers.mjs.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  fail, fields, launch_browser, lists, log_lines, members, metrics, my_rooms, online, page_for, same, sees,
  sees_online, start, start_server, state, stop_children, time_zone, typing_line, until,
} from './page_helpers.mjs';

const build = path.resolve(process.argv[2] || 'build');
const hh_mm = new Intl.DateTimeFormat('en-GB', { timeZone: time_zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
const test_start = Date.now();
const work = mkdtempSync(path.join(tmpdir(), 'strix-browser-'));

// Protocol version 2 with two pages of two accounts (and alice's second page): both are in garden
// (`room`, shown) and a second room, shed; unread badges, read markers, typing, a leave.
async function two_rooms({ alice, bob, room, wire, url, say, expected }) {
  await alice.fill('#new-room', 'shed');
  await alice.click('#create-form button');
  await alice.waitForFunction((r) => document.body.dataset.room !== r, room, { timeout: 10000 });
  const shed = await alice.evaluate(() => document.body.dataset.room);
  await bob.click('#refresh');
  await bob.click(`#rooms button[data-room="${shed}"]`, { timeout: 10000 });
  await bob.waitForFunction((r) => document.body.dataset.room === r, shed, { timeout: 10000 });
  await sees(alice, 'alice', '* bob joined');
  await lists(bob, 'bob', [`${room}:0`, `*${shed}:0`]);

  // alice goes back to garden; bob says something in shed: her shed badge counts it.
  await alice.click(`#my-rooms li[data-room="${room}"] button`);
  await lists(alice, 'alice', [`*${room}:0`, `${shed}:0`]);
  await bob.fill('#text', 'anyone in the shed?');
  await bob.click('#chat-form button');
  await sees(bob, 'bob', '#1 bob: anyone in the shed?');
  await lists(alice, 'alice', [`*${room}:0`, `${shed}:1`]);

  // alice's second page: its login lists both rooms, shed with one unread (its marker is 0).
  const alice2 = await page_for(browser, url, 'alice');
  await alice2.waitForFunction((r) => document.body.dataset.room === r, room, { timeout: 10000 });
  await lists(alice2, 'alice (second page)', [`*${room}:0`, `${shed}:1`]);
  await bob.fill('#text', 'the tools are here');
  await bob.click('#chat-form button');
  await lists(alice, 'alice', [`*${room}:0`, `${shed}:2`]);
  await lists(alice2, 'alice (second page)', [`*${room}:0`, `${shed}:2`]);

  // alice opens shed: both lines are there, her badge clears, read_req{shed, 2} goes out, and
  // the server's read_marker clears the badge on her second page.
  const reads_before = wire.sent.filter((f) => f.type === 19).length;
  await alice.click(`#my-rooms li[data-room="${shed}"] button`);
  await lists(alice, 'alice', [`${room}:0`, `*${shed}:0`]);
  same("alice's shed", await log_lines(alice, '#log div.chat'), ['#1 bob: anyone in the shed?', '#2 bob: the tools are here']);
  await until("alice's read_req", () => wire.sent.filter((f) => f.type === 19).length > reads_before);
  same("alice's read_req (room, seq)", wire.sent.filter((f) => f.type === 19).slice(reads_before)
    .map((f) => [String(f.u64(0)), Number(f.u64(1))]), [[shed, 2]]);
  await lists(alice2, 'alice (second page)', [`*${room}:0`, `${shed}:0`]);

  // Typing: bob types in shed; alice (showing shed) sees the line, alice's second page (showing
  // garden) does not until it opens shed. alice types: bob sees her, her own second page never.
  await alice2.click(`#my-rooms li[data-room="${shed}"] button`);
  await bob.type('#text', 'hm');
  await typing_line(alice, 'alice', 'bob is typing…');
  await typing_line(alice2, 'alice (second page)', 'bob is typing…');
  await alice.type('#text', 'wait');
  await typing_line(bob, 'bob', 'alice is typing…');
  const seen_at = Date.now();
  // bob's message clears his line at once; alice's on bob's page goes after 5 s.
  await bob.fill('#text', 'hmm, no');
  await bob.click('#chat-form button');
  await sees(alice, 'alice', '#3 bob: hmm, no');
  await sees(alice2, 'alice (second page)', '#3 bob: hmm, no');
  same("alice's typing line once bob spoke", await alice.textContent('#typing'), '');
  same("alice's second page's typing line (never her own)", await alice2.textContent('#typing'), '');
  await typing_line(bob, 'bob', '', 8000);
  const gone_ms = Date.now() - seen_at;
  if (gone_ms < 4000) fail(`alice's typing line left bob's page after ${gone_ms} ms, before 5 s`);
  await alice.fill('#text', '');

  // alice's page drops while bob says one line in each room: back by its resume token, it asks
  // resume_req per room from the seq it has of it, and garden's missed line counts as unread.
  wire.held = true;
  wire.sent = [];
  await alice.click('#drop');
  await alice.waitForSelector('#conn[data-state="closed"]', { timeout: 5000 });
  await bob.fill('#text', 'the shed while alice is away');
  await bob.click('#chat-form button');
  await sees(bob, 'bob', '#4 bob: the shed while alice is away');
  await bob.click(`#my-rooms li[data-room="${room}"] button`);
  const garden_had = expected.length;
  const missed_line = await say('bob', 'garden while alice is away');
  wire.held = false;
  await alice.waitForSelector(`body[data-login="yes"][data-login-by="token"][data-room="${shed}"]`, { timeout: 20000 });
  await sees(alice, 'alice', 'recovered 1 missed message');
  await sees(alice, 'alice', '#4 bob: the shed while alice is away');
  same('resume_req per room (room, last_seq)', wire.sent.filter((f) => f.type === 17)
    .map((f) => [String(f.u64(0)), Number(f.u64(1))]).sort(), [[room, garden_had], [shed, 3]].sort());
  await lists(alice, 'alice', [`${room}:1`, `*${shed}:0`]);
  await alice.click(`#my-rooms li[data-room="${room}"] button`);
  await sees(alice, 'alice', missed_line);
  await sees(alice, 'alice', 'recovered 1 missed message');
  await lists(alice, 'alice', [`*${room}:0`, `${shed}:0`]);
  same("alice's garden after the drop", await log_lines(alice, '#log div.chat'), expected);
  await bob.click(`#my-rooms li[data-room="${shed}"] button`);
  await alice.click(`#my-rooms li[data-room="${shed}"] button`);

  // bob leaves shed (the room he shows): it leaves his list, he shows garden, alice sees it.
  await bob.click('#leave');
  await sees(bob, 'bob', `left room ${shed} 'shed'`);
  await lists(bob, 'bob', [`*${room}:0`]);
  await sees(alice, 'alice', '* bob left');
  same("alice's shed members", await members(alice), ['alice']);
  await alice2.close();
}

let browser;
try {
  const resume_max = 100;
  const burst = resume_max + 150; // round 2: over --resume-max, and over one history page (200)
  const { tcp_port, metrics_url, url } = await start_server(build, work, ['--shards', '2',
    '--resume-max', String(resume_max), '--chat-burst', String(burst + 50)]);
  browser = await launch_browser(build);
  const alice = await page_for(browser, url, 'alice');
  await alice.fill('#new-room', 'garden');
  await alice.click('#create-form button');
  await alice.waitForFunction(() => document.body.dataset.room !== '', null, { timeout: 10000 });
  const room = await alice.evaluate(() => document.body.dataset.room);

  const bob = await page_for(browser, url, 'bob');
  await bob.click('#refresh');
  await bob.click(`#rooms button[data-room="${room}"]`, { timeout: 10000 });
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
    same(`${who}'s member list`, await members(p), want);
    same(`${who}'s online states`, await online(p), want.map((n) => `${n}:yes`));
  }

  // What the room's messages are, in seq order, as the test sent them: each one is waited for
  // (on bob's page) before the next, so the order is the test's.
  const expected = [];
  const pages = { alice, bob };
  async function say(who, text) {
    if (who === 'carol') {
      carol.say(text);
    } else {
      await pages[who].fill('#text', text);
      await pages[who].click('#chat-form button');
    }
    const l = `#${expected.length + 1} ${who}: ${text}`;
    expected.push(l);
    await sees(bob, 'bob', l);
    return l;
  }

  // Each says something; everyone sees the three lines with the same seqs.
  await say('alice', 'hello from alice');
  await carol.wait_for(new RegExp(`\\[${room}#1\\] alice: hello from alice`), 'carol hears alice');
  await sees(alice, 'alice', await say('carol', 'hi from the terminal'));
  await sees(alice, 'alice', await say('bob', 'bob here'));
  await carol.wait_for(new RegExp(`\\[${room}#3\\] bob: bob here`), 'carol hears bob');
  same("alice's messages", await log_lines(alice, '#log div.chat'), expected);

  // From here on the test sits on alice's socket: it records what her page sends, refuses her
  // reconnects while `held`, and keeps resume_res frames from her page while `hold_resume`.
  const wire = { held: false, hold_resume: false, queued: [], link: null, server: null, sent: [], resume_res: [] };
  const alice_context = alice.context();
  await alice_context.routeWebSocket(/\/ws$/, (ws) => {
    if (wire.held) {
      ws.close({ code: 1013, reason: 'held by the test' });
      return;
    }
    const server_side = ws.connectToServer();
    wire.link = ws;
    wire.server = server_side;
    ws.onMessage((m) => {
      wire.sent.push(fields(m));
      server_side.send(m);
    });
    server_side.onMessage((m) => {
      if (fields(m).type === 18) {
        wire.resume_res.push(fields(m));
        if (wire.hold_resume) return void wire.queued.push(m);
      }
      ws.send(m);
    });
  });
  const sent = (type) => wire.sent.filter((f) => f.type === type);
  const release_resume = () => {
    wire.hold_resume = false;
    for (const m of wire.queued.splice(0)) wire.link.send(m);
  };
  const chat_lines = () => log_lines(alice, '#log div.chat');

  // Round 1: alice's page drops its socket and stays down; bob sees her offline (still a member).
  wire.held = true;
  await alice.click('#drop');
  await alice.waitForSelector('#conn[data-state="closed"]', { timeout: 5000 });
  await sees_online(bob, 'bob', 'alice', 'no');
  await sees(bob, 'bob', '* alice went offline');
  await carol.wait_for(new RegExp(`\\* alice is offline from room ${room}`), 'carol sees alice offline');
  same("bob's member list with alice offline", await members(bob), want);
  mkdirSync(path.join(build, 'browser'), { recursive: true });
  await bob.screenshot({ path: path.join(build, 'browser/chat-page-presence.png') });

  // bob and carol talk meanwhile: two short lines and two long ones (more than one resume_res holds).
  const had = expected.length;
  await say('bob', 'alice, are you there?');
  await say('carol', `long ${'0123456789'.repeat(4000)} one`);
  await say('bob', 'she will read it later');
  await say('carol', `long ${'abcdefghij'.repeat(4000)} two`);
  const missed = expected.length - had;
  same("alice's messages while she is down", await chat_lines(), expected.slice(0, had));
  if ((await alice.getAttribute('#conn', 'data-state')) === 'open') fail("alice's page reconnected while held");

  // Let her back; her resume answer waits until a live message has reached her page.
  wire.hold_resume = true;
  wire.held = false;
  await alice.waitForSelector(`body[data-login="yes"][data-login-by="token"][data-room="${room}"]`, { timeout: 20000 });
  await until('alice\'s resume answer', () => wire.queued.length > 0);
  const live1 = await say('carol', 'a live line before her resume answer');
  await sees(alice, 'alice', live1);
  same("alice's messages before her resume answer", await chat_lines(), [...expected.slice(0, had), live1]);
  release_resume();
  await sees(alice, 'alice', `recovered ${missed} missed messages`);
  same("alice's messages after round 1 (each once, in seq order)", await chat_lines(), expected);

  // What her page sent: one login with the token and no password, one resume_req from the last
  // seq it had; the answer came in several complete frames.
  same('round 1 logins (name, password, token bytes)', sent(1).map((f) => [f.str(0), f.str(1), f.len(3)]),
    [['alice', '', 32]]);
  same('round 1 resume_req (room, last_seq)', sent(17).map((f) => [String(f.u64(0)), Number(f.u64(1))]), [[room, had]]);
  if (wire.resume_res.length < 2) fail(`round 1's resume came in ${wire.resume_res.length} frame(s), expected several`);
  same('round 1 resume_res (status, more)', wire.resume_res.map((f) => [f.u8(1), f.u8(5)]),
    wire.resume_res.map((_, i) => [0, i < wire.resume_res.length - 1 ? 1 : 0]));
  await sees_online(bob, 'bob', 'alice', 'yes');
  let m = await metrics(metrics_url);
  same('resume token logins, resumes after round 1', [m('strix_resume_token_logins_total'), m('strix_resumes_total')], [1, 1]);

  // Round 2: the connection is cut from outside; carol says more than --resume-max lines while
  // alice is down, and alice's resume token is revoked.
  wire.held = true;
  wire.sent = [];
  wire.resume_res = [];
  // Both sides: closing one does not close the other when the test handles the messages.
  wire.server.close();
  wire.link.close({ code: 1012, reason: 'cut by the test' });
  await alice.waitForSelector('#conn[data-state="closed"]', { timeout: 5000 });
  await sees_online(bob, 'bob', 'alice', 'no');
  const had2 = expected.length;
  const lines = [];
  for (let i = 1; i <= burst; ++i) lines.push(`burst ${i} of ${burst}`);
  carol.say(lines.join('\n'));
  for (const t of lines) expected.push(`#${expected.length + 1} carol: ${t}`);
  await sees(bob, 'bob', expected[expected.length - 1]);
  same("bob's messages (online throughout)", await log_lines(bob, '#log div.chat'), expected);
  const revoke = spawn(path.join(build, 'bin/strix-chat-server'),
    ['--db', `sqlite:${work}/chat.db`, '--revoke-device-tokens', 'alice'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let revoked = '';
  revoke.stdout.on('data', (d) => { revoked += d; });
  const code = await new Promise((r) => revoke.on('close', r));
  const n = Number((revoked.match(/revoked (\d+) resume tokens? of alice/) || [])[1]);
  if (code !== 0 || !(n >= 1)) fail(`--revoke-device-tokens alice: exit ${code}, output: ${revoked}`);

  wire.hold_resume = true;
  wire.held = false;
  await alice.waitForSelector(`body[data-login="yes"][data-login-by="password"][data-room="${room}"]`, { timeout: 20000 });
  await sees(alice, 'alice', 'the resume token was refused: logging in with the password');
  await until('alice\'s second resume answer', () => wire.queued.length > 0);
  const live2 = await say('bob', 'a live line before the gap answer');
  await sees(alice, 'alice', live2);
  release_resume();
  await sees(alice, 'alice', `recovered ${burst} missed messages`);
  same("alice's messages after round 2 (each once, in seq order)", await chat_lines(), expected);

  // The token was refused, the password followed; the resume was a gap, paged with history_req
  // after_seq from the seq she had to the join's last seq.
  same('round 2 logins (name, password, token bytes)', sent(1).map((f) => [f.str(0), f.str(1), f.len(3)]),
    [['alice', '', 32], ['alice', 'alice-pw', 0]]);
  same('round 2 resume_req (room, last_seq)', sent(17).map((f) => [String(f.u64(0)), Number(f.u64(1))]), [[room, had2]]);
  same('round 2 resume_res (status, messages, to_seq)', wire.resume_res.map((f) => [f.u8(1), f.len(2), Number(f.u64(3))]),
    [[1, 0, had2 + burst]]);
  const pages_asked = sent(15).map((f) => Number(f.u64(2)));
  if (pages_asked.length < 2 || pages_asked[0] !== had2) fail(`round 2's history_req after_seqs: ${pages_asked}`);
  await sees_online(bob, 'bob', 'alice', 'yes');
  m = await metrics(metrics_url);
  same('resume token logins, refused, resumes, gaps, history requests after round 2',
    [m('strix_resume_token_logins_total'), m('strix_resume_tokens_refused_total'), m('strix_resumes_total'),
     m('strix_resume_gaps_total'), m('strix_history_requests_total')], [1, 1, 1, 1, pages_asked.length]);

  // bob saw alice go offline and come back, twice, in that order.
  same("bob's notices about alice", (await log_lines(bob, '#log div.notice')).filter((l) => l.startsWith('* alice')),
    ['* alice went offline', '* alice is back online', '* alice went offline', '* alice is back online']);

  // She talks again; carol hears it at the next seq.
  const back = await say('alice', 'back again');
  await carol.wait_for(new RegExp(`\\[${room}#${expected.length}\\] alice: back again`), 'carol hears alice after her reconnect');
  await sees(alice, 'alice', back);

  // Each chat line's time is the server's, as HH:MM in the page's time zone: one of the minutes
  // the test has run through, there.
  const minutes = new Set();
  for (let t = test_start - 60000; t <= Date.now() + 60000; t += 30000) minutes.add(hh_mm.format(t));
  const times = new Set(await alice.$$eval('#log div.chat .time', (ts) => ts.map((t) => t.textContent)));
  for (const t of times) if (!minutes.has(t)) fail(`alice's chat line time ${t} is not one of ${[...minutes]} (${time_zone})`);
  if (times.size === 0) fail('alice shows no chat line times');

  await two_rooms({ alice, bob, room, wire, url, say, expected });

  // bob leaves garden, the room he shows now; the others see it.
  await alice.click(`#my-rooms li[data-room="${room}"] button`);
  await bob.click('#leave');
  await sees(bob, 'bob', `left room ${room} 'garden'`);
  same("bob's rooms after leaving both", await my_rooms(bob), []);
  await sees(alice, 'alice', '* bob left');
  await carol.wait_for(new RegExp(`\\* bob left room ${room}`), 'carol sees bob leave');
  same("alice's member list after bob left", await members(alice), ['alice', 'carol']);

  const shot = path.join(build, 'browser/chat-page.png');
  await alice.screenshot({ path: shot });
  console.log(`screenshot: ${shot}`);
  carol.say('/quit');
} catch (e) {
  state.failed = true;
  console.log(`FAIL: ${e.message}`);
} finally {
  if (browser) await browser.close();
  await stop_children();
  rmSync(work, { recursive: true, force: true });
}
if (state.failed) process.exit(1);
console.log('PASS: the web chat page in Chromium, with a TCP client; alice\'s page recovered every missed message once, ' +
  'in order; two rooms: badges, read markers, typing, resume per room, leave');
