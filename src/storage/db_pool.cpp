#include <strix/storage/db_pool.hpp>

#include <strix/core/log.hpp>

#include <exception>
#include <stdexcept>

namespace strix {

namespace {

std::vector<std::unique_ptr<chat_store>> open_stores(const db_pool_config& cfg) {
    std::vector<std::unique_ptr<chat_store>> stores;
    const std::size_t n = cfg.workers == 0 ? 1 : cfg.workers;
    stores.reserve(n);
    // Opened here, on the owner's thread, so a bad URL or an unreachable server throws from the
    // constructor instead of killing a worker thread later. Each store is then used only by the
    // one worker it is handed to.
    for (std::size_t i = 0; i < n; ++i) stores.push_back(open_chat_store(cfg.url, cfg.policy));
    return stores;
}

}  // namespace

db_pool::db_pool(const db_pool_config& cfg) : capacity_(cfg.queue_capacity) { start(open_stores(cfg)); }

db_pool::db_pool(std::vector<std::unique_ptr<chat_store>> stores, std::size_t queue_capacity)
    : capacity_(queue_capacity) {
    if (stores.empty()) throw std::invalid_argument("db_pool needs at least one chat_store");
    start(std::move(stores));
}

db_pool::~db_pool() { stop(); }

void db_pool::start(std::vector<std::unique_ptr<chat_store>> stores) {
    stores_ = std::move(stores);
    threads_.reserve(stores_.size());
    for (auto& s : stores_) threads_.emplace_back([this, st = s.get()] { run(*st); });
}

bool db_pool::try_submit(job j) {
    {
        std::lock_guard lk(mu_);
        if (stopping_ || queue_.size() >= capacity_) {
            ++rejected_;
            return false;
        }
        queue_.push_back(std::move(j));
        ++submitted_;
        if (queue_.size() > peak_) peak_ = queue_.size();
    }
    cv_.notify_one();
    return true;
}

void db_pool::run(chat_store& store) {
    for (;;) {
        job j;
        {
            std::unique_lock lk(mu_);
            cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
            // Stopping still drains: exit only once nothing is left.
            if (queue_.empty()) return;
            j = std::move(queue_.front());
            queue_.pop_front();
        }
        try {
            j(store);
        } catch (const std::exception& e) {
            failed_.fetch_add(1, std::memory_order_relaxed);
            log(log_level::error, "db_pool: a job threw and its caller got no reply: %s", e.what());
        } catch (...) {
            failed_.fetch_add(1, std::memory_order_relaxed);
            log(log_level::error, "db_pool: a job threw a non-exception and its caller got no reply");
        }
        executed_.fetch_add(1, std::memory_order_release);
    }
}

void db_pool::stop() {
    std::lock_guard stop_lk(stop_mu_);
    {
        std::lock_guard lk(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
        if (t.joinable()) t.join();
    }
}

db_pool_stats db_pool::stats() const {
    db_pool_stats s;
    {
        std::lock_guard lk(mu_);
        s.queue_depth = queue_.size();
        s.queue_peak = peak_;
        s.submitted = submitted_;
        s.rejected = rejected_;
    }
    s.executed = executed_.load(std::memory_order_acquire);
    s.failed = failed_.load(std::memory_order_relaxed);
    return s;
}

}  // namespace strix
