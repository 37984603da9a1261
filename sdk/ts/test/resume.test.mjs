// The SDK's reconnect against a real strix-chat-server: the connection is cut under the client
// (a relay between them, as a network failure or a server dropping it would) and held down while
// another member talks; the client reconnects with backoff, logs in with its resume token, is put
// back in its rooms and resumes each: complete (resume_res) in one room, a gap (more than
// --resume-max) filled from the history in another. Every message is delivered once, the missed
// ones marked recovered. Then the token is refused (spent elsewhere) and the password follows.
// Last, the server itself restarts (SIGTERM, then again on its database and port): the client
// comes back by its resume token and resumes what was said before the restart.
//   STRIX_BUILD=<build dir> node --test sdk/ts/test/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { logged_in, next, record, relay, sdk, start_server, until } from './helpers.mjs';

const resume_max = 5;
let server;
let r;
const clients = [];

before(async () => {
  server = await start_server(['--resume-max', String(resume_max)]);
  r = await relay(server.port);
});
after(async () => {
  for (const c of clients) c.close();
  await r.close();
  await server.stop();
});

// Fast backoff for the test: 50 ms doubling to 400 ms.
const fast = { reconnect: { firstDelayMs: 50, maxDelayMs: 400 } };

test('a cut connection: backoff, resume token login, resume per room (complete and gap), each message once', async () => {
  const ann = await logged_in(r.url, 'ann', fast);
  const bob = await logged_in(server.url, 'bob');
  clients.push(ann, bob);
  const small = await ann.createRoom('small');
  const big = await ann.createRoom('big');
  await bob.joinRoom(small.id);
  await bob.joinRoom(big.id);
  await bob.send(small.id, 'before the cut');
  const seen = record(ann);
  await until('ann has the first line', () => seen.length === 1);

  const presence = [];
  bob.on('presence', (p) => presence.push(`${p.roomId}:${p.player.name}:${p.online}`));
  const events = [];
  for (const e of ['state', 'reconnecting', 'login', 'roomJoined', 'resumeGap', 'lost', 'resumed']) {
    ann.on(e, (...a) => events.push([e, ...a]));
  }
  r.held = true;
  const token = ann.resumeToken;
  r.cut();
  await until('ann sees the cut', () => !ann.connected);
  await until('three tries', () => events.filter(([e]) => e === 'reconnecting').length >= 3);
  const delays = events.filter(([e]) => e === 'reconnecting').map(([, i]) => i.delayMs);
  // Backoff: each try waits about twice the one before (+-25 % jitter), up to the maximum.
  assert.ok(delays[0] >= 37 && delays[0] <= 63, `first delay ${delays[0]}`);
  assert.ok(delays[2] >= 150 && delays[2] <= 250, `third delay ${delays[2]}`);

  // bob talks while ann is away: 2 lines in small (resumed whole), 12 in big (over --resume-max).
  const missed_small = [];
  const missed_big = [];
  for (let i = 1; i <= 2; ++i) missed_small.push(await bob.send(small.id, `small ${i}`));
  for (let i = 1; i <= 12; ++i) missed_big.push(await bob.send(big.id, `big ${i}`));
  await assert.rejects(ann.send(small.id, 'from the dark'), (e) => e instanceof sdk.ChatConnectionError);

  r.held = false;
  const [login] = await next(ann, 'login');
  assert.equal(login.method, 'resumeToken');
  assert.notDeepEqual(login.resumeToken, token); // rotated
  await until('both rooms resumed', () => events.filter(([e]) => e === 'resumed').length === 2);
  const by_room = new Map(events.filter(([e]) => e === 'resumed').map(([, ev]) => [ev.roomId, ev]));
  assert.equal(by_room.get(small.id).recovered, 2);
  assert.equal(by_room.get(big.id).recovered, 12);
  assert.equal(by_room.get(big.id).lastRecoveredSeq, 12n);
  const gaps = events.filter(([e]) => e === 'resumeGap').map(([, g]) => g);
  assert.deepEqual(gaps.map((g) => [g.roomId, g.missed]), [[big.id, 12n]]);
  assert.deepEqual(events.filter(([e]) => e === 'lost'), []);
  const rejoins = events.filter(([e]) => e === 'roomJoined').map(([, j]) => [j.room.id, j.cause, j.rejoined]);
  assert.deepEqual(rejoins.sort(), [[small.id, 'login', true], [big.id, 'login', true]].sort());

  // A live line after the reconnect, then: every line once, the missed ones recovered.
  await bob.send(big.id, 'welcome back');
  await until('ann has the live line', () => seen.some((s) => s.m.text === 'welcome back'));
  const keys = (room) => seen.filter((s) => s.m.roomId === room).map((s) => `${s.m.seq}:${s.m.text}:${s.recovered}`);
  assert.deepEqual(keys(small.id), ['1:before the cut:false', '2:small 1:true', '3:small 2:true']);
  assert.deepEqual(keys(big.id), [...missed_big.map((m) => `${m.seq}:${m.text}:true`), '13:welcome back:false']);
  assert.equal(ann.rooms.get(big.id).seqs.have, 13n);
  assert.equal(ann.rooms.get(small.id).seqs.have, 3n);
  const sent = await ann.send(small.id, 'back');
  assert.equal(sent.seq, 4n);
  // bob saw ann go offline and come back in both rooms (still a member throughout).
  await until('bob sees ann back in both rooms', () => presence.filter((p) => p.endsWith(':true')).length === 2);
  assert.deepEqual([...presence].sort(), [`${big.id}:ann:false`, `${big.id}:ann:true`, `${small.id}:ann:false`,
    `${small.id}:ann:true`].sort());
  assert.ok(presence.indexOf(`${big.id}:ann:false`) < presence.indexOf(`${big.id}:ann:true`));
});

test('a refused resume token: the password login follows', async () => {
  const cy = await logged_in(r.url, 'cy', fast);
  clients.push(cy);
  const room = await cy.createRoom('porch');
  // The token is spent by another session: the reconnect's login with it is refused.
  const thief = new sdk.ChatClient(server.url, { pingIntervalMs: 0 });
  clients.push(thief);
  await thief.connect();
  await thief.login({ name: 'cy', resumeToken: cy.resumeToken });
  const fallback = next(cy, 'loginFallback');
  const login = next(cy, 'login');
  const resumed = next(cy, 'resumed');
  r.cut();
  const [e] = await fallback;
  assert.equal(e.code, 'invalid_token');
  assert.equal((await login)[0].method, 'password');
  const [rs] = await resumed;
  assert.deepEqual([rs.roomId, rs.recovered], [room.id, 0]);
  assert.equal((await cy.send(room.id, 'still here')).seq, 1n);
});

test('the server restarts: the client comes back by its resume token and resumes', async () => {
  const s1 = await start_server();
  let s2;
  const dee = await logged_in(s1.url, 'dee', fast);
  const eve = await logged_in(s1.url, 'eve', fast);
  clients.push(dee, eve);
  try {
    const room = await dee.createRoom('attic');
    await eve.joinRoom(room.id);
    await dee.send(room.id, 'one');
    const seen = record(dee);
    // eve's line reaches the server before it stops; dee is cut off by the stop before or after
    // it arrives: either way she has it once, live or resumed.
    await eve.send(room.id, 'two');
    await s1.stop(true);
    await until('dee sees the server go', () => !dee.connected);
    const login = next(dee, 'login');
    const resumed = next(dee, 'resumed');
    s2 = await start_server([], s1);
    assert.equal((await login)[0].method, 'resumeToken');
    assert.equal((await resumed)[0].roomId, room.id);
    assert.deepEqual(seen.map((x) => `${x.m.seq}:${x.m.text}`), ['2:two']);
    assert.equal((await dee.send(room.id, 'three')).seq, 3n);
  } finally {
    await (s2 ?? s1).stop();
  }
});
