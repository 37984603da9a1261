#include "room_gap_fill.hpp"

#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>

#include <algorithm>

namespace strix::chat {

room_gap_fill::room_gap_fill(shard& sh, db_pool& pool, sink s, gap_fill_options o)
    : owner_(sh), pool_(pool), sink_(std::move(s)), o_(o) {}

room_gap_fill::~room_gap_fill() {
    *alive_ = false;
    for (auto& [room, f] : fills_)
        if (f->retry.armed()) owner_.timers().cancel(f->retry);
}

void room_gap_fill::gap(room_id room, std::uint64_t from, std::uint64_t to) {
    if (to <= from) return;
    ++stats_.gaps;
    auto [it, fresh] = fills_.try_emplace(room);
    if (fresh) {
        it->second = std::make_unique<fill>();
        it->second->retry.set_callback([this, room] {
            const auto found = fills_.find(room);
            if (found != fills_.end()) read(room, *found->second);
        });
    }
    fill& f = *it->second;
    f.ranges.emplace_back(from, to);
    if (fresh) start_range(room, f);
}

bool room_gap_fill::hold(room_id room, std::uint64_t seq, std::string_view body) {
    const auto it = fills_.find(room);
    if (it == fills_.end()) return false;
    it->second->held.emplace_back(seq, std::string(body));
    ++stats_.held;
    return true;
}

void room_gap_fill::start_range(room_id room, fill& f) {
    f.next = f.ranges.front().first + 1;
    f.filled = f.missing = 0;
    f.deadline = std::chrono::steady_clock::now() + o_.wait_for_commit;
    read(room, f);
}

void room_gap_fill::read(room_id room, fill& f) {
    if (f.reading) return;
    const std::uint64_t after = f.next - 1;
    // The window (after, hi]: every stored seq in it comes back (rows past hi are dropped).
    const std::uint64_t hi = std::min<std::uint64_t>(f.ranges.front().second, after + o_.read_limit);
    history_query q;
    q.room_id = room.value();
    if (after == 0) {
        // after_seq 0 would mean "the newest": ask for everything below hi + 1 instead.
        q.before_seq = hi + 1;
    } else {
        q.after_seq = after;
    }
    q.limit = static_cast<std::size_t>(hi - after);
    ++stats_.reads;
    f.reading = true;
    shard* sh = &owner_;
    const bool queued = pool_.try_submit([sh, alive = alive_, room, hi, q, this](chat_store& store) {
        read_result r;
        try {
            r.rows = store.history_page(q);
            r.ok = true;
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "room {}: reading a gap from the database failed: {}", room.value(), e.what());
        }
        sh->post_external([alive, room, hi, r = std::move(r), this]() mutable {
            if (*alive) on_read(room, hi, std::move(r));
        });
    });
    if (!queued) {
        f.reading = false;
        retry(f);
    }
}

void room_gap_fill::retry(fill& f) {
    ++stats_.retries;
    owner_.timers().schedule(f.retry, owner_.ticks_for(o_.retry_interval));
}

bool room_gap_fill::give_up(room_id room, fill& f, std::uint64_t upto) {
    if (std::chrono::steady_clock::now() < f.deadline) {
        retry(f);
        return false;
    }
    const std::uint64_t n = upto - f.next + 1;
    stats_.missing += n;
    f.missing += n;
    log_limited(log_level::warn,
                "room {}: messages ({}, {}] are neither in Redis nor in the database (a publisher that stopped "
                "before its commit); reported to the members as a gap",
                room.value(), f.next - 1, upto);
    const std::uint64_t from = f.next - 1;
    f.next = upto + 1;
    if (sink_.missing) sink_.missing(room, from, upto);
    return true;
}

void room_gap_fill::on_read(room_id room, std::uint64_t hi, read_result r) {
    const auto it = fills_.find(room);
    if (it == fills_.end()) return;
    fill& f = *it->second;
    f.reading = false;
    if (!r.ok) {
        // The database failed: like a missing range, waited for and then reported.
        if (give_up(room, f, hi)) on_read(room, hi, read_result{true, {}});
        return;
    }
    for (auto& row : r.rows) {
        if (row.seq < f.next) continue;
        if (row.seq > hi) break;
        if (row.seq > f.next && !give_up(room, f, row.seq - 1)) return;
        f.next = row.seq + 1;
        ++f.filled;
        ++stats_.filled;
        if (sink_.stored) sink_.stored(room, std::move(row));
    }
    if (f.next <= hi && !give_up(room, f, hi)) return;
    const auto [from, to] = f.ranges.front();
    if (f.next <= to) {
        read(room, f);
        return;
    }
    log(log_level::info, "room {}: gap ({}, {}] filled from the database: {} messages, {} missing", room.value(), from,
        to, f.filled, f.missing);
    f.ranges.pop_front();
    if (!f.ranges.empty()) {
        start_range(room, f);
        return;
    }
    // Done: what the feed brought meanwhile goes out now, in its order.
    auto held = std::move(f.held);
    if (f.retry.armed()) owner_.timers().cancel(f.retry);
    fills_.erase(it);
    for (auto& [seq, body] : held)
        if (sink_.released) sink_.released(room, seq, std::move(body));
}

}  // namespace strix::chat
