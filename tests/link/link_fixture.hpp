#pragma once
// An engine with link sockets built, used and destroyed on its shards, and a thread-safe inbox
// the tests read from their own thread.
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"

#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>
#include <strix/link/socket.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace strix::test {

using namespace std::chrono_literals;

/// Messages as vectors of strings, pushed from a shard, read from the test.
class inbox {
public:
    void push(link::message_view m) {
        std::vector<std::string> v;
        for (auto p : m) v.emplace_back(link::as_text(p));
        std::lock_guard lk(mu_);
        q_.push_back(std::move(v));
        cv_.notify_all();
    }
    /// The next message, or an empty vector after `within`.
    std::vector<std::string> pop(std::chrono::milliseconds within = 5s) {
        std::unique_lock lk(mu_);
        if (!cv_.wait_for(lk, within, [&] { return !q_.empty(); })) return {};
        auto v = std::move(q_.front());
        q_.pop_front();
        return v;
    }
    std::size_t size() {
        std::lock_guard lk(mu_);
        return q_.size();
    }
    /// True if nothing arrives within `quiet`.
    bool stays_empty(std::chrono::milliseconds quiet = 200ms) {
        std::unique_lock lk(mu_);
        return !cv_.wait_for(lk, quiet, [&] { return !q_.empty(); });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::vector<std::string>> q_;
};

/// Records socket events.
class event_log {
public:
    void push(const link::socket_event& e) {
        std::lock_guard lk(mu_);
        events_.push_back(e);
    }
    bool saw(link::socket_event::kind k, std::chrono::milliseconds within = 5s) {
        return eventually([&] { return count(k) > 0; }, within);
    }
    std::size_t count(link::socket_event::kind k) {
        std::lock_guard lk(mu_);
        std::size_t n = 0;
        for (auto& e : events_) n += e.what == k;
        return n;
    }
    std::vector<link::socket_event> all() {
        std::lock_guard lk(mu_);
        return events_;
    }

private:
    std::mutex mu_;
    std::vector<link::socket_event> events_;
};

class link_env {
public:
    explicit link_env(unsigned shards = 2) : eng_(config(shards)) { eng_.start(); }
    ~link_env() {
        // Sockets still alive are destroyed on their shards first.
        for (auto& [sh, s] : sockets_) on(sh, [&] { s.reset(); });
        eng_.stop();
        eng_.join();
    }

    engine& eng() { return eng_; }

    /// An inbox or event log that outlives every socket made here (callbacks may run until a
    /// socket is destroyed, which happens in ~link_env).
    inbox& new_inbox() { return *boxes_.emplace_back(std::make_unique<inbox>()); }
    event_log& new_log() { return *logs_.emplace_back(std::make_unique<event_log>()); }

    /// Runs f on shard i and returns its result (f's exceptions come back here).
    template <class F>
    auto on(unsigned i, F&& f) -> decltype(f()) {
        return eng_.run_on(i, std::forward<F>(f));
    }

    /// A socket on shard i whose messages go to `box` and events to `log` (either may be null).
    link::socket& make(unsigned i, link::socket_type t, link::socket_options o = {}, inbox* box = nullptr,
                       event_log* log = nullptr) {
        auto s = on(i, [&] {
            auto p = std::make_unique<link::socket>(eng_.at(i), t, o);
            if (box) p->on_message([box](link::message_view m) { box->push(m); });
            if (log) p->on_event([log](const link::socket_event& e) { log->push(e); });
            return p;
        });
        auto& ref = *s;
        sockets_.emplace_back(i, std::move(s));
        return ref;
    }

    /// Destroys a socket made here, on its shard.
    void destroy(link::socket& s) {
        for (auto it = sockets_.begin(); it != sockets_.end(); ++it)
            if (it->second.get() == &s) {
                on(it->first, [&] { it->second.reset(); });
                sockets_.erase(it);
                return;
            }
    }

    /// Sends on the socket's shard, retrying while it says would_block (up to `within`).
    std::error_code send(link::socket& s, std::vector<std::string> parts, std::chrono::milliseconds within = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + within;
        for (;;) {
            auto ec = on(shard_of(s), [&] {
                std::vector<link::bytes_view> v;
                for (auto& p : parts) v.push_back(link::as_bytes(p));
                link::message m;
                for (auto b : v) m.add(b);
                return s.send(m);
            });
            if (ec != link::link_errc::would_block || std::chrono::steady_clock::now() > deadline) return ec;
            std::this_thread::sleep_for(2ms);
        }
    }

    unsigned shard_of(link::socket& s) { return s.owner().id(); }

private:
    static engine_config config(unsigned n) {
        engine_config c;
        c.shards = n;
        c.pin_threads = false;
        c.tick = std::chrono::milliseconds(5);
        return c;
    }
    std::vector<std::unique_ptr<inbox>> boxes_;
    std::vector<std::unique_ptr<event_log>> logs_;
    engine eng_;
    std::vector<std::pair<unsigned, std::unique_ptr<link::socket>>> sockets_;
};

}  // namespace strix::test
