// strix-link-curve-thr: PUSH -> PULL throughput over tcp loopback with CURVE, strix::link or
// libzmq, in one process so one command line compares the two:
//
//   strix-link-curve-thr strix|zmq <message-size> <message-count>
//
// strix: the PULL (CURVE server) on shard 0, the PUSH (client) on shard 1, each shard a thread.
// zmq:   the PULL and the PUSH in two contexts of one I/O thread each, each driven by its own
//        application thread (libzmq's local_thr and remote_thr, in one process).
// The clock runs from the first message received to the last. Every message carries its
// sequence number in its first 8 bytes (fewer when smaller) and the receiver checks each one:
// a lost or reordered message fails the run (exit 1). Prints "<impl> <size> <count> <msg/s>".
#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>
#include <strix/link/security.hpp>
#include <strix/link/socket.hpp>

#include <zmq.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace {

using clk = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& why) {
    std::fprintf(stderr, "strix-link-curve-thr: %s\n", why.c_str());
    std::_Exit(1);
}

void stamp(std::byte* p, std::size_t size, std::uint64_t seq) {
    std::memcpy(p, &seq, std::min<std::size_t>(size, 8));
}

void check(const void* p, std::size_t got, std::size_t size, std::uint64_t seq) {
    std::uint64_t v = 0, want = seq;
    const std::size_t n = std::min<std::size_t>(size, 8);
    if (got != size) die("message " + std::to_string(seq) + " has " + std::to_string(got) + " bytes");
    std::memcpy(&v, p, n);
    if (n < 8) want &= (std::uint64_t{1} << (8 * n)) - 1;
    if (v != want) die("message " + std::to_string(seq) + " is out of order");
}

double run_strix(std::size_t size, std::uint64_t count, const strix::link::curve_keypair& server,
                 const strix::link::curve_keypair& client) {
    strix::engine_config cfg;
    cfg.shards = 2;
    cfg.pin_threads = false;
    strix::engine eng(cfg);
    strix::link::socket_options so;
    so.security.curve_server = true;
    so.security.curve_secretkey = server.secret_z85();
    so.max_msg_size = std::max(so.max_msg_size, size);
    strix::link::socket_options co;
    co.security.curve_secretkey = client.secret_z85();
    co.security.curve_serverkey = server.public_z85();
    co.max_msg_size = so.max_msg_size;

    std::unique_ptr<strix::link::socket> pull, push;
    std::uint64_t got = 0, sent = 0;
    clk::time_point first, last;
    std::vector<std::byte> buf(size);
    std::function<void()> pump;
    eng.start();
    const std::string addr = eng.run_on(0, [&] {
        pull = std::make_unique<strix::link::socket>(eng.at(0), strix::link::socket_type::pull, so);
        pull->on_message([&](strix::link::message_view m) {
            check(m[0].data(), m[0].size(), size, got);
            if (got == 0) first = clk::now();
            if (++got == count) {
                last = clk::now();
                eng.stop();
            }
        });
        return pull->bind("tcp://127.0.0.1:*");
    });
    eng.run_on(1, [&] {
        push = std::make_unique<strix::link::socket>(eng.at(1), strix::link::socket_type::push, co);
        pump = [&] {
            for (int k = 0; k < 4096 && sent < count; ++k) {
                stamp(buf.data(), size, sent);
                const auto ec = push->send(strix::link::bytes_view(buf));
                if (ec == strix::link::link_errc::would_block) return;  // on_writable resumes
                if (ec) die("send: " + ec.message());
                ++sent;
            }
            if (sent < count) eng.at(1).post_local([&] { pump(); });
        };
        push->on_writable([&] { pump(); });
        push->connect(addr);
        pump();
    });
    eng.join();
    // The shards have exited: a socket is destroyed only on its running shard, so the two are
    // left to the process's end.
    (void)pull.release();
    (void)push.release();
    if (got != count) die("stopped after " + std::to_string(got) + " messages");
    return std::chrono::duration<double>(last - first).count();
}

void zcheck(int rc, const char* what) {
    if (rc != 0) die(std::string(what) + ": " + zmq_strerror(zmq_errno()));
}

double run_zmq(std::size_t size, std::uint64_t count, const strix::link::curve_keypair& server,
               const strix::link::curve_keypair& client) {
    void* rctx = zmq_ctx_new();
    void* sctx = zmq_ctx_new();
    void* pull = zmq_socket(rctx, ZMQ_PULL);
    const int one = 1;
    const std::string ssec = server.secret_z85(), spub = server.public_z85();
    const std::string csec = client.secret_z85(), cpub = client.public_z85();
    zcheck(zmq_setsockopt(pull, ZMQ_CURVE_SERVER, &one, sizeof one), "ZMQ_CURVE_SERVER");
    zcheck(zmq_setsockopt(pull, ZMQ_CURVE_SECRETKEY, ssec.data(), ssec.size()), "ZMQ_CURVE_SECRETKEY");
    zcheck(zmq_bind(pull, "tcp://127.0.0.1:*"), "zmq_bind");
    char ep[256];
    size_t eplen = sizeof ep;
    zcheck(zmq_getsockopt(pull, ZMQ_LAST_ENDPOINT, ep, &eplen), "ZMQ_LAST_ENDPOINT");
    std::thread sender([&] {
        void* push = zmq_socket(sctx, ZMQ_PUSH);
        zcheck(zmq_setsockopt(push, ZMQ_CURVE_SERVERKEY, spub.data(), spub.size()), "ZMQ_CURVE_SERVERKEY");
        zcheck(zmq_setsockopt(push, ZMQ_CURVE_PUBLICKEY, cpub.data(), cpub.size()), "ZMQ_CURVE_PUBLICKEY");
        zcheck(zmq_setsockopt(push, ZMQ_CURVE_SECRETKEY, csec.data(), csec.size()), "ZMQ_CURVE_SECRETKEY");
        zcheck(zmq_connect(push, ep), "zmq_connect");
        std::vector<std::byte> buf(size);
        for (std::uint64_t i = 0; i < count; ++i) {
            stamp(buf.data(), size, i);
            if (zmq_send(push, buf.data(), size, 0) < 0) die("zmq_send");
        }
        const int linger = -1;
        zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(push);
    });
    zmq_msg_t m;
    zmq_msg_init(&m);
    clk::time_point first;
    for (std::uint64_t i = 0; i < count; ++i) {
        if (zmq_msg_recv(&m, pull, 0) < 0) die("zmq_msg_recv");
        if (i == 0) first = clk::now();
        check(zmq_msg_data(&m), zmq_msg_size(&m), size, i);
    }
    const auto last = clk::now();
    zmq_msg_close(&m);
    sender.join();
    zmq_close(pull);
    zmq_ctx_term(sctx);
    zmq_ctx_term(rctx);
    return std::chrono::duration<double>(last - first).count();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4 || (std::string(argv[1]) != "strix" && std::string(argv[1]) != "zmq")) {
        std::fprintf(stderr, "usage: strix-link-curve-thr strix|zmq <message-size> <message-count>\n");
        return 2;
    }
    if (!zmq_has("curve")) die("this libzmq has no CURVE (zmq_has(\"curve\") is 0)");
    const std::size_t size = std::strtoull(argv[2], nullptr, 10);
    const std::uint64_t count = std::strtoull(argv[3], nullptr, 10);
    if (count == 0) die("message-count must be at least 1");
    const auto server = strix::link::curve_keypair::generate();
    const auto client = strix::link::curve_keypair::generate();
    const bool strix = std::string(argv[1]) == "strix";
    const double s = strix ? run_strix(size, count, server, client) : run_zmq(size, count, server, client);
    std::printf("%s %zu %llu %.0f\n", argv[1], size, static_cast<unsigned long long>(count),
                static_cast<double>(count) / s);
    return 0;
}
