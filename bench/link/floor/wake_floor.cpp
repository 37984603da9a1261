// wake-floor-lat: the least a round trip between two sleeping threads costs on this machine, with
// no messaging library. Two threads of one process pass a message back and forth, each sleeping
// in read() until the other writes:
//   inproc  a token through two eventfds (the wake-ups alone)
//   tcp     <message-size> bytes over a loopback TCP connection (TCP_NODELAY)
//   ipc     <message-size> bytes over a Unix stream socket pair
// strix's round trips (two shards, or two processes' shards) and libzmq's (application threads
// and their I/O threads) all do this and more, so bench-link.sh runs it beside them as the floor.
// The two threads are pinned to two different CPUs (the first two this process may use): left to
// the scheduler they sometimes share one, and a wake-up on the same CPU costs a tenth of one on
// another (3.6 us against 40-46 us per round trip on a 2-vCPU VM), which made the floor bimodal;
// the libraries' threads in these runs sit on different CPUs nearly always. With one CPU allowed,
// nothing is pinned. Printed with the perf tools' lines.
#include "../perf_common.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace lp = strix::link_perf;

static const std::string usage =
    "usage: wake-floor-lat <inproc|tcp|ipc> <message-size> <roundtrip-count>\n"
    "\n"
    "The floor of a round trip between two sleeping threads, no messaging library: the main\n"
    "thread sends and sleeps until the answer comes; a second thread sleeps until the message\n"
    "comes and sends it back. inproc passes a token through two eventfds (<message-size> is not\n"
    "sent), tcp sends <message-size> bytes over a loopback TCP connection (TCP_NODELAY), ipc over\n"
    "a Unix stream socket pair. The two threads are pinned to two different CPUs (the first two\n"
    "allowed). <roundtrip-count> round trips, each timed alone. Prints the latency\n"
    "tools' lines ('average latency' is half a round trip; p50 and p99 whole round trips).\n"
    "Exit status: 0 done, 1 failed run, 2 wrong arguments.\n";

namespace {

bool read_exact(int fd, std::byte* p, std::size_t n) {
    while (n > 0) {
        const ssize_t r = ::read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

bool write_all(int fd, const std::byte* p, std::size_t n) {
    while (n > 0) {
        const ssize_t r = ::write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

// The two ends (main thread's, answering thread's) of a loopback TCP connection.
std::pair<int, int> tcp_pair(const lp::tool& t) {
    const int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (l < 0 || ::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 1) != 0 ||
        ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) != 0)
        t.fail(std::string("listen: ") + std::strerror(errno));
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0 || ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
        t.fail(std::string("connect: ") + std::strerror(errno));
    const int s = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    if (s < 0) t.fail(std::string("accept: ") + std::strerror(errno));
    ::close(l);
    const int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return {c, s};
}

// Pins the calling thread to the n-th CPU this process may use; false when there is none.
bool pin_to(std::size_t n) {
    cpu_set_t allowed;
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
    std::size_t seen = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed)) continue;
        if (seen++ != n) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        return ::pthread_setaffinity_np(::pthread_self(), sizeof one, &one) == 0;
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    const lp::tool t("wake-floor-lat", usage);
    const lp::parsed_args a = t.parse(argc, argv, 3, false);
    const std::string transport = a.positional[0];
    const std::size_t size = t.message_size(a.positional[1]);
    const std::uint64_t count = t.message_count(a.positional[2], "roundtrip-count");

    // main -> other on out[0]/in[1], other -> main on out[1]/in[0].
    int mine = -1, theirs = -1;  // socket ends; for inproc, the two eventfds
    std::size_t bytes = size;
    if (transport == "inproc") {
        mine = ::eventfd(0, EFD_CLOEXEC);
        theirs = ::eventfd(0, EFD_CLOEXEC);
        if (mine < 0 || theirs < 0) t.fail(std::string("eventfd: ") + std::strerror(errno));
        bytes = sizeof(std::uint64_t);
    } else if (transport == "tcp") {
        std::tie(mine, theirs) = tcp_pair(t);
    } else if (transport == "ipc") {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
            t.fail(std::string("socketpair: ") + std::strerror(errno));
        mine = sv[0];
        theirs = sv[1];
    } else {
        t.usage_error("transport '" + transport + "': inproc, tcp or ipc");
    }
    if (bytes == 0) t.usage_error("message-size 0: nothing would wake the other thread");
    const bool token = transport == "inproc";
    // inproc: main writes `theirs` (the other thread reads it) and reads `mine`.
    const int main_out = token ? theirs : mine, main_in = mine;
    const int other_in = theirs, other_out = token ? mine : theirs;

    cpu_set_t allowed;
    const bool pin = ::sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) >= 2;
    std::thread other([&] {
        if (pin && !pin_to(1)) t.fail("cannot pin the answering thread");
        std::vector<std::byte> buf(bytes);
        for (std::uint64_t i = 0; i < count; ++i) {
            if (!read_exact(other_in, buf.data(), bytes)) t.fail("answering thread: read failed");
            if (token) {
                const std::uint64_t one = 1;
                std::memcpy(buf.data(), &one, sizeof one);
            }
            if (!write_all(other_out, buf.data(), bytes)) t.fail("answering thread: write failed");
        }
    });
    if (pin && !pin_to(0)) t.fail("cannot pin the main thread");
    std::vector<std::byte> buf(bytes);
    if (token) {
        const std::uint64_t one = 1;
        std::memcpy(buf.data(), &one, sizeof one);
    }
    lp::roundtrips r;
    r.us.reserve(static_cast<std::size_t>(count));
    const auto start = lp::perf_clock::now();
    for (std::uint64_t i = 0; i < count; ++i) {
        const auto t0 = lp::perf_clock::now();
        if (!write_all(main_out, buf.data(), bytes) || !read_exact(main_in, buf.data(), bytes))
            t.fail(std::string("round trip ") + std::to_string(i) + " failed");
        if (token) {
            const std::uint64_t one = 1;
            std::memcpy(buf.data(), &one, sizeof one);
        }
        r.us.push_back(lp::seconds_between(t0, lp::perf_clock::now()) * 1e6);
    }
    r.total_seconds = lp::seconds_between(start, lp::perf_clock::now());
    other.join();
    lp::print_lat(size, count, r);
    return 0;
}
