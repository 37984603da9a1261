// strix-link-curve-thr: PUSH -> PULL throughput over tcp loopback with CURVE, strix::link or
// libzmq, in one process so one command line compares the two:
//
//   strix-link-curve-thr strix|zmq <message-size> <message-count>
//
// strix: the PULL (CURVE server) on shard 0, the PUSH (client) on shard 1, each shard a thread.
// zmq:   the PULL and the PUSH in two contexts of one I/O thread each, each driven by its own
//        application thread (libzmq's local_thr and remote_thr, in one process).
// The clock runs from the first message received to the last. Every message carries its
// sequence number (../perf_common.hpp's stamp) and the receiver checks each one's size and
// number: a lost or reordered message fails the run (exit 1). Prints libzmq's local_thr lines,
// as every other throughput tool does (print_thr).
#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>

#include "../strix/strix_perf.hpp"
#include "curve_perf.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace lp = strix::link_perf;
namespace lc = strix::link_perf::curve;

const std::string usage =
    std::string("usage: strix-link-curve-thr strix|zmq <message-size> <message-count>\n"
                "\n"
                "The throughput test with CURVE (a fresh server and client key pair per run) inside\n"
                "one process over tcp loopback: a PULL socket (the CURVE server) binds 127.0.0.1, a PUSH\n"
                "socket (the client) connects and sends <message-count> messages of <message-size>\n"
                "bytes. strix: PULL on shard 0, PUSH on shard 1 of one engine. zmq: PULL and PUSH on two\n"
                "threads, in two contexts of one I/O thread each. Prints strix-link-local-thr's lines\n"
                "(the receiver's count over the time from its first message to its last).\n"
                "\n") +
    std::string(lp::contract_help);

double run_strix(const lp::tool& t, const lc::keys& k, std::size_t size, std::uint64_t count) {
    strix::engine eng(lp::engine_for(2));
    const strix::link::socket_options so = lc::options_with(lc::server_security(k), size);
    const strix::link::socket_options co = lc::options_with(lc::client_security(k), size);

    std::unique_ptr<strix::link::socket> pull, push;
    std::uint64_t got = 0, sent = 0;
    lp::perf_clock::time_point first, last;
    std::vector<std::byte> buf(size);
    std::function<void()> pump;
    eng.start();
    const std::string addr = eng.run_on(0, [&] {
        pull = std::make_unique<strix::link::socket>(eng.at(0), strix::link::socket_type::pull, so);
        pull->on_message([&](strix::link::message_view m) {
            if (m.size() != 1) t.fail("message " + std::to_string(got) + " has " + std::to_string(m.size()) + " parts");
            lp::check_message(t, m[0].data(), m[0].size(), size, got);
            if (got == 0) first = lp::perf_clock::now();
            if (++got == count) {
                last = lp::perf_clock::now();
                eng.stop();
            }
        });
        return pull->bind(lc::bind_endpoint);
    });
    eng.run_on(1, [&] {
        push = std::make_unique<strix::link::socket>(eng.at(1), strix::link::socket_type::push, co);
        pump = [&] {
            for (int n = 0; n < 4096 && sent < count; ++n) {
                lp::stamp(buf.data(), size, sent);
                const auto ec = push->send(strix::link::bytes_view(buf));
                if (ec == strix::link::link_errc::would_block) return;  // on_writable resumes
                if (ec) t.fail("send: " + ec.message());
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
    if (got != count)
        t.fail("the engine stopped after " + std::to_string(got) + " of " + std::to_string(count) + " messages");
    return lp::seconds_between(first, last);
}

double run_zmq(const lp::tool& t, const lc::keys& k, std::size_t size, std::uint64_t count) {
    void* rctx = zmq_ctx_new();
    void* sctx = zmq_ctx_new();
    void* pull = zmq_socket(rctx, ZMQ_PULL);
    lc::zmq_curve_server(t, pull, k);
    if (zmq_bind(pull, lc::bind_endpoint) != 0) t.fail(std::string("zmq_bind: ") + zmq_strerror(zmq_errno()));
    char ep[256];
    size_t eplen = sizeof ep;
    if (zmq_getsockopt(pull, ZMQ_LAST_ENDPOINT, ep, &eplen) != 0) {
        t.fail(std::string("ZMQ_LAST_ENDPOINT: ") + zmq_strerror(zmq_errno()));
    }
    std::thread sender([&] {
        void* push = zmq_socket(sctx, ZMQ_PUSH);
        lc::zmq_curve_client(t, push, k);
        if (zmq_connect(push, ep) != 0) t.fail(std::string("zmq_connect: ") + zmq_strerror(zmq_errno()));
        std::vector<std::byte> buf(size);
        for (std::uint64_t i = 0; i < count; ++i) {
            lp::stamp(buf.data(), size, i);
            if (zmq_send(push, buf.data(), size, 0) < 0) t.fail(std::string("zmq_send: ") + zmq_strerror(zmq_errno()));
        }
        const int linger = -1;
        zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(push);
    });
    zmq_msg_t m;
    zmq_msg_init(&m);
    lp::perf_clock::time_point first;
    for (std::uint64_t i = 0; i < count; ++i) {
        if (zmq_msg_recv(&m, pull, 0) < 0) t.fail(std::string("zmq_msg_recv: ") + zmq_strerror(zmq_errno()));
        if (i == 0) first = lp::perf_clock::now();
        if (zmq_msg_more(&m)) t.fail("message " + std::to_string(i) + " has more than 1 part");
        lp::check_message(t, zmq_msg_data(&m), zmq_msg_size(&m), size, i);
    }
    const auto last = lp::perf_clock::now();
    zmq_msg_close(&m);
    sender.join();
    zmq_close(pull);
    zmq_ctx_term(sctx);
    zmq_ctx_term(rctx);
    return lp::seconds_between(first, last);
}

}  // namespace

int main(int argc, char** argv) {
    const lp::tool t("strix-link-curve-thr", usage);
    const lc::command c = lc::parse_command(t, argc, argv, "message-count");
    const lc::keys k;
    const double s = c.lib == lc::impl::strix ? run_strix(t, k, c.size, c.count) : run_zmq(t, k, c.size, c.count);
    lp::print_thr(c.size, c.count, s);
    return 0;
}
