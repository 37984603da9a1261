// The web chat page's direct messages, blocks, roles and moderation in headless Chromium (ctest
// browser.chat_conversations): strix-chat-server with --ws-port on a fresh SQLite database, two
// pages, ann and ben. ann creates garden (its owner) and ben joins it; ann messages ben by name:
// her page opens the direct room, and on ben's it appears in his list under ann's name with an
// unread badge (his page stays on garden) that clears when he opens it. A line in the room a page
// does not show raises that room's badge. ann, owner, sees moderation controls that ben does not:
// she erases ben's line (a tombstone on both pages, a notice), mutes him (his next line is
// refused with `muted`, shown as an error), unmutes him, makes him an admin and a member again;
// ben blocks ann (her next direct line is refused with `blocked`) and unblocks her; ann kicks ben
// from garden: both see the notice and garden leaves ben's list; he may join again. Screenshot of ann's page at the
// end: <build>/browser/chat_page_conversations.png (its path is printed).
//   node chat_conversations_test.mjs <build dir>
// Exits 77 (skipped) when no Chromium exists. Helpers: page_helpers.mjs.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  fail, launch_browser, lists, log_lines, members, metrics, page_for, same, sees, start_server, state, stop_children,
} from './page_helpers.mjs';

const build = path.resolve(process.argv[2] || 'build');
const work = mkdtempSync(path.join(tmpdir(), 'strix-browser-conv-'));

// Waits until the page's log has a line matching `re` (line_key, as sees() compares).
async function sees_like(page, who, re) {
  try {
    await page.waitForFunction((src) => [...document.querySelectorAll('#log div')].some((d) => new RegExp(src).test(window.line_key(d))),
      re.source, { timeout: 10000 });
  } catch {
    fail(`${who} did not see a line matching ${re}; the page shows:\n${(await log_lines(page)).join('\n')}`);
  }
}

// The member list as 'name:role' (data-role), sorted.
async function roles(page) {
  return (await page.$$eval('#members li', (ls) => ls.map((l) => `${l.dataset.name}:${l.dataset.role}`))).sort();
}

// Waits until `page`'s member list is `want` (roles()).
async function has_roles(page, who, want) {
  try {
    await page.waitForFunction((w) => JSON.stringify([...document.querySelectorAll('#members li')]
      .map((l) => `${l.dataset.name}:${l.dataset.role}`).sort()) === w, JSON.stringify(want), { timeout: 10000 });
  } catch {
    fail(`${who}'s member roles: got ${JSON.stringify(await roles(page))}, want ${JSON.stringify(want)}`);
  }
}

// The action buttons `page` shows on `name`'s entry in its member list (data-act).
async function actions_on(page, name) {
  return page.$$eval(`#members li[data-name="${name}"] button`, (bs) => bs.map((b) => b.dataset.act));
}

async function say(page, text) {
  await page.fill('#text', text);
  await page.click('#chat-form button');
}

async function open(page, room) {
  await page.click(`#my-rooms li[data-room="${room}"] button`);
  await page.waitForFunction((r) => document.body.dataset.room === r, room, { timeout: 10000 });
}

let browser;
try {
  const { url, metrics_url } = await start_server(build, work, ['--shards', '2']);
  browser = await launch_browser(build);
  const ann = await page_for(browser, url, 'ann');
  await ann.fill('#new-room', 'garden');
  await ann.click('#create-form button');
  await ann.waitForFunction(() => document.body.dataset.room !== '', null, { timeout: 10000 });
  const garden = await ann.evaluate(() => document.body.dataset.room);
  const ben = await page_for(browser, url, 'ben');
  await ben.click('#refresh');
  await ben.click(`#rooms button[data-room="${garden}"]`, { timeout: 10000 });
  await ben.waitForFunction((r) => document.body.dataset.room === r, garden, { timeout: 10000 });
  await sees(ann, 'ann', '* ben joined');
  // Roles: the creator owns the room; both pages show it.
  await has_roles(ann, 'ann', ['ann:owner', 'ben:member']);
  await has_roles(ben, 'ben', ['ann:owner', 'ben:member']);

  // ann messages ben by name: her page opens the direct room, shown by ben's name.
  await ann.fill('#dm-to', 'ben');
  await ann.fill('#dm-text', 'psst, ben');
  await ann.click('#dm-form button');
  await ann.waitForSelector('body[data-kind="direct"]', { timeout: 10000 });
  const dm = await ann.evaluate(() => document.body.dataset.room);
  if (dm === garden) fail('the direct room has the group room\'s id');
  await sees(ann, 'ann', '#1 ann: psst, ben');
  same("ann's header in the direct room", await ann.textContent('#room-name'), `@ben #${dm}`);
  same("ann's direct room members", await members(ann), ['ann', 'ben']);
  await lists(ann, 'ann', [`${garden}:0`, `*${dm}:0`]);

  // ben's page lists it under ann's name with one unread, and stays on garden.
  await lists(ben, 'ben', [`*${garden}:0`, `${dm}:1`]);
  same("ben's name for the direct room", await ben.textContent(`#my-rooms li[data-room="${dm}"] .name`), '@ann');
  same("ben's direct room's kind", await ben.getAttribute(`#my-rooms li[data-room="${dm}"]`, 'data-kind'), 'direct');
  await open(ben, dm);
  await lists(ben, 'ben', [`${garden}:0`, `*${dm}:0`]);
  await sees(ben, 'ben', '#1 ann: psst, ben');
  await say(ben, 'hi ann');
  await sees(ann, 'ann', '#2 ben: hi ann');

  // A line in garden, which ann's page does not show: her badge counts it until she opens it.
  await open(ben, garden);
  await say(ben, 'a line to erase');
  await sees(ben, 'ben', '#1 ben: a line to erase');
  await lists(ann, 'ann', [`${garden}:1`, `*${dm}:0`]);
  await open(ann, garden);
  await lists(ann, 'ann', [`*${garden}:0`, `${dm}:0`]);

  // Moderation controls: ann (owner) has them on ben, ben (member) has none, nor erase buttons.
  same("ann's actions on ben", await actions_on(ann, 'ben'), ['kick', 'ban', 'mute', 'promote']);
  same("ann's actions on herself", await actions_on(ann, 'ann'), []);
  same("ben's actions on ann", await actions_on(ben, 'ann'), []);
  if (await ben.isVisible('#log div.chat .erase')) fail("ben's page shows erase buttons to a member");

  // ann erases ben's line: a tombstone on both pages, and a notice.
  await ann.click(`#log div.chat[data-seq="1"] .erase`);
  await sees(ann, 'ann', '* a message was removed by you');
  await sees(ben, 'ben', '* a message was removed by ann');
  for (const [who, p] of [['ann', ann], ['ben', ben]]) await sees(p, who, '#1 ben: message removed');

  // ann mutes ben for 10 minutes: his next line is refused and the page says so.
  await ann.click('#members li[data-name="ben"] button[data-act="mute"]');
  await sees(ann, 'ann', '* ben was muted by you for 10 min');
  await sees(ben, 'ben', '* you were muted by ann for 10 min');
  await say(ben, 'can I still talk?');
  await sees_like(ben, 'ben', /^error: chat_req: muted: /);
  await ann.click('#members li[data-name="ben"] button[data-act="unmute"]');
  await sees(ben, 'ben', '* you were unmuted by ann');
  await say(ben, 'I can talk again');
  await sees_like(ann, 'ann', /^#\d+ ben: I can talk again$/);

  // Roles: ann makes ben an admin (his page gets the controls on members, none on the owner),
  // then a member again.
  await ann.click('#members li[data-name="ben"] button[data-act="promote"]');
  await sees(ben, 'ben', '* you were made an admin by ann');
  await has_roles(ben, 'ben', ['ann:owner', 'ben:admin']);
  await has_roles(ann, 'ann', ['ann:owner', 'ben:admin']);
  await ben.waitForSelector('body[data-mod="yes"]', { timeout: 10000 });
  same("ben's actions on the owner", await actions_on(ben, 'ann'), []);
  same("ann's actions on an admin", await actions_on(ann, 'ben'), ['kick', 'ban', 'mute', 'demote']);
  await ann.click('#members li[data-name="ben"] button[data-act="demote"]');
  await sees(ann, 'ann', '* ben was made a member again by you');
  await has_roles(ben, 'ben', ['ann:owner', 'ben:member']);
  await ben.waitForSelector('body[data-mod="no"]', { timeout: 10000 });

  // ben blocks ann in their direct room: her next line there is refused; then he unblocks her.
  await open(ben, dm);
  same("ben's block button", await ben.textContent('#block'), 'block ann');
  await ben.click('#block');
  await sees(ben, 'ben', 'blocked ann: no direct messages from them');
  await ben.waitForFunction(() => document.getElementById('block').textContent === 'unblock ann', null, { timeout: 10000 });
  await open(ann, dm);
  await say(ann, 'are you ignoring me?');
  await sees_like(ann, 'ann', /^error: chat_req: blocked: /);
  await ben.click('#block');
  await sees(ben, 'ben', 'unblocked ann');
  await say(ann, 'hello again');
  await sees(ben, 'ben', '#3 ann: hello again');

  // ann kicks ben from garden: both see the notice, garden leaves ben's list.
  await open(ben, garden);
  await open(ann, garden);
  await ann.click('#members li[data-name="ben"] button[data-act="kick"]');
  await sees(ann, 'ann', '* ben was kicked by you');
  await sees(ben, 'ben', `removed from room ${garden} 'garden': you were kicked by ann`);
  await lists(ben, 'ben', [`*${dm}:0`]);
  // The notice takes him off her member list (no member_left comes).
  await has_roles(ann, 'ann', ['ann:owner']);

  // One more line in the direct room, while ann shows garden: her badge on it counts it.
  await say(ben, 'that was rude');
  await lists(ann, 'ann', [`*${garden}:0`, `${dm}:1`]);

  // A kick is no ban: ben joins garden again, and ann's page offers her actions on him again.
  await ben.click('#refresh');
  await ben.click(`#rooms button[data-room="${garden}"]`, { timeout: 10000 });
  await ben.waitForFunction((r) => document.body.dataset.room === r, garden, { timeout: 10000 });
  await has_roles(ann, 'ann', ['ann:owner', 'ben:member']);
  same("ann's actions on ben back in garden", await actions_on(ann, 'ben'), ['kick', 'ban', 'mute', 'promote']);

  // The server counted one direct room opened and two lines refused (muted, blocked).
  const m = await metrics(metrics_url);
  same('direct rooms opened, sends refused', [m('strix_directs_opened_total'), m('strix_sends_refused_total')], [1, 2]);

  const shot = path.join(build, 'browser/chat_page_conversations.png');
  mkdirSync(path.dirname(shot), { recursive: true });
  await ann.screenshot({ path: shot });
  console.log(`screenshot: ${shot}`);
} catch (e) {
  state.failed = true;
  console.log(`FAIL: ${e.message}`);
} finally {
  if (browser) await browser.close();
  await stop_children();
  rmSync(work, { recursive: true, force: true });
}
if (state.failed) process.exit(1);
console.log('PASS: the web chat page in Chromium: a direct message by name with its unread badge, roles, erase, mute, ' +
  'promote / demote, block and kick');
