#pragma once
// Helpers for the cluster tests: an engine whose shards run the Redis clients, blocking calls
// from the test thread into them, a plain hiredis connection to look at Redis directly, and a
// fake "Redis" that answers whatever a test wants (hostile replies, silence).
#include "apps/chat/cluster/redis_client.hpp"
#include "apps/chat/cluster/redis_subscriber.hpp"
#include "support/redis_server.hpp"

#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strix::test {

using namespace std::chrono_literals;

struct shard_env {
    explicit shard_env(unsigned shards = 1) : eng(config(shards)) { eng.start(); }
    ~shard_env() {
        eng.stop();
        eng.join();
    }
    static engine_config config(unsigned shards) {
        engine_config c;
        c.shards = shards;
        c.pin_threads = false;
        c.tick = std::chrono::milliseconds(5);
        return c;
    }
    template <class F>
    auto on(unsigned s, F&& f) {
        return eng.run_on(s, std::forward<F>(f));
    }
    engine eng;
};

struct call_result {
    std::error_code ec;
    chat::resp_reply reply;
};

/// Sends args through client c (on shard s) and waits for the callback.
inline call_result call(shard_env& env, chat::redis_client& c, std::vector<std::string> args, unsigned s = 0,
                        std::chrono::milliseconds wait = 10s) {
    auto p = std::make_shared<std::promise<call_result>>();
    auto f = p->get_future();
    env.on(s, [&] {
        std::vector<std::string_view> a(args.begin(), args.end());
        c.command(a, [p](std::error_code ec, const chat::resp_reply& r) { p->set_value({ec, r}); });
    });
    if (f.wait_for(wait) != std::future_status::ready) {
        ADD_FAILURE() << "no callback within " << wait.count() << " ms for " << args[0];
        return {std::make_error_code(std::errc::timed_out), {}};
    }
    return f.get();
}

/// Polls pred every 5 ms until it holds or `within` passes; returns whether it held.
inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds within = 5s) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
        if (pred()) return true;
        std::this_thread::sleep_for(5ms);
    }
    return pred();
}

inline chat::redis_options options_for(std::uint16_t port) {
    chat::redis_options o;
    o.target = endpoint::tcp("127.0.0.1", port);
    return o;
}

/// A blocking hiredis connection, to publish and inspect from the test thread.
class direct_redis {
public:
    explicit direct_redis(std::uint16_t port) {
        timeval tv{5, 0};
        c_ = redisConnectWithTimeout("127.0.0.1", port, tv);
        if (c_ == nullptr || c_->err) throw std::runtime_error("direct_redis: cannot connect");
    }
    ~direct_redis() { redisFree(c_); }
    direct_redis(const direct_redis&) = delete;
    direct_redis& operator=(const direct_redis&) = delete;

    /// Runs a command; returns the integer reply (or -1 for any other reply).
    long long integer(const std::vector<std::string>& args) {
        redisReply* r = run(args);
        const long long v = r != nullptr && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
        if (r != nullptr) freeReplyObject(r);
        return v;
    }
    std::string text(const std::vector<std::string>& args) {
        redisReply* r = run(args);
        std::string s = r != nullptr && r->str != nullptr ? std::string(r->str, r->len) : std::string();
        if (r != nullptr) freeReplyObject(r);
        return s;
    }

private:
    redisReply* run(const std::vector<std::string>& args) {
        std::vector<const char*> argv;
        std::vector<std::size_t> lens;
        for (const auto& a : args) {
            argv.push_back(a.data());
            lens.push_back(a.size());
        }
        return static_cast<redisReply*>(redisCommandArgv(c_, static_cast<int>(args.size()), argv.data(), lens.data()));
    }
    redisContext* c_ = nullptr;
};

/// A TCP server on a free port that reads whatever comes and answers each connection with
/// `greeting` once something arrived (or at once when answer_at_once), then stays silent.
class fake_redis {
public:
    explicit fake_redis(std::string greeting, bool answer_at_once = false)
        : greeting_(std::move(greeting)), at_once_(answer_at_once) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
            throw std::runtime_error("fake_redis: cannot listen");
        }
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~fake_redis() {
        stop_ = true;
        ::shutdown(fd_, SHUT_RDWR);
        thread_.join();
        for (int c : conns_) ::close(c);
        ::close(fd_);
    }
    std::uint16_t port() const noexcept { return port_; }
    int accepted() const noexcept { return accepted_.load(); }

private:
    void serve() {
        while (!stop_) {
            const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) return;
            conns_.push_back(c);
            ++accepted_;
            if (!at_once_) {
                timeval tv{2, 0};
                ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                char buf[4096];
                if (::recv(c, buf, sizeof buf, 0) <= 0) continue;
            }
            (void)!::send(c, greeting_.data(), greeting_.size(), MSG_NOSIGNAL);
        }
    }
    std::string greeting_;
    bool at_once_;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::thread thread_;
    std::vector<int> conns_;
    std::atomic<int> accepted_{0};
    std::atomic<bool> stop_{false};
};

}  // namespace strix::test
