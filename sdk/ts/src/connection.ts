// The client's WebSocket: binary messages, one strix frame each. When a socket that was open
// drops, it opens again after a backoff (firstDelayMs doubling to maxDelayMs, each within +-25 %
// so that a restarted server is not hit by every client at once) and says so; a ping_req every
// pingIntervalMs keeps a quiet session inside the server's idle timeout.

import { ChatConnectionError } from './errors';
import * as proto from './protocol';
import { message_bytes, socket_class, socket_open } from './transport';
import type { SocketConstructor, SocketLike } from './transport';

export interface socket_options {
  WebSocket?: SocketConstructor;
  reconnect: boolean;
  firstDelayMs: number;
  maxDelayMs: number;
  pingIntervalMs: number;
}

export interface socket_events {
  connecting(): void;
  /// Open; `first`: the socket connect() opened (not a reconnect).
  opened(first: boolean): void;
  frame(bytes: Uint8Array): void;
  closed(detail: string): void;
  reconnecting(attempt: number, delay_ms: number, code: number, reason: string): void;
}

export class chat_socket {
  private ws: SocketLike | null = null;
  private for_good = false; // close(): no reconnect
  private stay_down_ = false; // the server ended the session: no reconnect
  private retry: ReturnType<typeof setTimeout> | undefined;
  private pinger: ReturnType<typeof setInterval> | undefined;
  private attempt = 0;
  private backoff_ms: number;

  constructor(readonly url: string, private readonly opts: socket_options, private readonly on: socket_events) {
    this.backoff_ms = opts.firstDelayMs;
  }

  get connected(): boolean {
    return this.ws !== null && this.ws.readyState === socket_open;
  }

  /// Opens the socket; resolves once it is open, rejects when this first try fails.
  connect(): Promise<void> {
    this.for_good = false;
    this.stay_down_ = false;
    if (this.ws) return this.connected ? Promise.resolve() : Promise.reject(new ChatConnectionError('connect', 'already connecting'));
    return new Promise((resolve, reject) => {
      void this.open({ resolve, reject });
    });
  }

  /// Closes for good (no reconnect).
  close(): void {
    this.for_good = true;
    if (this.retry !== undefined) clearTimeout(this.retry);
    this.retry = undefined;
    const ws = this.ws;
    if (ws) this.down('closed by the client');
    ws?.close(1000, 'bye');
  }

  /// Drops the socket as a network failure would: the backoff reconnects.
  drop(): void {
    this.ws?.close(4000, 'dropped by the client');
  }

  /// The session is over on the server's side: when the socket closes, no reconnect.
  stay_down(): void {
    this.stay_down_ = true;
  }

  /// Sends one frame; false when the socket is not open.
  send(frame: Uint8Array): boolean {
    if (!this.connected) return false;
    this.ws!.send(frame);
    return true;
  }

  private async open(first?: { resolve: () => void; reject: (e: Error) => void }): Promise<void> {
    this.on.connecting();
    let ws: SocketLike;
    try {
      ws = new (await socket_class(this.opts.WebSocket))(this.url);
    } catch (e) {
      first?.reject(e as Error);
      return;
    }
    if (this.for_good) return void ws.close();
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.attempt = 0;
      this.backoff_ms = this.opts.firstDelayMs;
      this.start_pinger();
      this.on.opened(first !== undefined);
      first?.resolve();
    };
    ws.onmessage = (ev) => {
      if (this.ws !== ws) return;
      const bytes = message_bytes(ev.data);
      if (bytes) this.on.frame(bytes);
    };
    ws.onerror = () => {}; // onclose follows and says it
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      const why = ev.reason ? `${ev.code} ${ev.reason}` : `${ev.code}`;
      this.down(`closed (${why})`);
      if (!opened && first) return void first.reject(new ChatConnectionError('connect', `cannot connect to ${this.url} (${why})`));
      if (!this.for_good && !this.stay_down_ && this.opts.reconnect) this.schedule(ev.code, ev.reason);
    };
  }

  private down(detail: string): void {
    this.ws = null;
    if (this.pinger !== undefined) clearInterval(this.pinger);
    this.pinger = undefined;
    this.on.closed(detail);
  }

  private schedule(code: number, reason: string): void {
    const delay = Math.round(this.backoff_ms * (0.75 + Math.random() / 2));
    this.backoff_ms = Math.min(this.backoff_ms * 2, this.opts.maxDelayMs);
    this.attempt += 1;
    this.on.reconnecting(this.attempt, delay, code, reason);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      // A try whose socket never opens schedules the next from its onclose.
      if (!this.for_good) void this.open();
    }, delay);
  }

  private start_pinger(): void {
    if (this.opts.pingIntervalMs <= 0) return;
    const t = setInterval(() => this.send(proto.ping(BigInt(Date.now()))), this.opts.pingIntervalMs);
    (t as { unref?: () => void }).unref?.(); // Node: the timer alone keeps no process alive
    this.pinger = t;
  }
}
