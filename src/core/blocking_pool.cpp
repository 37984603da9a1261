#include <strix/core/blocking_pool.hpp>
#include <strix/core/log.hpp>
#include <strix/core/thread_name.hpp>

#include <algorithm>
#include <string>

#include <exception>

namespace strix {

blocking_pool::blocking_pool(blocking_pool_config cfg)
    : capacity_(cfg.queue_capacity), workers_(cfg.workers == 0 ? 1 : cfg.workers), name_(std::move(cfg.name)) {
    threads_.reserve(workers_);
    for (std::size_t i = 0; i < workers_; ++i)
        threads_.emplace_back([this, i] {
            // "database-0": the name cut so that the index fits in Linux's 15 bytes.
            std::string index = std::to_string(i);
            std::string name = name_.substr(0, 15 - std::min<std::size_t>(15, index.size() + 1));
            name.push_back('-');
            name.append(index);
            set_thread_name(name);
            run(i);
        });
}

blocking_pool::~blocking_pool() { stop(); }

bool blocking_pool::try_submit(job j) {
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

void blocking_pool::run(std::size_t worker) {
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
            j(worker);
        } catch (const std::exception& e) {
            failed_.fetch_add(1, std::memory_order_relaxed);
            log(log_level::error, "{} pool: a job threw and its caller got no reply: {}", name_, e.what());
        } catch (...) {
            failed_.fetch_add(1, std::memory_order_relaxed);
            log(log_level::error, "{} pool: a job threw a non-exception and its caller got no reply", name_);
        }
        executed_.fetch_add(1, std::memory_order_release);
    }
}

void blocking_pool::stop() {
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

blocking_pool_stats blocking_pool::stats() const {
    blocking_pool_stats s;
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
