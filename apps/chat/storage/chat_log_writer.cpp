#include "apps/chat/storage/chat_log_writer.hpp"

#include <strix/core/log.hpp>
#include <strix/core/thread_name.hpp>

#include <algorithm>
#include <exception>
#include <stdexcept>

namespace strix::chat {

chat_log_writer::chat_log_writer(std::unique_ptr<chat_store> store, const chat_log_writer_config& cfg)
    : cfg_(cfg), store_(std::move(store)) {
    if (!store_) throw std::invalid_argument("chat_log_writer needs a chat_store");
    if (cfg_.batch_limit == 0) throw std::invalid_argument("chat_log_writer batch_limit must be at least 1");
    thread_ = std::thread([this] {
        set_thread_name("strix-logwriter");
        run();
    });
}

chat_log_writer::~chat_log_writer() { stop(); }

bool chat_log_writer::try_enqueue(chat_log_entry e, std::uint64_t tag) {
    return push({std::move(e), tag, clock::now()}, false);
}

bool chat_log_writer::try_enqueue_copy(chat_log_entry e) { return push({std::move(e), 0, clock::now(), true}, false); }

bool chat_log_writer::try_enqueue(room_change c, std::uint64_t tag, bool beyond_capacity) {
    return push({std::move(c), tag, clock::now()}, beyond_capacity);
}

bool chat_log_writer::push(queued q, bool beyond_capacity) {
    bool was_empty = false;
    {
        std::lock_guard lk(mu_);
        if (stopping_ || (queue_.size() >= cfg_.capacity && !beyond_capacity)) {
            ++rejected_;
            return false;
        }
        was_empty = queue_.empty();
        queue_.push_back(std::move(q));
        ++accepted_;
        peak_ = std::max(peak_, queue_.size());
    }
    // The writer only sleeps on an empty queue (it looks under the lock first), so only the
    // entry that makes the queue non-empty needs to wake it.
    if (was_empty) work_cv_.notify_one();
    return true;
}

void chat_log_writer::run() {
    batch_buffer batch;
    batch.logs.reserve(cfg_.batch_limit);
    for (;;) {
        clock::time_point oldest;
        {
            std::unique_lock lk(mu_);
            work_cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, and everything is written
            if (cfg_.commit_delay.count() > 0 && !stopping_ && queue_.size() < cfg_.batch_limit) {
                // Gather: wait (lock released) until the oldest entry is commit_delay old, or we
                // stop. Entries that queued up while the last transaction ran are that old
                // already and go at once: the delay only groups a trickle, it never adds to a
                // commit that was slow. try_enqueue only notifies on empty -> non-empty, so this
                // sleeps until the deadline unless stop() wakes us.
                const auto deadline = queue_.front().at + cfg_.commit_delay;
                work_cv_.wait_until(lk, deadline, [&] { return stopping_; });
            }
            // Group commit: everything that piled up while the last transaction ran goes into
            // this one, up to the batch limit.
            const std::size_t n = std::min(queue_.size(), cfg_.batch_limit);
            oldest = queue_.front().at;  // FIFO: the front is the oldest
            for (std::size_t i = 0; i < n; ++i) {
                queued& q = queue_.front();
                if (auto* log = std::get_if<chat_log_entry>(&q.what)) {
                    batch.logs.push_back(std::move(*log));
                    batch.copies += q.copy ? 1 : 0;
                } else
                    batch.changes.push_back(std::move(std::get<room_change>(q.what)));
                if (q.tag != 0) batch.tags.push_back(q.tag);
                queue_.pop_front();
            }
        }
        if (commit_with_retry(batch, oldest)) {
            // Before complete(): whoever flush()es sees the acknowledgements already on their way.
            if (cfg_.committed && !batch.tags.empty()) cfg_.committed(batch.tags);
            complete(batch.size());
            batch.clear();
            continue;
        }
        // Stopping and the database keeps failing: every further batch would fail the same way
        // and stop() must finish, so everything left is given up, counted and reported.
        std::size_t given_up = batch.size();
        batch.clear();
        {
            std::lock_guard lk(mu_);
            given_up += queue_.size();
            queue_.clear();
        }
        lost_.fetch_add(given_up, std::memory_order_relaxed);
        complete(given_up);
        return;
    }
}

bool chat_log_writer::commit_with_retry(const batch_buffer& batch, clock::time_point oldest) {
    auto backoff = cfg_.retry_initial;
    unsigned failed_while_stopping = 0;
    for (unsigned attempt = 1;; ++attempt) {
        std::string why;
        try {
            const std::size_t inserted = store_->write_batch(batch.changes, batch.logs);
            const auto lag = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - oldest);
            const auto lag_us = static_cast<std::uint64_t>(std::max<std::int64_t>(lag.count(), 0));
            // Only this thread writes the lag and the counters; others merely read them.
            last_lag_us_.store(lag_us, std::memory_order_relaxed);
            if (lag_us > max_lag_us_.load(std::memory_order_relaxed)) {
                max_lag_us_.store(lag_us, std::memory_order_relaxed);
            }
            written_.fetch_add(batch.logs.size(), std::memory_order_relaxed);
            room_changes_.fetch_add(batch.changes.size(), std::memory_order_relaxed);
            batches_.fetch_add(1, std::memory_order_relaxed);
            copies_.fetch_add(batch.copies, std::memory_order_relaxed);
            if (inserted < batch.logs.size())
                duplicates_.fetch_add(batch.logs.size() - inserted, std::memory_order_relaxed);
            if (inserted + batch.copies < batch.logs.size()) {
                // Nothing is lost (the stored row wins), but it means a (room_id, seq) key was
                // reused, or an earlier attempt of this batch committed after all. (Copies found
                // stored are expected: the duplicates beyond their number are warned about.)
                log(log_level::warn,
                    "chat_log_writer: {} of {} entries were already stored under the same (room_id, seq){}",
                    batch.logs.size() - inserted - batch.copies, batch.logs.size(),
                    attempt > 1 ? " (an earlier attempt may have committed)" : "; is a room id reused?");
            }
            return true;
        } catch (const std::exception& e) {
            why = e.what();
        } catch (...) {
            why = "unknown exception";
        }
        failures_.fetch_add(1, std::memory_order_relaxed);

        std::unique_lock lk(mu_);
        if (stopping_) {
            if (++failed_while_stopping >= cfg_.stop_attempts) {
                log(log_level::error, "chat_log_writer: commit of {} entries failed (attempt {}, stopping): {}",
                    batch.size(), attempt, why);
                return false;
            }
            log(log_level::error,
                "chat_log_writer: commit of {} entries failed (attempt {}, stopping): {}; "
                "retrying",
                batch.size(), attempt, why);
            // Shutdown is bounded: short fixed pauses instead of the growing backoff.
            lk.unlock();
            std::this_thread::sleep_for(cfg_.retry_initial);
            continue;
        }
        log(log_level::error, "chat_log_writer: commit of {} entries failed (attempt {}): {}; retrying in {} ms",
            batch.size(), attempt, why, backoff.count());
        // Wakes early when stop() is called, which switches to the bounded shutdown retries.
        work_cv_.wait_for(lk, backoff, [&] { return stopping_; });
        backoff = std::min(backoff * 2, cfg_.retry_max);
    }
}

void chat_log_writer::complete(std::size_t n) {
    {
        std::lock_guard lk(mu_);
        completed_ += n;
    }
    done_cv_.notify_all();
}

void chat_log_writer::flush() {
    std::unique_lock lk(mu_);
    const std::uint64_t target = accepted_;
    done_cv_.wait(lk, [&] { return completed_ >= target; });
}

std::uint64_t chat_log_writer::stop() {
    std::lock_guard stop_lk(stop_mu_);
    if (stopped_) return 0;
    stopped_ = true;
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
    }
    work_cv_.notify_all();
    thread_.join();
    const std::uint64_t lost = lost_.load(std::memory_order_relaxed);
    if (lost != 0) {
        log(log_level::error,
            "chat_log_writer: {} acknowledged chat log entries could NOT be written to the database "
            "(it kept failing during shutdown); they are lost",
            lost);
    }
    return lost;
}

chat_log_writer_stats chat_log_writer::stats() const {
    chat_log_writer_stats s;
    {
        std::lock_guard lk(mu_);
        s.enqueued = accepted_;
        s.rejected = rejected_;
        s.queue_depth = queue_.size();
        s.queue_peak = peak_;
    }
    s.written = written_.load(std::memory_order_relaxed);
    s.room_changes = room_changes_.load(std::memory_order_relaxed);
    s.duplicates = duplicates_.load(std::memory_order_relaxed);
    s.copies = copies_.load(std::memory_order_relaxed);
    s.batches = batches_.load(std::memory_order_relaxed);
    s.failures = failures_.load(std::memory_order_relaxed);
    s.lost = lost_.load(std::memory_order_relaxed);
    s.last_lag_us = last_lag_us_.load(std::memory_order_relaxed);
    s.max_lag_us = max_lag_us_.load(std::memory_order_relaxed);
    return s;
}

}  // namespace strix::chat
