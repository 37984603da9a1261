#include <strix/link/blocking.hpp>

#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>

namespace strix::link {

context::context(unsigned shards) {
    engine_config c;
    c.shards = shards == 0 ? 1 : shards;
    c.pin_threads = false;  // the application's threads share the machine with these
    owned_ = std::make_unique<engine>(c);
    owned_->start();
    eng_ = owned_.get();
}

context::context(engine& e) : eng_(&e) {}

context::~context() {
    if (owned_) {
        owned_->stop();
        owned_->join();
    }
}

unsigned context::next_shard() noexcept { return next_++ % eng_->shard_count(); }

// What the shard and the calling thread share: the inbox, the writable signal, events.
struct blocking_socket::shared {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<message> inbox;
    std::deque<socket_event> events;
    std::size_t cap = 1000;
    bool paused = false;        // the socket was paused because the inbox is full
    std::uint64_t writable = 0;  // bumped by every on_writable
};

template <class F>
auto blocking_socket::on_shard(F&& f) -> decltype(f()) {
    return ctx_.eng().run_on(shard_, std::forward<F>(f));
}

blocking_socket::blocking_socket(context& ctx, socket_type type, socket_options opts)
    : ctx_(ctx), shard_(ctx.next_shard()), st_(std::make_shared<shared>()) {
    st_->cap = opts.rcvhwm ? opts.rcvhwm : 1000;
    sock_ = on_shard([&] {
        auto s = std::make_unique<socket>(ctx_.eng().at(shard_), type, opts);
        socket* raw = s.get();
        auto st = st_;
        s->on_message([st, raw](message_view m) {
            message copy = m.copy();
            std::lock_guard lk(st->mu);
            st->inbox.push_back(std::move(copy));
            if (!st->paused && st->inbox.size() >= st->cap) {
                st->paused = true;
                raw->pause_receiving(true);
            }
            st->cv.notify_all();
        });
        s->on_writable([st] {
            std::lock_guard lk(st->mu);
            ++st->writable;
            st->cv.notify_all();
        });
        s->on_event([st](const socket_event& e) {
            std::lock_guard lk(st->mu);
            st->events.push_back(e);
            if (st->events.size() > 1000) st->events.pop_front();
            st->cv.notify_all();
        });
        return s;
    });
}

blocking_socket::~blocking_socket() {
    on_shard([&] { sock_.reset(); });
}

std::string blocking_socket::bind(std::string_view address) {
    return on_shard([&] { return sock_->bind(address); });
}

void blocking_socket::connect(std::string_view address) {
    on_shard([&] { sock_->connect(address); });
}

std::error_code blocking_socket::send(const message& m, duration timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        std::uint64_t seen;
        {
            std::lock_guard lk(st_->mu);
            seen = st_->writable;
        }
        const std::error_code ec = on_shard([&] { return sock_->send(m); });
        if (ec != link_errc::would_block) return ec;
        // Wait for on_writable (which follows a would_block once sending can go on).
        std::unique_lock lk(st_->mu);
        auto ready = [&] { return st_->writable != seen; };
        if (timeout == forever) {
            st_->cv.wait(lk, ready);
        } else if (!st_->cv.wait_until(lk, deadline, ready)) {
            return ec;
        }
    }
}

std::optional<message> blocking_socket::recv(duration timeout) {
    std::unique_lock lk(st_->mu);
    auto ready = [&] { return !st_->inbox.empty(); };
    if (timeout == forever) {
        st_->cv.wait(lk, ready);
    } else if (!st_->cv.wait_for(lk, timeout, ready)) {
        return std::nullopt;
    }
    message m = std::move(st_->inbox.front());
    st_->inbox.pop_front();
    // Below half the bound again: let the shard read from its peers once more.
    if (st_->paused && st_->inbox.size() <= st_->cap / 2) {
        st_->paused = false;
        socket* raw = sock_.get();
        ctx_.eng().post(shard_, [raw] { raw->pause_receiving(false); });
    }
    return m;
}

void blocking_socket::subscribe(std::string_view topic) {
    on_shard([&] { sock_->subscribe(topic); });
}

void blocking_socket::unsubscribe(std::string_view topic) {
    on_shard([&] { sock_->unsubscribe(topic); });
}

// Polls a count on the shard, waking early for any event (subscriptions and handshakes are
// announced as events) and at least every 10 ms.
template <class Count>
static bool wait_for_count(blocking_socket::duration timeout, std::mutex& mu, std::condition_variable& cv,
                           std::size_t n, Count&& count) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (count() >= n) return true;
        if (timeout != blocking_socket::forever && std::chrono::steady_clock::now() >= deadline) return false;
        std::unique_lock lk(mu);
        cv.wait_for(lk, std::chrono::milliseconds(10));
    }
}

bool blocking_socket::wait_for_subscribers(std::size_t n, duration timeout) {
    return wait_for_count(timeout, st_->mu, st_->cv, n, [&] { return on_shard([&] { return sock_->subscribers(); }); });
}

bool blocking_socket::wait_for_peers(std::size_t n, duration timeout) {
    return wait_for_count(timeout, st_->mu, st_->cv, n, [&] { return on_shard([&] { return sock_->peers(); }); });
}

std::optional<socket_event> blocking_socket::next_event(duration timeout) {
    std::unique_lock lk(st_->mu);
    auto ready = [&] { return !st_->events.empty(); };
    if (timeout == forever) {
        st_->cv.wait(lk, ready);
    } else if (!st_->cv.wait_for(lk, timeout, ready)) {
        return std::nullopt;
    }
    socket_event e = std::move(st_->events.front());
    st_->events.pop_front();
    return e;
}

socket_stats blocking_socket::stats() {
    return on_shard([&] { return sock_->stats(); });
}

}  // namespace strix::link
