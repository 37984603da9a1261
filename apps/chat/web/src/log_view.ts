// The page's log (#log): notices go at the end; chat lines go in seq order among their room's
// lines, so a message recovered after a reconnect lands before the live ones that came first.

import type { chat_line } from './protocol';

export class log_view {
  constructor(private readonly el: HTMLElement) {}

  /// Adds a line at the end, or right after `after` when given.
  line(text: string, cls = '', after: HTMLElement | null = null): HTMLElement {
    const div = document.createElement('div');
    div.textContent = text;
    if (cls) div.className = cls;
    if (after) after.after(div);
    else this.append(div);
    return div;
  }

  /// Adds a chat message in its place: after the room's line with the next lower seq. The caller
  /// shows each seq once (room_seqs).
  chat(m: chat_line): HTMLElement {
    const div = document.createElement('div');
    div.textContent = `[${m.room_id}#${m.seq}] ${m.sender.name}: ${m.text}`;
    div.className = 'chat';
    div.dataset.room = m.room_id.toString();
    div.dataset.seq = m.seq.toString();
    // Walk back over the room's lines with higher seqs (none for a live message: appended).
    let before: Element | null = null;
    for (let el = this.el.lastElementChild; el; el = el.previousElementSibling) {
      const d = (el as HTMLElement).dataset;
      if (d.seq === undefined) continue;
      if (d.room !== div.dataset.room || BigInt(d.seq) < m.seq) break;
      before = el;
    }
    if (before) this.el.insertBefore(div, before);
    else this.append(div);
    return div;
  }

  private append(div: HTMLElement): void {
    this.el.appendChild(div);
    this.el.scrollTop = this.el.scrollHeight;
  }
}
