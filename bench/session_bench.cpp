// The Apex Core report's Session Echo (§10): the whole path over loopback TCP, one message in flight.
//
//   Session_EchoRoundTrip/N   a real strix::server (one shard, not pinned, strix header framing,
//       default limits) whose handler sends every frame back (session::send); the client is a
//       blocking socket (TCP_NODELAY) in the benchmark thread. One iteration: write one frame
//       (12-byte strix header + N-byte body, no CRC), read the echo, compare every byte. The
//       body starts with the iteration number, so a stale or repeated echo fails the check.
//       Time is wall time per round trip; bytes processed count one frame one way, as Apex
//       Core's MB/s do.
//
// With STRIX_BENCH_FAULT=echo the server corrupts an echo now and then: the smoke test's proof
// that the check works (fault_injection.hpp).
//
// Server and client share the machine's cores (here two), as Apex Core's did on its one machine.
// Runs once per poller backend (bench_backends.hpp).
#include "bench_backends.hpp"
#include "fault_injection.hpp"

#include <strix/codec/frame_codec.hpp>
#include <strix/core/engine.hpp>
#include <strix/net/server.hpp>

#include <benchmark/benchmark.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using strix_bench::bench_backend;

class echo_handler final : public strix::session_handler {
public:
    void on_frame(strix::session& s, std::span<const std::byte> frame) override {
        if (corrupt_ && ++frames_ % 64 == 1) {  // the smoke test's fault (fault_injection.hpp)
            std::vector<std::byte> bad(frame.begin(), frame.end());
            bad.back() ^= std::byte{1};
            s.send(bad);
            return;
        }
        s.send(frame);
    }

private:
    const bool corrupt_ = strix_bench::fault_injected("echo");
    std::uint64_t frames_ = 0;
};

// A blocking loopback client; closes its socket when destroyed.
class echo_client {
public:
    explicit echo_client(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
        if (fd_ < 0) return;
        const int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) close_fd();
    }
    ~echo_client() { close_fd(); }
    echo_client(const echo_client&) = delete;
    echo_client& operator=(const echo_client&) = delete;

    bool connected() const noexcept { return fd_ >= 0; }

    bool write_all(std::span<const std::byte> b) noexcept {
        while (!b.empty()) {
            const ssize_t n = ::send(fd_, b.data(), b.size(), MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            b = b.subspan(static_cast<std::size_t>(n));
        }
        return true;
    }

    bool read_all(std::span<std::byte> b) noexcept {
        while (!b.empty()) {
            const ssize_t n = ::recv(fd_, b.data(), b.size(), 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            b = b.subspan(static_cast<std::size_t>(n));
        }
        return true;
    }

private:
    void close_fd() noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    int fd_;
};

void session_echo_round_trip(benchmark::State& state, const bench_backend& be) {
    const auto body_size = static_cast<std::size_t>(state.range(0));
    strix::engine_config ec;
    ec.shards = 1;
    ec.pin_threads = false;
    be.configure(ec);
    strix::engine eng(ec);
    strix::server_config sc;
    sc.port = 0;
    sc.framing = &strix::strix_header_framer();
    strix::server srv(eng, sc, [](strix::shard&) { return std::make_unique<echo_handler>(); });
    srv.start();
    eng.start();

    std::vector<std::byte> body(body_size);
    for (std::size_t i = 0; i < body_size; ++i) body[i] = static_cast<std::byte>(i * 7 + 3);
    std::vector<std::byte> frame(strix::frame_header_size + body_size);
    std::vector<std::byte> echo(frame.size());
    std::uint64_t round_trips = 0;
    {
        echo_client client(srv.port());
        if (!client.connected()) state.SkipWithError("cannot connect to the echo server");
        for (auto _ : state) {
            if (!client.connected()) break;
            std::memcpy(body.data(), &round_trips, std::min(body_size, sizeof round_trips));
            strix::encode_frame(frame, 1, body, false);
            if (!client.write_all(frame) || !client.read_all(echo)) {
                state.SkipWithError("the connection failed");
                break;
            }
            if (std::memcmp(echo.data(), frame.data(), frame.size()) != 0) {
                state.SkipWithError("the echo differs from the frame sent");
                break;
            }
            ++round_trips;
        }
    }
    eng.stop();
    eng.join();
    state.SetLabel(be.name);
    state.SetItemsProcessed(static_cast<std::int64_t>(round_trips));
    state.SetBytesProcessed(static_cast<std::int64_t>(round_trips * frame.size()));
}

const bool registered = [] {
    for (const bench_backend& be : strix_bench::bench_backends) {
        benchmark::RegisterBenchmark(be.family("Session_EchoRoundTrip").c_str(),
                                     [&be](benchmark::State& st) { session_echo_round_trip(st, be); })
            ->Arg(64)
            ->Arg(512)
            ->Arg(4096)
            ->UseRealTime();
    }
    return true;
}();

}  // namespace
