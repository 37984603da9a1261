#include "apps/chat/storage/chat_retention.hpp"

#include <strix/core/log.hpp>
#include <strix/core/thread_name.hpp>

#include <thread>

namespace strix::chat {
namespace {

constexpr std::size_t rooms_per_page = 100;

std::int64_t wall_clock_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

chat_retention::chat_retention(std::unique_ptr<chat_store> store, const retention_policy& policy)
    : store_(std::move(store)), policy_(policy) {
    thread_ = std::thread([this] {
        set_thread_name("strix-retention");
        run();
    });
}

chat_retention::~chat_retention() { stop(); }

std::uint64_t chat_retention::run_pass(chat_store& store, const retention_policy& policy, std::int64_t now_us,
                                       std::chrono::milliseconds pause) {
    const std::int64_t cutoff =
        policy.max_age.count() > 0
            ? now_us - std::chrono::duration_cast<std::chrono::microseconds>(policy.max_age).count()
            : 0;
    std::uint64_t deleted = 0;
    std::uint64_t after = 0;
    for (;;) {
        const std::vector<std::uint64_t> rooms = store.log_rooms_after(after, rooms_per_page);
        for (std::uint64_t room : rooms) {
            for (;;) {
                const std::size_t n = store.trim_room_logs(room, policy.max_per_room, cutoff, policy.batch);
                deleted += n;
                if (n < policy.batch) break;
                if (pause.count() > 0) std::this_thread::sleep_for(pause);
            }
        }
        if (rooms.size() < rooms_per_page) return deleted;
        after = rooms.back();
    }
}

void chat_retention::run() {
    std::unique_lock lk(mu_);
    while (!stopping_) {
        lk.unlock();
        try {
            // Pauses between DELETEs keep a long backlog (the first pass after enabling a policy)
            // from holding the database's write lock for seconds at a time.
            const std::uint64_t n = run_pass(*store_, policy_, wall_clock_us(), policy_.pause);
            deleted_.fetch_add(n, std::memory_order_relaxed);
            passes_.fetch_add(1, std::memory_order_relaxed);
            if (n != 0) log(log_level::debug, "retention: deleted {} chat log rows", n);
        } catch (const std::exception& e) {
            failures_.fetch_add(1, std::memory_order_relaxed);
            log_limited(log_level::warn, "retention pass failed (retried in {} ms): {}", policy_.interval.count(),
                        e.what());
        }
        lk.lock();
        cv_.wait_for(lk, policy_.interval, [&] { return stopping_; });
    }
}

void chat_retention::stop() {
    {
        std::lock_guard lk(mu_);
        if (stopping_ && !thread_.joinable()) return;
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

retention_stats chat_retention::stats() const {
    return {passes_.load(std::memory_order_relaxed), deleted_.load(std::memory_order_relaxed),
            failures_.load(std::memory_order_relaxed)};
}

}  // namespace strix::chat
