// What the page has of one room's messages, and getting back what it missed there while
// disconnected (docs/protocol.md, "Resume"): the login puts the session back in each of its rooms
// (a join_room_res per room, last_seq = L: every message above L comes live), and for each room
// resume_req{room, last_seq = K} asks for K+1..L; the answer is those messages (over several
// resume_res when `more`) or a gap, which the page fills with history_req pages (after_seq). Each
// room has its own room_seqs and recovery, running side by side. Live messages above L may arrive
// before or during all this; the room's log puts every message in its place by seq, once.

import * as proto from './protocol';
import { resume_status } from './protocol';
import type { chat_line } from './protocol';

/// The seqs of one room the page has shown or knows are lost.
export class room_seqs {
  private readonly shown = new Set<bigint>(); // shown, above `have`
  private readonly lost: { from: bigint; to: bigint }[] = []; // (from, to]: never coming
  /// Every seq up to here is shown or lost: what a resume asks to follow.
  have: bigint;
  /// The highest seq shown or lost, or the room's last seq at the (re)join if higher.
  top: bigint;

  /// A room entered when its last seq was `last_seq`: the page gets the messages above it.
  constructor(last_seq: bigint) {
    this.have = last_seq;
    this.top = last_seq;
  }

  /// Back in the room after a reconnect, when its last seq was `last_seq`.
  rejoined(last_seq: bigint): void {
    if (last_seq > this.top) this.top = last_seq;
  }

  /// Records `seq` as shown; false when it was shown (or known lost) already.
  add(seq: bigint): boolean {
    if (seq <= this.have || this.shown.has(seq)) return false;
    this.shown.add(seq);
    if (seq > this.top) this.top = seq;
    this.advance();
    return true;
  }

  /// Seqs (from, to] will never come (a gap notice, deleted history).
  lose(from: bigint, to: bigint): void {
    if (to <= from) return;
    this.lost.push({ from, to });
    if (to > this.top) this.top = to;
    this.advance();
  }

  private advance(): void {
    for (;;) {
      if (this.shown.delete(this.have + 1n)) {
        this.have += 1n;
        continue;
      }
      const i = this.lost.findIndex((r) => r.from <= this.have && r.to > this.have);
      if (i < 0) return;
      this.have = this.lost[i].to;
      this.lost.splice(i, 1);
    }
  }
}

export interface recovery_io {
  send(frame: Uint8Array): void;
  /// Shows a message unless it was shown already; its log line, or null.
  chat(m: chat_line): HTMLElement | null;
  /// A notice in the log, right after `after` when given.
  note(text: string, cls?: string, after?: HTMLElement | null): void;
}

const history_page = 200; // history_req's largest limit

/// One reconnect's recovery of (seqs.have, to] in `room`; sends the resume_req at once.
export class recovery {
  private recovered = 0;
  private last: HTMLElement | null = null; // the last recovered line: the summary goes after it
  private cursor = 0n; // history pages ask for what follows
  private paging = false;
  done = false;

  constructor(readonly room: bigint, private readonly to: bigint, private readonly seqs: room_seqs,
              private readonly io: recovery_io) {
    io.send(proto.resume(room, seqs.have));
  }

  /// A resume_res: false when it is not this recovery's answer. The answer's to_seq is the join's
  /// last seq; an unrequested gap notice (docs/protocol.md, "Cluster gaps") is about later seqs.
  resumed(m: Extract<proto.message, { type: proto.msg_type.resume_res }>): boolean {
    if (this.done || this.paging || m.room_id !== this.room || m.to_seq !== this.to) return false;
    if (m.status === resume_status.complete) {
      this.show(m.messages);
      if (!m.more) this.finish();
      return true;
    }
    // A gap: more than the server gives in one answer, or partly deleted (retention).
    this.note(`${this.to - this.seqs.have} messages missed: fetching them from the history`);
    const stored_from = m.oldest_seq > 0n ? m.oldest_seq - 1n : 0n;
    if (stored_from > this.seqs.have) {
      this.note(`messages #${this.seqs.have + 1n}..#${stored_from} are no longer stored`, 'error');
      this.seqs.lose(this.seqs.have, stored_from);
    }
    this.paging = true;
    this.cursor = this.seqs.have;
    this.page();
    return true;
  }

  /// A history_res (the page asks for history only here).
  paged(m: Extract<proto.message, { type: proto.msg_type.history_res }>): void {
    if (this.done || !this.paging || m.room_id !== this.room) return;
    this.show(m.messages);
    if (m.messages.length > 0) this.cursor = m.messages[m.messages.length - 1].seq;
    // Until `to`, or a page with nothing (the store ends below it).
    if (m.messages.length > 0 && this.cursor < this.to) this.page();
    else this.finish();
  }

  private page(): void {
    // after_seq 0 would ask for the newest messages: from the start, ask for seq 1 alone (the
    // newest below 2), then on after it.
    const c = this.cursor;
    this.io.send(c > 0n ? proto.history(this.room, c, 0n, history_page) : proto.history(this.room, 0n, 2n, 1));
  }

  private show(messages: chat_line[]): void {
    // Messages above `to` come live; a history page may hold some of them already.
    for (const m of messages) {
      if (m.seq > this.to) continue;
      const el = this.io.chat(m);
      if (!el) continue;
      this.recovered += 1;
      this.last = el;
    }
  }

  private finish(): void {
    this.done = true;
    if (this.seqs.have < this.to) {
      this.note(`messages after #${this.seqs.have} up to #${this.to} could not be recovered`, 'error');
      this.seqs.lose(this.seqs.have, this.to);
    }
    const n = this.recovered;
    this.note(n > 0 ? `recovered ${n} missed message${n === 1 ? '' : 's'}` : 'nothing was missed', 'notice',
              this.last);
  }

  private note(text: string, cls = 'notice', after: HTMLElement | null = null): void {
    this.io.note(text, cls, after);
  }
}
