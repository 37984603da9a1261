// Getting back what a room's session missed while disconnected (docs/protocol.md, "Resume"): the
// login puts the session back in each of its rooms (a join_room_res per room, last_seq = L: every
// message above L comes live), and for each room resume_req{room, last_seq = K} asks for K+1..L.
// The answer is those messages (over several resume_res when `more`) or a gap, which is filled
// with history_req pages (after_seq, 200 a page) up to L. Rooms recover side by side; live
// messages above L may be delivered before or during all this, and each message is delivered once.

import { resume_status } from './gen/strix/chat/proto/resume-status';
import type { RoomSeqs } from './seqs';
import type { ChatMessage, HistoryPage } from './types';

export const history_page = 200; // history_req's largest limit

/// What a resume_req brought: every frame's messages together.
export interface resume_answer { status: resume_status; messages: ChatMessage[]; oldestSeq: bigint }

/// What a room's recovery needs from the client.
export interface recovery_host {
  resume(room: bigint, last_seq: bigint, to: bigint): Promise<resume_answer>;
  history(room: bigint, after_seq: bigint, before_seq: bigint, limit: number): Promise<HistoryPage>;
  /// Delivers a recovered message unless it was delivered already; whether it was new.
  deliver(m: ChatMessage): boolean;
  /// False once the connection this recovery runs on has closed (it stops).
  alive(): boolean;
  gap(room: bigint, missed: bigint, oldest_seq: bigint): void;
  lost(room: bigint, from: bigint, to: bigint, reason: 'notStored' | 'unrecoverable'): void;
  done(room: bigint, recovered: number, last_recovered_seq: bigint, to: bigint): void;
}

/// Recovers (seqs.have, to] in `room`; resolves when done (or when the connection closed).
export async function recover(room: bigint, to: bigint, seqs: RoomSeqs, host: recovery_host): Promise<void> {
  let recovered = 0;
  let last = 0n;
  const take = (messages: ChatMessage[]) => {
    // Messages above `to` come live; a history page may hold some of them already.
    for (const m of messages) {
      if (m.seq > to || !host.deliver(m)) continue;
      recovered += 1;
      last = m.seq;
    }
  };
  const answer = await host.resume(room, seqs.have, to);
  if (!host.alive()) return;
  if (answer.status === resume_status.complete) {
    take(answer.messages);
  } else {
    // A gap: more than the server gives in one answer, or partly deleted (retention).
    host.gap(room, to - seqs.have, answer.oldestSeq);
    const stored_from = answer.oldestSeq > 0n ? answer.oldestSeq - 1n : 0n;
    if (stored_from > seqs.have) {
      const from = seqs.have;
      seqs.lose(from, stored_from);
      host.lost(room, from, stored_from, 'notStored');
    }
    let cursor = seqs.have;
    for (;;) {
      // after_seq 0 would ask for the newest messages: from the start, ask for seq 1 alone (the
      // newest below 2), then on after it.
      const page = cursor > 0n ? await host.history(room, cursor, 0n, history_page) : await host.history(room, 0n, 2n, 1);
      if (!host.alive()) return;
      take(page.messages);
      if (page.messages.length === 0) break; // the store ends below `to`
      cursor = page.messages[page.messages.length - 1].seq;
      if (cursor >= to) break;
    }
  }
  if (seqs.have < to) {
    const from = seqs.have;
    seqs.lose(from, to);
    host.lost(room, from, to, 'unrecoverable');
  }
  host.done(room, recovered, last, to);
}
