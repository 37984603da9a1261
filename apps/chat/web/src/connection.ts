// The page's WebSocket to strix-chat-server: binary messages, one strix frame each. When the socket
// drops it opens again after a backoff (0.5 s doubling to 10 s, with jitter so that a restarted
// server is not hit by every page at once) and tells the page, which logs in again.

export type conn_state = 'connecting' | 'open' | 'closed';

export interface conn_events {
  state(s: conn_state, detail: string): void;
  opened(): void;
  frame(bytes: Uint8Array): void;
}

const first_backoff_ms = 500;
const max_backoff_ms = 10000;

export class chat_connection {
  private ws: WebSocket | null = null;
  private backoff_ms = first_backoff_ms;
  private retry: number | undefined;

  constructor(private readonly url: string, private readonly on: conn_events) {}

  open(): void {
    this.on.state('connecting', this.url);
    const ws = new WebSocket(this.url);
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => {
      this.backoff_ms = first_backoff_ms;
      this.on.state('open', this.url);
      this.on.opened();
    };
    ws.onmessage = (ev: MessageEvent) => {
      if (ev.data instanceof ArrayBuffer) this.on.frame(new Uint8Array(ev.data));
    };
    ws.onclose = (ev: CloseEvent) => {
      if (this.ws !== ws) return;
      this.ws = null;
      const wait = Math.round(this.backoff_ms * (0.75 + Math.random() / 2));
      this.backoff_ms = Math.min(this.backoff_ms * 2, max_backoff_ms);
      const why = ev.reason ? `${ev.code} ${ev.reason}` : `${ev.code}`;
      this.on.state('closed', `closed (${why}); reconnecting in ${(wait / 1000).toFixed(1)} s`);
      this.retry = window.setTimeout(() => this.open(), wait);
    };
    this.ws = ws;
  }

  /// Sends one frame; false when the socket is not open (the caller shows it).
  send(frame: Uint8Array): boolean {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(frame);
    return true;
  }

  /// Drops the socket now (as a network failure would): the backoff reconnects.
  drop(): void {
    if (this.retry !== undefined) window.clearTimeout(this.retry);
    this.ws?.close(4000, 'dropped by the page');
  }
}
