// The WebSocket the client talks over: the browser's, Node's global one (Node >= 22), or the `ws`
// package's (Node 18-21), all used through the same few members of the standard interface.

/// The part of the standard WebSocket the client uses.
export interface SocketLike {
  binaryType: string;
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
}

export type SocketConstructor = new (url: string) => SocketLike;

export const socket_open = 1;

/// The WebSocket class to use: `given`, the global one, or the `ws` package's.
export async function socket_class(given?: SocketConstructor): Promise<SocketConstructor> {
  if (given) return given;
  const g = (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
  if (g) return g;
  // A name in a variable: bundlers for the browser leave the import alone (never reached there).
  const name = 'ws';
  try {
    const mod = await import(name);
    return (mod.WebSocket ?? mod.default) as SocketConstructor;
  } catch {
    throw new Error("no WebSocket here: install the 'ws' package (Node < 22) or pass options.WebSocket");
  }
}

/// A received message's bytes (binary messages only; null for text).
export function message_bytes(data: unknown): Uint8Array | null {
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  // ws may hand over an array of Buffers for a fragmented message.
  if (Array.isArray(data)) {
    const parts = data as Uint8Array[];
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
  return null;
}
