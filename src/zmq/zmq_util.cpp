// libzmq's utilities: Z85 and CURVE keys (through strix::link's security code), atomic
// counters, timers, the stopwatch, sleep and threads.
#include "zmq/zmq_shim.hpp"

#include <strix/link/security.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

namespace strix::zmq_abi {
namespace {

using clock = std::chrono::steady_clock;

struct timer {
    std::size_t interval;
    zmq_timer_fn* handler;
    void* arg;
    clock::time_point due;
};

struct timers {
    std::uint32_t tag = 0x9b5d6cf1;
    int next_id = 1;
    std::map<int, timer> all;
};

timers* as_timers(void* t) noexcept {
    if (!t || static_cast<timers*>(t)->tag != 0x9b5d6cf1) {
        errno = EFAULT;
        return nullptr;
    }
    return static_cast<timers*>(t);
}

struct thread_box {
    std::thread t;
};

}  // namespace
}  // namespace strix::zmq_abi

using namespace strix::zmq_abi;

extern "C" {

char* zmq_z85_encode(char* dest, const uint8_t* data, size_t size) {
    if (!dest || !data || size % 4 != 0) {
        errno = EINVAL;
        return nullptr;
    }
    const std::string z = strix::link::z85_encode(std::as_bytes(std::span(data, size)));
    std::memcpy(dest, z.c_str(), z.size() + 1);
    return dest;
}

uint8_t* zmq_z85_decode(uint8_t* dest, const char* string) {
    if (!dest || !string) {
        errno = EINVAL;
        return nullptr;
    }
    const auto raw = strix::link::z85_decode(string);
    if (!raw || raw->empty()) {  // libzmq refuses an empty string
        errno = EINVAL;
        return nullptr;
    }
    std::memcpy(dest, raw->data(), raw->size());
    return dest;
}

int zmq_curve_keypair(char* z85_public, char* z85_secret) {
    if (!z85_public || !z85_secret) return fail(EINVAL);
    const auto kp = strix::link::curve_keypair::generate();
    const std::string p = kp.public_z85(), s = kp.secret_z85();
    std::memcpy(z85_public, p.c_str(), 41);
    std::memcpy(z85_secret, s.c_str(), 41);
    return 0;
}

int zmq_curve_public(char* z85_public, const char* z85_secret) {
    if (!z85_public || !z85_secret) return fail(EINVAL);
    const auto raw = strix::link::z85_decode(std::string_view(z85_secret, strnlen(z85_secret, 41)));
    if (!raw || raw->size() != 32) return fail(EINVAL);
    std::array<std::byte, 32> secret{};
    std::memcpy(secret.data(), raw->data(), 32);
    const std::string p = strix::link::curve_keypair::from_secret(secret).public_z85();
    std::memcpy(z85_public, p.c_str(), 41);
    return 0;
}

void* zmq_atomic_counter_new(void) { return new (std::nothrow) std::atomic<int>(0); }

void zmq_atomic_counter_set(void* c, int value) {
    if (c) static_cast<std::atomic<int>*>(c)->store(value);
}

int zmq_atomic_counter_inc(void* c) { return c ? static_cast<std::atomic<int>*>(c)->fetch_add(1) : 0; }

int zmq_atomic_counter_dec(void* c) {
    // libzmq: 1 while the counter is above zero after the decrement, 0 once it reached zero.
    return c ? (static_cast<std::atomic<int>*>(c)->fetch_sub(1) - 1 > 0 ? 1 : 0) : 0;
}

int zmq_atomic_counter_value(void* c) { return c ? static_cast<std::atomic<int>*>(c)->load() : 0; }

void zmq_atomic_counter_destroy(void** c) {
    if (!c || !*c) return;
    delete static_cast<std::atomic<int>*>(*c);
    *c = nullptr;
}

void* zmq_timers_new(void) { return new (std::nothrow) timers; }

int zmq_timers_destroy(void** t) {
    if (!t) return fail(EFAULT);
    timers* ts = as_timers(*t);
    if (!ts) return -1;
    ts->tag = 0;
    delete ts;
    *t = nullptr;
    return 0;
}

int zmq_timers_add(void* t, size_t interval, zmq_timer_fn handler, void* arg) {
    timers* ts = as_timers(t);
    if (!ts) return -1;
    if (!handler) return fail(EFAULT);
    const int id = ts->next_id++;
    ts->all[id] = {interval, handler, arg, clock::now() + std::chrono::milliseconds(interval)};
    return id;
}

int zmq_timers_cancel(void* t, int id) {
    timers* ts = as_timers(t);
    if (!ts) return -1;
    return ts->all.erase(id) ? 0 : fail(EINVAL);
}

int zmq_timers_set_interval(void* t, int id, size_t interval) {
    timers* ts = as_timers(t);
    if (!ts) return -1;
    auto it = ts->all.find(id);
    if (it == ts->all.end()) return fail(EINVAL);
    it->second.interval = interval;
    it->second.due = clock::now() + std::chrono::milliseconds(interval);
    return 0;
}

int zmq_timers_reset(void* t, int id) {
    timers* ts = as_timers(t);
    if (!ts) return -1;
    auto it = ts->all.find(id);
    if (it == ts->all.end()) return fail(EINVAL);
    it->second.due = clock::now() + std::chrono::milliseconds(it->second.interval);
    return 0;
}

long zmq_timers_timeout(void* t) {
    timers* ts = as_timers(t);
    if (!ts) return -1;
    if (ts->all.empty()) return -1;
    auto first = clock::time_point::max();
    for (auto& [id, tm] : ts->all) first = std::min(first, tm.due);
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(first - clock::now()).count();
    return left < 0 ? 0 : static_cast<long>(left);
}

int zmq_timers_execute(void* t) {
    timers* ts = as_timers(t);
    if (!ts) return -1;
    const auto now = clock::now();
    std::vector<int> due;
    for (auto& [id, tm] : ts->all)
        if (tm.due <= now) due.push_back(id);
    for (int id : due) {
        auto it = ts->all.find(id);  // a handler may cancel another timer
        if (it == ts->all.end()) continue;
        it->second.due = now + std::chrono::milliseconds(it->second.interval);
        auto [interval, handler, arg, when] = it->second;
        handler(id, arg);
    }
    return 0;
}

void* zmq_stopwatch_start(void) {
    auto* start = new (std::nothrow) clock::time_point(clock::now());
    return start;
}

unsigned long zmq_stopwatch_intermediate(void* w) {
    if (!w) return 0;
    const auto d = clock::now() - *static_cast<clock::time_point*>(w);
    return static_cast<unsigned long>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

unsigned long zmq_stopwatch_stop(void* w) {
    if (!w) return 0;
    const unsigned long us = zmq_stopwatch_intermediate(w);
    delete static_cast<clock::time_point*>(w);
    return us;
}

void zmq_sleep(int seconds) {
    if (seconds > 0) std::this_thread::sleep_for(std::chrono::seconds(seconds));
}

void* zmq_threadstart(zmq_thread_fn* func, void* arg) {
    if (!func) return nullptr;
    auto* b = new (std::nothrow) thread_box;
    if (!b) return nullptr;
    b->t = std::thread([func, arg] { func(arg); });
    return b;
}

void zmq_threadclose(void* t) {
    if (!t) return;
    auto* b = static_cast<thread_box*>(t);
    if (b->t.joinable()) b->t.join();
    delete b;
}

}  // extern "C"
