#pragma once
// jwt_login_queue: JWT logins reach the database in batches. Shards queue them here; one database
// job at a time takes up to max_batch of them, checks each token, finds or creates their accounts
// in ONE transaction (chat_store::login_external_batch) and hands each verdict back to its
// session's shard. With a transaction per login, SQLite spent its time on file locks, WAL pages
// and lock waits per commit: in a 300,000-connection ramp the database threads took 40-48 % of
// the server's CPU (docs/benchmarks.md, "Where a connect's CPU goes").
//
//   shard ─ submit ─> pending ─ one job at a time ─> worker: verify each token,
//                                                  one transaction for the batch ─> reply(shard, verdict)
//
// A job takes one batch and then queues itself again, behind whatever else waits for a worker,
// so a stream of logins does not starve history reads and password logins. When the database
// queue is full it goes on with the next batch itself: nothing queued here waits for a job that
// was never queued.

#include "apps/chat/server/login/login_job.hpp"
#include "apps/chat/server/login/login_slot.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace strix::chat {

class db_pool;
class chat_store;
class jwt_auth;

class jwt_login_queue {
public:
    /// Where a verdict goes: session `session_id` on shard `shard`. Called on a database worker.
    using reply_fn = std::function<void(unsigned shard, std::uint64_t session_id, login_verdict&& v)>;

    struct login {
        std::string jwt;  // the token as the client sent it
        unsigned shard = 0;
        std::uint64_t session_id = 0;
        login_slot slot;  // its --login-queue place: given back before the reply
    };

    /// pool, auth and reply must outlive the jobs: the queue lives until the pool has stopped.
    jwt_login_queue(db_pool& pool, const jwt_auth& auth, reply_fn reply, std::size_t max_batch = 64);
    jwt_login_queue(const jwt_login_queue&) = delete;
    jwt_login_queue& operator=(const jwt_login_queue&) = delete;

    /// Queues `l`. False when the database queue is full (l is dropped, its slot given back): the
    /// caller answers server_busy. Any thread.
    bool submit(login l);

    /// Batches run (one database transaction each) and the logins they held. Any thread.
    std::uint64_t batches() const noexcept { return batches_.load(std::memory_order_relaxed); }
    std::uint64_t logins() const noexcept { return logins_.load(std::memory_order_relaxed); }

private:
    void drain(chat_store& store);
    void run(chat_store& store, std::vector<login>& batch);

    db_pool& pool_;
    const jwt_auth& auth_;
    reply_fn reply_;
    const std::size_t max_batch_;
    std::mutex mu_;
    std::vector<login> pending_;  // guarded by mu_
    bool scheduled_ = false;      // guarded by mu_: a job is queued or running
    std::atomic<std::uint64_t> batches_{0};
    std::atomic<std::uint64_t> logins_{0};
};

}  // namespace strix::chat
