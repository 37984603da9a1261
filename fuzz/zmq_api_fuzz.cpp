// Fuzz target: strix's libzmq C API (src/zmq/) in-process, driven through zmq.h only: socket
// options, the zmq_msg_* functions and send/recv on an inproc PAIR pair.
//
// Input: a sequence of operations, each [op u8][arguments...] (arguments past the end are 0):
//   setsockopt  on a scratch socket of any type (option id 0..127: stable, draft and unknown ids),
//               a value of 0..300 input bytes; or a safe option (linger, timeouts, HWMs) on the
//               pair
//   getsockopt  any option id, a buffer of 0..300 bytes
//   msg_*       init, init_size (0..64 KiB, or SIZE_MAX), init_data (input bytes, with a free
//               function), copy, move, close, more, get, set, gets, data/size, on 4 message slots
//               that may be valid, closed or never initialised (zeroed)
//   send/recv   zmq_send, zmq_send_const, zmq_msg_send, zmq_sendiov (with or without SNDMORE),
//               zmq_recv (any buffer size), zmq_msg_recv, zmq_recviov, zmq_poll; all ZMQ_DONTWAIT
// Checked besides the sanitizers (ASan, UBSan, LeakSanitizer at exit):
//   - a valid message's size and bytes are what the model says (init_size: what was written,
//     copy/move: the source's, recv: the part that was sent); move leaves an empty source; a
//     failed copy or move changes nothing;
//   - closed and zeroed messages answer -1/EFAULT (NULL, 0 for data and size) and never crash;
//   - every part received on the pair is the next part the model expects, with ZMQ_RCVMORE and
//     zmq_msg_more saying whether more follow; at the end every whole message sent has arrived
//     (drained with a bounded wait);
//   - getsockopt never reports more bytes than the buffer held; an int option set to a value
//     reads back as that value (for the options whose value is stored as given);
//   - a free function runs at most once per buffer, with its own hint.
// The context is made once; each input gets fresh sockets (a new inproc name) and closes them.
#include "fuzz_support.hpp"

#include <zmq.h>

#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

extern "C" const char* __asan_default_options() {
    // A refused allocation (zmq_msg_init_size of SIZE_MAX) is ENOMEM, as without ASan.
    return "allocator_may_return_null=1";
}

namespace {

using strix::fuzz::bytes;

// Arguments off the front of the input; past the end, zeros and empty spans.
struct cursor {
    bytes in;
    std::uint8_t u8() {
        if (in.empty()) return 0;
        const auto v = static_cast<std::uint8_t>(in[0]);
        in = in.subspan(1);
        return v;
    }
    std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
    std::string take(std::size_t n) {
        n = std::min(n, in.size());
        std::string s(reinterpret_cast<const char*>(in.data()), n);
        in = in.subspan(n);
        return s;
    }
};

void* context() {
    static void* ctx = [] {
        void* c = zmq_ctx_new();
        STRIX_FUZZ_CHECK(c != nullptr);
        return c;
    }();
    return ctx;
}

// A socket of the shared context, or nullptr for a type the library refuses with EINVAL (strix
// has no ZMQ_STREAM: docs/zmq-abi.md). Closed sockets are reaped in the background (libzmq's
// reaper thread), which a fast fuzzer outruns until the context's socket limit says EMFILE: then
// wait for it (5 s at most).
void* make_socket(int type) {
    for (int waited_ms = 0;; ++waited_ms) {
        if (void* s = zmq_socket(context(), type)) return s;
        if (errno == EINVAL) return nullptr;
        STRIX_FUZZ_CHECK(errno == EMFILE && waited_ms < 5000);
        usleep(1000);
    }
}

std::atomic<int> frees_pending{0};

// The buffer of zmq_msg_init_data: freed here, once, with itself as the hint.
void free_buffer(void* data, void* hint) {
    STRIX_FUZZ_CHECK(data == hint);
    STRIX_FUZZ_CHECK(frees_pending.fetch_sub(1) > 0);
    delete[] static_cast<char*>(data);
}

struct slot {
    zmq_msg_t msg;
    bool valid = false;
    std::string content;  // what a valid message holds
};

using message = std::vector<std::string>;

struct direction {
    void* from;
    void* to;
    message sending;              // parts sent with SNDMORE, not yet ended
    std::deque<message> in_flight;  // whole messages sent, not yet received
    std::size_t next_part = 0;      // parts of in_flight.front() already received
};

struct run {
    std::array<slot, 4> slots{};
    std::array<direction, 2> dirs{};
    std::array<void*, 3> scratch{};
    cursor in;

    slot& any_slot() { return slots[in.u8() % slots.size()]; }
    direction& any_dir() { return dirs[in.u8() % 2]; }

    void check_slot(slot& s) {
        if (!s.valid) return;
        STRIX_FUZZ_CHECK(zmq_msg_size(&s.msg) == s.content.size());
        if (!s.content.empty())
            STRIX_FUZZ_CHECK(std::memcmp(zmq_msg_data(&s.msg), s.content.data(), s.content.size()) == 0);
    }
    void invalidate(slot& s) {
        if (s.valid) STRIX_FUZZ_CHECK(zmq_msg_close(&s.msg) == 0);
        s.valid = false;
    }

    void msg_op(std::uint8_t op);
    void send_op(std::uint8_t op);
    void recv_op(std::uint8_t op);
    void option_op(std::uint8_t op);
    void received(direction& d, const char* data, std::size_t size, std::size_t copied, int more,
                  bool check_rcvmore = true);
    void finish();
};

void expect_efault(int rc) { STRIX_FUZZ_CHECK(rc == -1 && errno == EFAULT); }

void run::msg_op(std::uint8_t op) {
    slot& s = any_slot();
    slot& other = any_slot();
    switch (op % 8) {
        case 0:
            invalidate(s);
            STRIX_FUZZ_CHECK(zmq_msg_init(&s.msg) == 0);
            s.valid = true;
            s.content.clear();
            break;
        case 1: {
            invalidate(s);
            const std::uint16_t n = in.u16();
            const std::size_t size = n == 0xffff ? SIZE_MAX : n;
            if (zmq_msg_init_size(&s.msg, size) != 0) {
                STRIX_FUZZ_CHECK(size == SIZE_MAX && errno == ENOMEM);
                std::memset(&s.msg, 0, sizeof s.msg);
                break;
            }
            s.valid = true;
            s.content.assign(size, static_cast<char>(in.u8()));
            if (size) std::memcpy(zmq_msg_data(&s.msg), s.content.data(), size);
            break;
        }
        case 2: {
            invalidate(s);
            s.content = in.take(in.u16() % 4096);
            char* buf = new char[std::max<std::size_t>(s.content.size(), 1)];
            std::memcpy(buf, s.content.data(), s.content.size());
            ++frees_pending;
            STRIX_FUZZ_CHECK(zmq_msg_init_data(&s.msg, buf, s.content.size(), free_buffer, buf) == 0);
            s.valid = true;
            break;
        }
        case 3:  // copy other -> s (libzmq checks the source, then closes the destination)
        case 4:  // move other -> s
            if (&s == &other) break;
            if (!other.valid || !s.valid) {
                expect_efault(op % 8 == 3 ? zmq_msg_copy(&s.msg, &other.msg) : zmq_msg_move(&s.msg, &other.msg));
            } else if (op % 8 == 3) {
                STRIX_FUZZ_CHECK(zmq_msg_copy(&s.msg, &other.msg) == 0);
                s.content = other.content;
            } else {
                STRIX_FUZZ_CHECK(zmq_msg_move(&s.msg, &other.msg) == 0);
                s.content = std::move(other.content);
                other.content.clear();
            }
            break;
        case 5:
            if (s.valid)
                invalidate(s);
            else
                expect_efault(zmq_msg_close(&s.msg));
            break;
        case 6: {  // properties
            const int more = zmq_msg_more(&s.msg);
            if (s.valid) STRIX_FUZZ_CHECK(more == 0 || more == 1);
            const int prop = in.u8() % 5;
            const int got = zmq_msg_get(&s.msg, prop);
            if (s.valid && prop == ZMQ_MORE) STRIX_FUZZ_CHECK(got == more);
            if (s.valid && prop == ZMQ_SHARED) STRIX_FUZZ_CHECK(got == 0 || got == 1);
            STRIX_FUZZ_CHECK(zmq_msg_set(&s.msg, prop, 1) == -1 && errno == EINVAL);
            static const char* names[] = {"Socket-Type", "User-Id", "Peer-Address", "Routing-Id", "", "X-Other"};
            const char* v = zmq_msg_gets(&s.msg, names[in.u8() % 6]);
            if (v) (void)std::strlen(v);  // a NUL-terminated string (ASan reads it)
            break;
        }
        default:
            if (s.valid) {
                check_slot(s);
            } else {
                STRIX_FUZZ_CHECK(zmq_msg_size(&s.msg) == 0);
                STRIX_FUZZ_CHECK(zmq_msg_data(&s.msg) == nullptr);
            }
    }
    check_slot(s);
    check_slot(other);
}

void run::send_op(std::uint8_t op) {
    direction& d = any_dir();
    const int more = in.u8() & 1 ? ZMQ_SNDMORE : 0;
    const int flags = ZMQ_DONTWAIT | more;
    std::string part;
    int rc = -1;
    switch (op % 4) {
        case 0:
            part = in.take(in.u16() % 2048);
            rc = zmq_send(d.from, part.data(), part.size(), flags);
            break;
        case 1: {
            static const char constant[] = "a constant part, never freed";
            part.assign(constant, in.u8() % sizeof constant);
            rc = zmq_send_const(d.from, constant, part.size(), flags);
            break;
        }
        case 2: {
            slot& s = any_slot();
            rc = zmq_msg_send(&s.msg, d.from, flags);
            if (!s.valid) {
                expect_efault(rc);
                return;
            }
            part = s.content;
            if (rc >= 0) s.content.clear();  // the message is emptied, still valid
            break;
        }
        default: {
            // zmq_sendiov, as libzmq does it: with SNDMORE the vectors are the parts of a message
            // that ends with the last one (SNDMORE is dropped there); without, each vector is a
            // message of its own (one vector then: a later one could meet the HWM after the
            // first went, which the return value could not tell).
            std::array<std::string, 3> parts;
            std::array<iovec, 3> iov{};
            const std::size_t n = more ? 1 + in.u8() % 3 : 1;
            for (std::size_t i = 0; i < n; ++i) {
                parts[i] = in.take(in.u8());
                iov[i] = {parts[i].data(), parts[i].size()};
            }
            rc = zmq_sendiov(d.from, iov.data(), n, flags);
            if (rc < 0) {
                STRIX_FUZZ_CHECK(errno == EAGAIN);
                return;
            }
            STRIX_FUZZ_CHECK(static_cast<std::size_t>(rc) == parts[n - 1].size());
            for (std::size_t i = 0; i < n; ++i) d.sending.push_back(parts[i]);
            d.in_flight.push_back(std::move(d.sending));
            d.sending.clear();
            return;
        }
    }
    if (rc < 0) {
        STRIX_FUZZ_CHECK(errno == EAGAIN);
        return;
    }
    STRIX_FUZZ_CHECK(static_cast<std::size_t>(rc) == part.size());
    d.sending.push_back(std::move(part));
    if (!more) {
        d.in_flight.push_back(std::move(d.sending));
        d.sending.clear();
    }
}

// A part arrived on d: the model's next one, with the right "more".
void run::received(direction& d, const char* data, std::size_t size, std::size_t copied, int more, bool check_rcvmore) {
    STRIX_FUZZ_CHECK(!d.in_flight.empty());
    const message& m = d.in_flight.front();
    STRIX_FUZZ_CHECK(d.next_part < m.size());
    const std::string& want = m[d.next_part];
    STRIX_FUZZ_CHECK(size == want.size());
    STRIX_FUZZ_CHECK(copied == 0 || std::memcmp(data, want.data(), copied) == 0);
    const bool last = d.next_part + 1 == m.size();
    STRIX_FUZZ_CHECK(more == (last ? 0 : 1));
    if (check_rcvmore) {
        int rcvmore = -1;
        std::size_t len = sizeof rcvmore;
        STRIX_FUZZ_CHECK(zmq_getsockopt(d.to, ZMQ_RCVMORE, &rcvmore, &len) == 0 && rcvmore == more);
    }
    if (last) {
        d.in_flight.pop_front();
        d.next_part = 0;
    } else {
        ++d.next_part;
    }
}

void run::recv_op(std::uint8_t op) {
    direction& d = any_dir();
    switch (op % 4) {
        case 0: {
            const std::size_t cap = in.u16() % 4096;
            std::vector<char> buf(std::max<std::size_t>(cap, 1));
            const int rc = zmq_recv(d.to, cap ? buf.data() : nullptr, cap, ZMQ_DONTWAIT);
            if (rc < 0) {
                STRIX_FUZZ_CHECK(errno == EAGAIN);
                return;
            }
            int more = 0;
            std::size_t len = sizeof more;
            zmq_getsockopt(d.to, ZMQ_RCVMORE, &more, &len);
            received(d, buf.data(), static_cast<std::size_t>(rc), std::min(cap, static_cast<std::size_t>(rc)), more);
            return;
        }
        case 1: {
            slot& s = any_slot();
            const int rc = zmq_msg_recv(&s.msg, d.to, ZMQ_DONTWAIT);
            if (!s.valid) return expect_efault(rc);
            if (rc < 0) {
                STRIX_FUZZ_CHECK(errno == EAGAIN);
                // libzmq leaves an empty message behind; keeping the old one is as good.
                if (zmq_msg_size(&s.msg) == 0) s.content.clear();
                return;
            }
            s.content.assign(static_cast<const char*>(zmq_msg_data(&s.msg)), zmq_msg_size(&s.msg));
            STRIX_FUZZ_CHECK(static_cast<std::size_t>(rc) == s.content.size());
            received(d, s.content.data(), s.content.size(), s.content.size(), zmq_msg_more(&s.msg));
            return;
        }
        case 2: {
            // zmq_recviov hands out malloc'ed copies of the parts of one message, at most count.
            std::array<iovec, 4> iov{};
            std::size_t count = 1 + in.u8() % iov.size();
            const std::size_t asked = count;
            const int rc = zmq_recviov(d.to, iov.data(), &count, ZMQ_DONTWAIT);
            if (rc < 0) {
                STRIX_FUZZ_CHECK(errno == EAGAIN);
                return;
            }
            // It reads until the message ends or the vectors run out.
            STRIX_FUZZ_CHECK(!d.in_flight.empty() && static_cast<std::size_t>(rc) == count);
            STRIX_FUZZ_CHECK(count == std::min(asked, d.in_flight.front().size() - d.next_part));
            for (std::size_t i = 0; i < count; ++i) {
                const int more = d.next_part + 1 < d.in_flight.front().size() ? 1 : 0;
                received(d, static_cast<const char*>(iov[i].iov_base), iov[i].iov_len, iov[i].iov_len, more,
                         i + 1 == count);
                std::free(iov[i].iov_base);
            }
            return;
        }
        default: {
            zmq_pollitem_t items[] = {{dirs[0].from, 0, ZMQ_POLLIN | ZMQ_POLLOUT, 0},
                                      {dirs[0].to, 0, ZMQ_POLLIN | ZMQ_POLLOUT, 0}};
            STRIX_FUZZ_CHECK(zmq_poll(items, 2, 0) >= 0);
        }
    }
}

// Socket options: any id on scratch sockets of any type, a few safe ones on the pair.
void run::option_op(std::uint8_t op) {
    static const int round_trip[] = {ZMQ_LINGER,   ZMQ_SNDHWM,        ZMQ_RCVHWM,        ZMQ_SNDTIMEO,
                                     ZMQ_RCVTIMEO, ZMQ_RECONNECT_IVL, ZMQ_HANDSHAKE_IVL, ZMQ_BACKLOG};
    auto reads_back = [](void* sock, int option, int value) {
        for (int o : round_trip) {
            if (o != option) continue;
            int got = 0;
            std::size_t len = sizeof got;
            STRIX_FUZZ_CHECK(zmq_getsockopt(sock, option, &got, &len) == 0 && len == sizeof got && got == value);
        }
    };
    if (op % 4 == 3) {  // the pair: values that keep the model true (timeouts, HWMs, linger)
        static const int safe[] = {ZMQ_LINGER, ZMQ_SNDTIMEO, ZMQ_RCVTIMEO, ZMQ_SNDHWM, ZMQ_RCVHWM};
        const int option = safe[in.u8() % 5];
        const int value = static_cast<std::int16_t>(in.u16());
        void* sock = any_dir().from;
        if (zmq_setsockopt(sock, option, &value, sizeof value) == 0) reads_back(sock, option, value);
        return;
    }
    void*& sock = scratch[in.u8() % scratch.size()];
    if (!sock) sock = make_socket(in.u8() % 12);
    if (!sock) return;
    const int option = in.u8() % 128;
    if (op % 4 < 2) {
        const std::string value = in.take(in.u16() % 301);
        const int rc = zmq_setsockopt(sock, option, value.empty() ? nullptr : value.data(), value.size());
        STRIX_FUZZ_CHECK(rc == 0 || rc == -1);
        if (rc == 0 && value.size() == sizeof(int)) {
            int v;
            std::memcpy(&v, value.data(), sizeof v);
            reads_back(sock, option, v);
        }
        return;
    }
    const std::size_t cap = in.u16() % 301;
    std::vector<char> buf(std::max<std::size_t>(cap, 1));
    std::size_t len = cap;
    const int rc = zmq_getsockopt(sock, option, buf.data(), &len);
    STRIX_FUZZ_CHECK(rc == -1 || (rc == 0 && len <= cap));
}

// Every whole message sent arrives (a bounded wait), then everything is closed.
void run::finish() {
    for (direction& d : dirs) {
        const int wait_ms = 2000;
        zmq_setsockopt(d.to, ZMQ_RCVTIMEO, &wait_ms, sizeof wait_ms);
        while (!d.in_flight.empty()) {
            zmq_msg_t part;
            zmq_msg_init(&part);
            if (zmq_msg_recv(&part, d.to, 0) < 0) {
                std::fprintf(stderr, "strix fuzz: %zu whole messages sent never arrived (%s)\n", d.in_flight.size(),
                             zmq_strerror(errno));
                strix::fuzz::fail("a whole message sent on the pair was lost", __FILE__, __LINE__);
            }
            received(d, static_cast<const char*>(zmq_msg_data(&part)), zmq_msg_size(&part), zmq_msg_size(&part),
                     zmq_msg_more(&part));
            zmq_msg_close(&part);
        }
    }
    for (slot& s : slots) invalidate(s);
    const int zero = 0;
    for (void* sock : {dirs[0].from, dirs[0].to, scratch[0], scratch[1], scratch[2]}) {
        if (!sock) continue;
        zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero);
        STRIX_FUZZ_CHECK(zmq_close(sock) == 0);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static unsigned long inputs = 0;
    const std::string endpoint = "inproc://zmq-api-fuzz-" + std::to_string(++inputs);
    run r;
    for (slot& s : r.slots) std::memset(&s.msg, 0, sizeof s.msg);  // "never initialised": zeroed
    r.in.in = strix::fuzz::as_bytes(data, size);
    void* a = make_socket(ZMQ_PAIR);
    void* b = make_socket(ZMQ_PAIR);
    STRIX_FUZZ_CHECK(a && b && zmq_bind(a, endpoint.c_str()) == 0 && zmq_connect(b, endpoint.c_str()) == 0);
    r.dirs[0].from = r.dirs[1].to = a;
    r.dirs[0].to = r.dirs[1].from = b;
    for (int ops = 0; ops < 256 && !r.in.in.empty(); ++ops) {
        const std::uint8_t op = r.in.u8();
        switch (op & 3) {
            case 0: r.msg_op(static_cast<std::uint8_t>(op >> 2)); break;
            case 1: r.send_op(static_cast<std::uint8_t>(op >> 2)); break;
            case 2: r.recv_op(static_cast<std::uint8_t>(op >> 2)); break;
            default: r.option_op(static_cast<std::uint8_t>(op >> 2));
        }
    }
    r.finish();
    return 0;
}
