// Receiving strix-chat-server's webhooks (docs/webhooks.md): each POST carries a batch of events,
// signed with the secret both sides share. A request is checked before anything in it is believed:
// the signature over "<timestamp>.<raw body>" in constant time, and a timestamp within five minutes
// of our clock (a captured request replayed later fails). Delivery is at least once (a batch whose
// answer was lost comes again), so events are kept once by their id.
import { createHmac, timingSafeEqual } from 'node:crypto';

const tolerance_s = 300; // how far a request's timestamp may be from our clock
const kept_events = 500; // the newest events kept in memory for GET /events

/// Whether `body` (a Buffer, the raw bytes as received) was signed with `secret` at `timestamp`.
export function verify_signature(secret, timestamp, signature, body, now_s = Date.now() / 1000) {
  if (typeof timestamp !== 'string' || typeof signature !== 'string') return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(now_s - Number(timestamp)) > tolerance_s) return false;
  const mac = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  const want = Buffer.from(`v1=${mac}`);
  const got = Buffer.from(signature);
  return want.length === got.length && timingSafeEqual(want, got);
}

/// The events received so far: the newest `kept_events`, oldest first, each once.
export class event_log {
  constructor() {
    this.events = [];
    this.seen = new Set(); // event ids (a retried batch repeats them)
    this.refused = 0; // requests whose signature or timestamp did not check out
    this.duplicates = 0;
  }

  /// Takes one webhook request; returns the HTTP status to answer with. A 2xx tells the server
  /// the batch arrived (it retries anything else), so only a bad request gets a 4xx.
  receive(secret, headers, body) {
    if (!verify_signature(secret, headers['x-strix-timestamp'], headers['x-strix-signature'], body)) {
      this.refused += 1;
      console.log('webhook refused: bad signature or timestamp');
      return 401;
    }
    let batch;
    try {
      batch = JSON.parse(body.toString('utf8'));
    } catch {
      return 400;
    }
    for (const e of batch.events ?? []) {
      if (this.seen.has(e.id)) {
        this.duplicates += 1;
        continue;
      }
      this.seen.add(e.id);
      this.events.push(e);
      console.log(`webhook ${describe(e)}`);
    }
    if (this.events.length > kept_events) this.events.splice(0, this.events.length - kept_events);
    // Retries come soon after the first try: the ids of the kept events are enough to recognise them.
    if (this.seen.size > 4 * kept_events) this.seen = new Set(this.events.map((e) => e.id));
    return 204;
  }
}

/// One line for the backend's log: 'member.joined room 5 (lobby) user 3 (alice)'.
export function describe(e) {
  const parts = [e.type];
  if (e.room) parts.push(`room ${e.room.id} (${e.room.name})`);
  if (e.user) parts.push(`user ${e.user.id} (${e.user.name})`);
  if (e.seq !== undefined) parts.push(`seq ${e.seq}: ${JSON.stringify(e.text)}`);
  return parts.join(' ');
}
