// zmq-blocking-*: the libzmq half of the blocking-API family: libzmq's zmq_send and zmq_recv
// (bytes in, bytes out) from application threads, with the command lines, checks and output of
// ../perf_common.hpp, against strix-link-blocking-*. One source, six tools: TOOL_ROLE (set by
// CMake) says which.
//
//   local-thr  <bind-to> <size> <count>      PULL: zmq_recv, check, print the throughput
//   remote-thr <connect-to> <size> <count>   PUSH: zmq_send, close (the linger delivers the rest)
//   local-lat  <bind-to> <size> <count>      REP: echoes each request
//   remote-lat <connect-to> <size> <count>   REQ: times each round trip, prints p50/p99
//   inproc-thr <size> <count>                both throughput halves, two threads, inproc://
//   inproc-lat <size> <count>                both latency halves, two threads, inproc://
//
// One context per process with libzmq's default single I/O thread.

#include "../zmq/zmq_perf.hpp"
#include "blocking_tool.hpp"

#include <thread>

namespace lp = strix::link_perf;

namespace {

constexpr std::string_view role = lp::blocking_role;

const std::string tool_name = "zmq-blocking-" + std::string(role);

std::string usage_text() {
    return lp::blocking_usage(tool_name, "The " + std::string(role) +
                                             " half of libzmq's perf test with zmq_send/zmq_recv from application\n"
                                             "threads, paired with strix-link-blocking-" +
                                             std::string(role) + ". Same lines as zmq-" + std::string(role) + ".\n\n");
}

// Receives message `seq` into buf (sized for one more byte than expected, so a longer message
// shows) and checks it.
void bytes_receive_checked(const lp::tool& t, void* s, std::vector<std::byte>& buf, std::size_t size, std::uint64_t seq,
                           std::uint64_t count, const std::string& what = "") {
    int n;
    while ((n = zmq_recv(s, buf.data(), buf.size(), 0)) == -1) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) t.fail(what + lp::receive_timeout(seq, count));
        t.fail(what + "zmq_recv: " + zmq_strerror(errno));
    }
    lp::check_message(t, buf.data(), static_cast<std::size_t>(n), size, seq, what);
}

void bytes_send_checked(const lp::tool& t, void* s, const std::vector<std::byte>& buf, std::size_t size,
                        std::uint64_t seq, std::uint64_t count) {
    while (zmq_send(s, buf.data(), size, 0) == -1) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) t.fail(lp::send_timeout(seq, count));
        t.fail(std::string("zmq_send: ") + zmq_strerror(errno));
    }
}

double bytes_receive_all(const lp::tool& t, void* s, std::size_t size, std::uint64_t count) {
    std::vector<std::byte> buf(size + 1);
    bytes_receive_checked(t, s, buf, size, 0, count);
    const auto start = lp::perf_clock::now();
    for (std::uint64_t i = 1; i < count; ++i) bytes_receive_checked(t, s, buf, size, i, count);
    return lp::seconds_between(start, lp::perf_clock::now());
}

void bytes_send_all(const lp::tool& t, void* s, std::size_t size, std::uint64_t count) {
    std::vector<std::byte> buf(size);
    for (std::uint64_t i = 0; i < count; ++i) {
        lp::stamp(buf.data(), size, i);
        bytes_send_checked(t, s, buf, size, i, count);
    }
}

void bytes_echo_all(const lp::tool& t, void* s, std::size_t size, std::uint64_t count) {
    std::vector<std::byte> buf(size + 1);
    for (std::uint64_t i = 0; i < count; ++i) {
        bytes_receive_checked(t, s, buf, size, i, count);
        bytes_send_checked(t, s, buf, size, i, count);
    }
}

lp::roundtrips bytes_request_all(const lp::tool& t, void* s, std::size_t size, std::uint64_t count) {
    std::vector<std::byte> in(size + 1);
    return lp::timed_round_trips(size, count, [&](const std::vector<std::byte>& out, std::uint64_t i) {
        bytes_send_checked(t, s, out, size, i, count);
        bytes_receive_checked(t, s, in, size, i, count, "reply: ");
    });
}

}  // namespace

int main(int argc, char** argv) {
    const std::string usage = usage_text();
    const lp::tool t(tool_name, usage);
    const auto [endpoint, size, count] = lp::parse_blocking(t, argc, argv, "inproc://strix-link-blocking");

    lp::zcontext ctx(t);
    if (role == "local-thr") {
        lp::zsocket s(t, ctx, ZMQ_PULL);
        s.bind(endpoint);
        lp::print_thr(size, count, bytes_receive_all(t, s.get(), size, count));
    } else if (role == "remote-thr") {
        lp::zsocket s(t, ctx, ZMQ_PUSH);
        s.connect(endpoint);
        bytes_send_all(t, s.get(), size, count);
    } else if (role == "local-lat") {
        lp::zsocket s(t, ctx, ZMQ_REP);
        s.bind(endpoint);
        bytes_echo_all(t, s.get(), size, count);
    } else if (role == "remote-lat") {
        lp::zsocket s(t, ctx, ZMQ_REQ);
        s.connect(endpoint);
        lp::print_lat(size, count, bytes_request_all(t, s.get(), size, count));
    } else if (role == "inproc-thr") {
        double seconds = 0;
        {
            lp::zsocket in(t, ctx, ZMQ_PULL);
            in.bind(endpoint);
            std::thread sender([&] {
                lp::zsocket out(t, ctx, ZMQ_PUSH);
                out.connect(endpoint);
                bytes_send_all(t, out.get(), size, count);
            });
            seconds = bytes_receive_all(t, in.get(), size, count);
            sender.join();
        }
        lp::print_thr(size, count, seconds);
    } else if (role == "inproc-lat") {
        lp::roundtrips r;
        {
            lp::zsocket rep(t, ctx, ZMQ_REP);
            rep.bind(endpoint);
            std::thread echo([&] { bytes_echo_all(t, rep.get(), size, count); });
            lp::zsocket req(t, ctx, ZMQ_REQ);
            req.connect(endpoint);
            r = bytes_request_all(t, req.get(), size, count);
            echo.join();
        }
        lp::print_lat(size, count, r);
    }
    return 0;
}
