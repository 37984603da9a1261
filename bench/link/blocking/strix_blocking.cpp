// strix-link-blocking-*: the link perf tools' command lines, checks and output (../perf_common.hpp)
// on strix::link's blocking API: every send and receive is a blocking_socket call from an
// application thread, as in most ZeroMQ programs, against zmq-blocking-* (zmq_send/zmq_recv from
// application threads). One source, six tools: TOOL_ROLE (set by CMake) says which.
//
//   local-thr  <bind-to> <size> <count>      PULL: receives, checks, prints the throughput
//   remote-thr <connect-to> <size> <count>   PUSH: sends, closes (the linger delivers the rest)
//   local-lat  <bind-to> <size> <count>      REP: echoes each request
//   remote-lat <connect-to> <size> <count>   REQ: times each round trip, prints p50/p99
//   inproc-thr <size> <count>                both throughput halves, two threads, inproc://
//   inproc-lat <size> <count>                both latency halves, two threads, inproc://
//
// Each process has one context of one shard: its sockets' I/O runs there, the application's
// calls on the main thread (and a second thread for inproc).

#include "blocking_tool.hpp"

#include <strix/link/blocking.hpp>

#include <thread>

namespace lp = strix::link_perf;
using namespace strix::link;

namespace {

constexpr std::string_view role = lp::blocking_role;
constexpr auto patience = std::chrono::milliseconds(lp::timeout_ms);

// The libzmq tools' 30 s linger: what was sent is delivered, a dead peer cannot hold the process.
socket_options options() {
    socket_options o;
    o.linger = std::chrono::milliseconds(30000);
    return o;
}

const std::string tool_name = "strix-link-blocking-" + std::string(role);

std::string usage_text() {
    return lp::blocking_usage(tool_name,
                              "The " + std::string(role) +
                                  " half of libzmq's perf test on strix::link's blocking API (blocking_socket "
                                  "from application\nthreads), paired with zmq-blocking-" +
                                  std::string(role) + " (zmq_send/zmq_recv). Same lines as strix-link-" +
                                  std::string(role) + ".\n\n");
}

void receive_checked(const lp::tool& t, blocking_socket& s, std::size_t size, std::uint64_t seq, std::uint64_t count,
                     const std::string& what = "") {
    std::optional<message> m = s.recv(patience);
    if (!m) t.fail(what + lp::receive_timeout(seq, count));
    if (m->size() != 1)
        t.fail(what + "message " + std::to_string(seq) + " has " + std::to_string(m->size()) + " parts");
    const bytes_view b = (*m)[0].bytes();
    lp::check_message(t, b.data(), b.size(), size, seq, what);
}

void send_checked(const lp::tool& t, blocking_socket& s, bytes_view b, std::uint64_t seq, std::uint64_t count) {
    if (const std::error_code ec = s.send(b, patience)) {
        if (ec == link_errc::would_block) t.fail(lp::send_timeout(seq, count));
        t.fail("send: " + ec.message());
    }
}

double receive_all(const lp::tool& t, blocking_socket& s, std::size_t size, std::uint64_t count) {
    receive_checked(t, s, size, 0, count);
    const auto start = lp::perf_clock::now();
    for (std::uint64_t i = 1; i < count; ++i) receive_checked(t, s, size, i, count);
    return lp::seconds_between(start, lp::perf_clock::now());
}

void send_all(const lp::tool& t, blocking_socket& s, std::size_t size, std::uint64_t count) {
    std::vector<std::byte> buf(size);
    for (std::uint64_t i = 0; i < count; ++i) {
        lp::stamp(buf.data(), size, i);
        send_checked(t, s, buf, i, count);
    }
}

void echo_all(const lp::tool& t, blocking_socket& s, std::size_t size, std::uint64_t count) {
    for (std::uint64_t i = 0; i < count; ++i) {
        std::optional<message> m = s.recv(patience);
        if (!m) t.fail(lp::receive_timeout(i, count));
        const bytes_view b = m->empty() ? bytes_view() : (*m)[0].bytes();
        lp::check_message(t, b.data(), b.size(), size, i, "");
        if (const std::error_code ec = s.send(*m, patience)) t.fail("send: " + ec.message());
    }
}

lp::roundtrips request_all(const lp::tool& t, blocking_socket& s, std::size_t size, std::uint64_t count) {
    return lp::timed_round_trips(size, count, [&](const std::vector<std::byte>& buf, std::uint64_t i) {
        send_checked(t, s, buf, i, count);
        receive_checked(t, s, size, i, count, "reply: ");
    });
}

}  // namespace

int main(int argc, char** argv) {
    const std::string usage = usage_text();
    const lp::tool t(tool_name, usage);
    const auto [endpoint, size, count] = lp::parse_blocking(t, argc, argv, "inproc://strix-link-blocking");
    try {
        context ctx(1);
        if (role == "local-thr") {
            blocking_socket s(ctx, socket_type::pull, options());
            s.bind(endpoint);
            const double seconds = receive_all(t, s, size, count);
            lp::print_thr(size, count, seconds);
        } else if (role == "remote-thr") {
            blocking_socket s(ctx, socket_type::push, options());
            s.connect(endpoint);
            send_all(t, s, size, count);
        } else if (role == "local-lat") {
            blocking_socket s(ctx, socket_type::rep, options());
            s.bind(endpoint);
            echo_all(t, s, size, count);
        } else if (role == "remote-lat") {
            blocking_socket s(ctx, socket_type::req, options());
            s.connect(endpoint);
            lp::print_lat(size, count, request_all(t, s, size, count));
        } else if (role == "inproc-thr") {
            blocking_socket in(ctx, socket_type::pull, options());
            in.bind(endpoint);
            std::thread sender([&] {
                blocking_socket out(ctx, socket_type::push, options());
                out.connect(endpoint);
                send_all(t, out, size, count);
            });
            const double seconds = receive_all(t, in, size, count);
            sender.join();
            lp::print_thr(size, count, seconds);
        } else if (role == "inproc-lat") {
            blocking_socket rep(ctx, socket_type::rep, options());
            rep.bind(endpoint);
            std::thread echo([&] { echo_all(t, rep, size, count); });
            blocking_socket req(ctx, socket_type::req, options());
            req.connect(endpoint);
            const lp::roundtrips r = request_all(t, req, size, count);
            echo.join();
            lp::print_lat(size, count, r);
        }
    } catch (const std::exception& e) {
        t.fail(e.what());
    }
    return 0;
}
