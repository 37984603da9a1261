// strix-tls-flood: a handshake flood from one address against a TLS port, for measuring what it
// does to everyone else (scripts/tls-flood.sh runs a chat workload beside it).
//
//   --stalled N  connections that open a handshake and stall: each sends the first bytes of a
//                ClientHello and nothing more; one the server closes (its timeout, or a cap) is
//                opened again --reopen-ms later (0: at once, a connection storm), so N attempts
//                stay in flight for the whole run.
//   --rate R     new full handshakes per second (each: handshake, close_notify, close), from a
//                thread of their own, counted as completed, refused (closed before or during the
//                handshake) or failed otherwise.
// Every connection is bound to --source (default 127.0.0.254) so that the server sees one address.
// Prints one summary line and, with --json, writes the counts.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 0;
    std::string source = "127.0.0.254";  // not one strix-chat-load uses (127.0.0.1, .2, ...)
    unsigned stalled = 2000;
    unsigned rate = 200;
    double duration = 10;
    unsigned reopen_ms = 1000;
    std::string ca;
    std::string json;
};

// A non-blocking TCP connection from opt.source; -1 on failure.
int open_from(const options& o, bool blocking) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (blocking ? 0 : SOCK_NONBLOCK), 0);
    if (fd < 0) return -1;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    // Closed with a reset: tens of thousands of short connections from one address must not
    // exhaust its ports in TIME_WAIT.
    linger lg{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    ::inet_pton(AF_INET, o.source.c_str(), &src.sin_addr);
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(o.port);
    ::inet_pton(AF_INET, o.host.c_str(), &dst.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) < 0 ||
        (::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) < 0 && errno != EINPROGRESS)) {
        ::close(fd);
        return -1;
    }
    return fd;
}

struct counts {
    std::atomic<std::uint64_t> stalled_opened{0}, stalled_closed_by_server{0}, open_failures{0};
    std::atomic<std::uint64_t> hs_completed{0}, hs_refused{0}, hs_failed{0};
};

// The first 9 bytes of a TLS 1.2-framed ClientHello (record header and handshake header) that
// announce 512 bytes which never come.
constexpr unsigned char hello_start[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc};

void stall_loop(const options& o, counts& c, clock_type::time_point end) {
    int ep = ::epoll_create1(EPOLL_CLOEXEC);
    auto open_one = [&] {
        int fd = open_from(o, false);
        if (fd < 0) {
            ++c.open_failures;
            return;
        }
        epoll_event ev{};
        ev.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
        ev.data.fd = fd;
        ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        ++c.stalled_opened;
    };
    for (unsigned i = 0; i < o.stalled; ++i) open_one();
    std::vector<epoll_event> evs(1024);
    std::deque<clock_type::time_point> reopen;  // when each closed slot opens again
    while (clock_type::now() < end) {
        const auto now = clock_type::now();
        while (!reopen.empty() && reopen.front() <= now) {
            reopen.pop_front();
            open_one();
        }
        const int n = ::epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 10);
        for (int i = 0; i < n; ++i) {
            const int fd = evs[static_cast<std::size_t>(i)].data.fd;
            const auto e = evs[static_cast<std::size_t>(i)].events;
            if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                // The server closed it (timeout or cap): open another in its place.
                ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
                ::close(fd);
                ++c.stalled_closed_by_server;
                if (o.reopen_ms == 0)
                    open_one();
                else
                    reopen.push_back(clock_type::now() + std::chrono::milliseconds(o.reopen_ms));
                continue;
            }
            if (e & EPOLLOUT) {  // connected: start the ClientHello, then wait for the close
                (void)!::send(fd, hello_start, sizeof hello_start, MSG_NOSIGNAL);
                epoll_event ev{};
                ev.events = EPOLLIN | EPOLLRDHUP;
                ev.data.fd = fd;
                ::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
            }
        }
    }
    ::close(ep);  // the stalled connections close with the process
}

void handshake_loop(const options& o, counts& c, clock_type::time_point end) {
    if (o.rate == 0) return;
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    if (!o.ca.empty()) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
        SSL_CTX_load_verify_locations(ctx, o.ca.c_str(), nullptr);
    }
    const auto period = std::chrono::nanoseconds(1'000'000'000 / o.rate);
    auto next = clock_type::now();
    while (clock_type::now() < end) {
        std::this_thread::sleep_until(next);
        next += period;
        int fd = open_from(o, true);
        if (fd < 0) {
            ++c.open_failures;
            continue;
        }
        timeval tv{2, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        SSL* ssl = SSL_new(ctx);
        SSL_set_fd(ssl, fd);
        ERR_clear_error();
        const int r = SSL_connect(ssl);
        if (r == 1) {
            ++c.hs_completed;
            SSL_shutdown(ssl);
        } else {
            const int e = SSL_get_error(ssl, r);
            // Closed by the server before answering (the handshake cap) or a reset.
            if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN)
                ++c.hs_refused;
            else
                ++c.hs_failed;
        }
        SSL_free(ssl);
        ::close(fd);
    }
    SSL_CTX_free(ctx);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"strix-tls-flood: stalled TLS handshakes and a stream of new ones, from one address"};
    options o;
    app.add_option("--host", o.host, "server address")->capture_default_str();
    app.add_option("--port", o.port, "server TLS port")->required();
    app.add_option("--source", o.source, "local address every connection is bound to")->capture_default_str();
    app.add_option("--stalled", o.stalled, "handshakes kept open and stalled")->capture_default_str();
    app.add_option("--reopen-ms", o.reopen_ms,
                   "a stalled connection the server closed opens again this much later (0: at once)")
        ->capture_default_str();
    app.add_option("--rate", o.rate, "new full handshakes per second (0 = none)")->capture_default_str();
    app.add_option("--duration", o.duration, "seconds")->capture_default_str();
    app.add_option("--ca", o.ca, "verify the server against this CA file (default: no verification)");
    app.add_option("--json", o.json, "write the counts to this file");
    CLI11_PARSE(app, argc, argv);

    counts c;
    const auto end =
        clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.duration));
    std::thread hs([&] { handshake_loop(o, c, end); });
    stall_loop(o, c, end);
    hs.join();
    const double hs_per_s = static_cast<double>(c.hs_completed) / o.duration;
    std::printf("strix-tls-flood: %u stalled handshakes from %s for %.0f s: %llu opened, %llu closed by the server; "
                "new handshakes at %u/s: %llu completed (%.0f/s), %llu refused, %llu failed; %llu connects failed\n",
                o.stalled, o.source.c_str(), o.duration, static_cast<unsigned long long>(c.stalled_opened),
                static_cast<unsigned long long>(c.stalled_closed_by_server), o.rate,
                static_cast<unsigned long long>(c.hs_completed), hs_per_s,
                static_cast<unsigned long long>(c.hs_refused), static_cast<unsigned long long>(c.hs_failed),
                static_cast<unsigned long long>(c.open_failures));
    if (!o.json.empty()) {
        if (FILE* f = std::fopen(o.json.c_str(), "w")) {
            std::fprintf(
                f,
                "{\"stalled\": %u, \"rate\": %u, \"duration_s\": %.1f, \"stalled_opened\": %llu, "
                "\"stalled_closed_by_server\": %llu, \"handshakes_completed\": %llu, \"handshakes_refused\": %llu, "
                "\"handshakes_failed\": %llu, \"connect_failures\": %llu}\n",
                o.stalled, o.rate, o.duration, static_cast<unsigned long long>(c.stalled_opened),
                static_cast<unsigned long long>(c.stalled_closed_by_server),
                static_cast<unsigned long long>(c.hs_completed), static_cast<unsigned long long>(c.hs_refused),
                static_cast<unsigned long long>(c.hs_failed), static_cast<unsigned long long>(c.open_failures));
            std::fclose(f);
        }
    }
    return 0;
}
