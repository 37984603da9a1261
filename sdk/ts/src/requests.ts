// Matching answers to requests. The protocol's frames carry no request id (docs/protocol.md,
// "Ordering and delivery guarantees"): a session's requests take effect in the order sent and
// their replies come in that order, so an answer goes to the oldest waiting request that takes it
// (by type, and by room where the answer names one), and an error_res to the oldest waiting
// request of the type it names. The one exception the server makes: a chat_msg (the answer to
// chat_req, direct_req and moderate_req) is a broadcast from the room's owner shard and may come
// after the error of a later request; an error_res for chat_req goes to the oldest unanswered
// send, which is wrong only when an earlier send to a room on another shard is still on its way.

import type { msg_type } from './gen/strix/chat/proto/msg-type';
import type { message } from './protocol';
import { ChatConnectionError, ChatError, ChatTimeoutError } from './errors';

/// Whether a waiting request takes message `m`: 'no', 'more' (taken, the answer goes on: several
/// resume_res) or 'done'.
export type take_result = 'no' | 'more' | 'done';

interface waiting {
  type: msg_type;
  label: string;
  take(m: message): take_result;
  resolve(): void;
  reject(e: Error): void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export class request_table {
  private readonly list: waiting[] = [];

  /// A request of `type` waiting for an answer that `take` accepts; `value` is what the promise
  /// resolves with once `take` says 'done'. Rejects with ChatTimeoutError after `timeout_ms` (0:
  /// never).
  add<T>(type: msg_type, label: string, timeout_ms: number, take: (m: message) => take_result, value: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const w: waiting = {
        type, label, take, timer: undefined,
        resolve: () => resolve(value()),
        reject,
      };
      if (timeout_ms > 0) {
        w.timer = setTimeout(() => {
          this.remove(w);
          reject(new ChatTimeoutError(label, timeout_ms));
        }, timeout_ms);
      }
      this.list.push(w);
    });
  }

  /// Offers `m` to the waiting requests, oldest first; true when one took it.
  answer(m: message): boolean {
    for (const w of this.list) {
      const r = w.take(m);
      if (r === 'no') continue;
      if (r === 'done') {
        this.remove(w);
        w.resolve();
      }
      return true;
    }
    return false;
  }

  /// An error_res: fails the oldest request of the type it names; false when none waits.
  fail(m: Extract<message, { type: msg_type.error_res }>): boolean {
    const w = this.list.find((x) => x.type === m.request);
    if (!w) return false;
    this.remove(w);
    w.reject(new ChatError(m.request, m.code, m.reason));
    return true;
  }

  /// The connection closed: every waiting request fails with `why`.
  drop_all(why: string): void {
    for (const w of this.list.splice(0)) {
      if (w.timer !== undefined) clearTimeout(w.timer);
      w.reject(new ChatConnectionError(w.label, why));
    }
  }

  /// Whether a request of `type` that `pred` accepts is waiting.
  has(type: msg_type, pred: (label: string) => boolean = () => true): boolean {
    return this.list.some((w) => w.type === type && pred(w.label));
  }

  private remove(w: waiting): void {
    const i = this.list.indexOf(w);
    if (i >= 0) this.list.splice(i, 1);
    if (w.timer !== undefined) clearTimeout(w.timer);
  }
}
