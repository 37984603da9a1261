// One room's log, kept in memory (a <section> of lines) and shown in #log while the room is the one
// shown: notices go at the end; chat lines go in seq order, so a message recovered after a
// reconnect lands before the live ones that came first. Each chat line shows the sender's name and
// the server's time of the message (local HH:MM). A moderator's notice is a line of its own in
// seq order; an erased message stays in its place as "message removed".

import { MsgKind } from '@strix/chat-client';
import type { ChatMessage } from '@strix/chat-client';

const removed_text = 'message removed';

/// HH:MM in the browser's time zone of a server timestamp (microseconds since the epoch).
export function clock(ts_us: bigint): string {
  const d = new Date(Number(ts_us / 1000n));
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
}

function span(cls: string, text: string): HTMLSpanElement {
  const s = document.createElement('span');
  s.className = cls;
  s.textContent = text;
  return s;
}

function erase_button(): HTMLButtonElement {
  const b = document.createElement('button');
  b.className = 'erase';
  b.type = 'button';
  b.title = 'remove this message for everyone';
  b.textContent = 'erase';
  return b;
}

export class log_view {
  readonly el = document.createElement('section');

  /// `scroller`: the element the section is shown in (scrolled to the end on a new line).
  constructor(private readonly scroller: HTMLElement, room: bigint | null) {
    if (room !== null) this.el.dataset.room = room.toString();
  }

  /// Shows this log in the scroller, scrolled to its end.
  show(): void {
    this.scroller.replaceChildren(this.el);
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  /// Adds a line at the end, or right after `after` when given.
  line(text: string, cls = '', after: HTMLElement | null = null): HTMLElement {
    const div = document.createElement('div');
    div.textContent = text;
    if (cls) div.className = cls;
    if (after) after.after(div);
    else this.append(div);
    return div;
  }

  /// Adds a chat message in its place: after the line with the next lower seq. The caller shows
  /// each seq once (the client delivers each once). A notice shows `notice` (its text); a member's text line has an
  /// erase button (shown to moderators: index.html's body[data-mod]).
  chat(m: ChatMessage, notice = ''): HTMLElement {
    const div = document.createElement('div');
    div.dataset.seq = m.seq.toString();
    div.dataset.sender = m.sender.id.toString();
    if (m.kind === MsgKind.notice) {
      div.className = 'notice';
      div.textContent = notice;
    } else {
      div.className = 'chat';
      div.append(span('time', clock(m.serverTsUs)), ' ', span('who', m.sender.name), ': ', span('text', m.text));
      if (m.kind === MsgKind.deleted) this.tombstone(div);
      else div.append(' ', erase_button());
    }
    // Walk back over the lines with higher seqs (none for a live message: appended).
    let before: Element | null = null;
    for (let el = this.el.lastElementChild; el; el = el.previousElementSibling) {
      const d = (el as HTMLElement).dataset;
      if (d.seq === undefined) continue;
      if (BigInt(d.seq) < m.seq) break;
      before = el;
    }
    if (before) this.el.insertBefore(div, before);
    else this.append(div);
    return div;
  }

  /// Message `seq` was erased by a moderator: its line (if shown) says so instead.
  erase(seq: bigint): void {
    const div = this.el.querySelector(`div.chat[data-seq="${seq}"]`) as HTMLElement | null;
    if (div) this.tombstone(div);
  }

  private tombstone(div: HTMLElement): void {
    div.classList.add('deleted');
    div.querySelector('.erase')?.remove();
    const text = div.querySelector('.text');
    if (text) text.textContent = removed_text;
  }

  private append(div: HTMLElement): void {
    this.el.appendChild(div);
    if (this.el.isConnected) this.scroller.scrollTop = this.scroller.scrollHeight;
  }
}
