// A small typed event emitter: `events` maps each event name to its listener's argument list.

export type Listener<A extends unknown[]> = (...args: A) => void;

export class Emitter<Events extends { [K in keyof Events]: unknown[] }> {
  private readonly listeners = new Map<keyof Events, Set<(...args: never[]) => void>>();

  /// Calls `fn` on every `event` until the returned function (or off) is called.
  on<K extends keyof Events>(event: K, fn: Listener<Events[K]>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn as unknown as (...args: never[]) => void);
    return () => this.off(event, fn);
  }

  /// Calls `fn` on the next `event` only.
  once<K extends keyof Events>(event: K, fn: Listener<Events[K]>): () => void {
    const off = this.on(event, (...args: Events[K]) => {
      off();
      fn(...args);
    });
    return off;
  }

  off<K extends keyof Events>(event: K, fn: Listener<Events[K]>): void {
    this.listeners.get(event)?.delete(fn as unknown as (...args: never[]) => void);
  }

  /// Calls the listeners in the order they were added; one that throws does not stop the others
  /// (its error is reported on the console).
  protected emit<K extends keyof Events>(event: K, ...args: Events[K]): void {
    const set = this.listeners.get(event);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        (fn as unknown as Listener<Events[K]>)(...args);
      } catch (e) {
        console.error(`chat client: a '${String(event)}' listener threw`, e);
      }
    }
  }
}
