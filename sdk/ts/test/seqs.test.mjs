// RoomSeqs (what a room has delivered) and the typed emitter, without a server.
//   STRIX_BUILD=<build dir> node --test sdk/ts/test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sdk } from './helpers.mjs';

test('RoomSeqs: each seq once; have moves over what is delivered or lost; top is the newest', () => {
  const s = new sdk.RoomSeqs(10n);
  assert.equal(s.add(10n), false); // at or below the join point: not delivered again
  assert.equal(s.add(12n), true);
  assert.equal(s.add(12n), false);
  assert.deepEqual([s.have, s.top], [10n, 12n]);
  assert.equal(s.add(11n), true);
  assert.deepEqual([s.have, s.top], [12n, 12n]);
  s.lose(12n, 15n); // 13..15 never coming
  s.add(17n);
  assert.deepEqual([s.have, s.top], [15n, 17n]);
  s.rejoined(20n);
  assert.deepEqual([s.have, s.top], [15n, 20n]);
  assert.equal(s.add(16n), true);
  assert.equal(s.have, 17n);
});

test('Emitter: on, once, off; a throwing listener does not stop the others', () => {
  class e extends sdk.Emitter {
    fire(...a) { this.emit('x', ...a); }
  }
  const em = new e();
  const got = [];
  const off = em.on('x', (a, b) => got.push(`on ${a} ${b}`));
  em.once('x', (a) => got.push(`once ${a}`));
  const error = console.error;
  console.error = () => {};
  em.on('x', () => { throw new Error('listener'); });
  em.on('x', (a) => got.push(`after ${a}`));
  em.fire(1, 2);
  off();
  em.fire(3, 4);
  console.error = error;
  assert.deepEqual(got, ['on 1 2', 'once 1', 'after 1', 'after 3']);
});
