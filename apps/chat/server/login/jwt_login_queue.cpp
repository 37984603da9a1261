// jwt_login_queue (jwt_login_queue.hpp): the batch a database job takes, its one transaction, and
// the verdicts sent back.

#include "apps/chat/server/login/jwt_login_queue.hpp"

#include "apps/chat/server/login/jwt.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <iterator>
#include <utility>

namespace strix::chat {

jwt_login_queue::jwt_login_queue(db_pool& pool, const jwt_auth& auth, reply_fn reply, std::size_t max_batch)
    : pool_(pool), auth_(auth), reply_(std::move(reply)), max_batch_(std::max<std::size_t>(1, max_batch)) {}

bool jwt_login_queue::submit(login l) {
    std::lock_guard lk(mu_);
    // The pool's queue is locked inside ours, never the other way round (a job runs unlocked).
    if (!scheduled_) {
        if (!pool_.try_submit([this](chat_store& store) { drain(store); })) return false;
        scheduled_ = true;
    }
    pending_.push_back(std::move(l));
    return true;
}

void jwt_login_queue::drain(chat_store& store) {
    for (;;) {
        std::vector<login> batch;
        {
            std::lock_guard lk(mu_);
            const auto n = static_cast<std::ptrdiff_t>(std::min(pending_.size(), max_batch_));
            batch.assign(std::make_move_iterator(pending_.begin()), std::make_move_iterator(pending_.begin() + n));
            pending_.erase(pending_.begin(), pending_.begin() + n);
        }
        run(store, batch);
        std::lock_guard lk(mu_);
        if (pending_.empty()) {
            scheduled_ = false;
            return;
        }
        // Behind the other jobs waiting for a worker; a full queue (or a stopping pool): here.
        if (pool_.try_submit([this](chat_store& s) { drain(s); })) return;
    }
}

void jwt_login_queue::run(chat_store& store, std::vector<login>& batch) {
    const std::int64_t now_s =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::vector<login_verdict> verdicts(batch.size());
    std::vector<std::string> subjects;
    std::vector<std::size_t> whose;  // subjects[k] is batch[whose[k]]'s
    for (std::size_t i = 0; i < batch.size(); ++i) {
        verdicts[i].jwt = auth_.verify(batch[i].jwt, now_s);
        if (!verdicts[i].jwt->claims) continue;
        subjects.push_back(verdicts[i].jwt->claims->sub);
        whose.push_back(i);
    }
    if (!subjects.empty()) {
        try {
            std::vector<login_result> results = store.login_external_batch(subjects);
            for (std::size_t k = 0; k < results.size() && k < whose.size(); ++k)
                verdicts[whose[k]].result = std::move(results[k]);
        } catch (const std::exception& e) {
            // Nothing was stored (one transaction): each of them is told the login failed.
            log_limited(log_level::warn, "JWT logins of {} accounts failed: {}", subjects.size(), e.what());
        }
    }
    batches_.fetch_add(1, std::memory_order_relaxed);
    logins_.fetch_add(batch.size(), std::memory_order_relaxed);
    for (std::size_t i = 0; i < batch.size(); ++i) {
        batch[i].slot.release();
        reply_(batch[i].shard, batch[i].session_id, std::move(verdicts[i]));
    }
}

}  // namespace strix::chat
