// The seqs of one room a client has delivered or knows are lost: the client delivers each message
// once (live, resumed or paged from history after a gap), and after a reconnect asks to resume
// from `have`, the seq up to which it has everything.

export class RoomSeqs {
  private readonly delivered = new Set<bigint>(); // above `have`
  private readonly lost: { from: bigint; to: bigint }[] = []; // (from, to]: never coming
  /// Every seq up to here is delivered or lost: what a resume asks to follow.
  have: bigint;
  /// The highest seq delivered or lost, or the room's last seq at the (re)join if higher.
  top: bigint;

  /// A room entered when its last seq was `lastSeq`: the messages above it are delivered.
  constructor(lastSeq: bigint) {
    this.have = lastSeq;
    this.top = lastSeq;
  }

  /// Back in the room after a reconnect, when its last seq was `lastSeq`.
  rejoined(lastSeq: bigint): void {
    if (lastSeq > this.top) this.top = lastSeq;
  }

  /// Records `seq` as delivered; false when it was (or is known lost) already.
  add(seq: bigint): boolean {
    if (seq <= this.have || this.delivered.has(seq)) return false;
    this.delivered.add(seq);
    if (seq > this.top) this.top = seq;
    this.advance();
    return true;
  }

  /// Seqs (from, to] will never come (a gap, deleted history).
  lose(from: bigint, to: bigint): void {
    if (to <= from) return;
    this.lost.push({ from, to });
    if (to > this.top) this.top = to;
    this.advance();
  }

  private advance(): void {
    for (;;) {
      if (this.delivered.delete(this.have + 1n)) {
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
