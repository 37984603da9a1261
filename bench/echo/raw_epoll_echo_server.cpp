// strix-echo-raw-epoll: the physical-limit reference of the echo shoot-out (the ASIO batching
// experiment's lesson).
//
// No framework: N threads, each pinned to a core (unless --no-pin) with its own epoll and its own SO_REUSEPORT
// listener, so connections never move between threads and no lock or atomic is touched per
// message. It does the same per-message work a framework does, and nothing more:
//
//   read (edge-triggered, until drained) -> per-connection input buffer
//   for each complete message: copy its echo into the per-connection output buffer
//   after the whole epoll_wait batch: ONE write() per connection with pending output
//
// Partial writes stay in the output buffer and resume on EPOLLOUT. Stops on SIGTERM / SIGINT.
// Hidden test flag: --corrupt-every N flips one byte in every Nth echo of a thread, so the load
// tool's verification can be shown to catch it.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "echo_args.hpp"
#include "echo_buffer.hpp"
#include "echo_wire.hpp"

namespace strix {
namespace {

// Messages above this are a protocol error (the load tool sends at most 16 MiB bodies).
constexpr std::uint32_t max_message = (16u << 20) + 64;
// Stop reading a connection whose peer does not read its echoes; resume when it has drained.
constexpr std::size_t pause_reading_above = 4u << 20;
constexpr std::size_t read_chunk = 16384;

struct options {
    std::uint16_t port = 0;
    unsigned threads = 1;
    bool pin = true;
    std::uint64_t corrupt_every = 0;
};

struct connection {
    int fd;
    echo_buffer in{2 * read_chunk};
    echo_buffer out{read_chunk};
    bool dirty = false;        // queued for this turn's flush
    bool closed = false;       // fd closed and memory freed at the end of the turn
    bool read_paused = false;  // output above pause_reading_above; input left in the socket

    explicit connection(int f) : fd(f) {}
};

// Tags told apart from connections in epoll_event.data.ptr.
char listener_tag;
char stop_tag;

class reactor_thread {
public:
    reactor_thread(const options& opt, int stop_fd, int cpu) : opt_(opt), stop_fd_(stop_fd), cpu_(cpu) {}
    reactor_thread(const reactor_thread&) = delete;
    reactor_thread& operator=(const reactor_thread&) = delete;

    ~reactor_thread() {
        for (auto& c : by_fd_) {
            if (c) ::close(c->fd);
        }
        if (listen_fd_ >= 0) ::close(listen_fd_);
        if (ep_ >= 0) ::close(ep_);
    }

  /// Creates the epoll instance and this thread's listener; on failure returns one sentence.
  /// Main thread, before run().
    std::string open() {
        ep_ = ::epoll_create1(EPOLL_CLOEXEC);
        if (ep_ < 0) return std::string("epoll_create1: ") + std::strerror(errno);
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (listen_fd_ < 0) return std::string("socket: ") + std::strerror(errno);
        const int one = 1;
        ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(opt_.port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
            return "cannot bind 127.0.0.1:" + std::to_string(opt_.port) + ": " + std::strerror(errno) +
                   " (is another server on that port?)";
        }
        if (::listen(listen_fd_, SOMAXCONN) != 0) return std::string("listen: ") + std::strerror(errno);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = &listener_tag;
        if (::epoll_ctl(ep_, EPOLL_CTL_ADD, listen_fd_, &ev) != 0)
            return std::string("epoll_ctl: ") + std::strerror(errno);
        ev.data.ptr = &stop_tag;
        if (::epoll_ctl(ep_, EPOLL_CTL_ADD, stop_fd_, &ev) != 0)
            return std::string("epoll_ctl: ") + std::strerror(errno);
        return {};
    }

  /// Serves until the stop eventfd becomes readable. Its own thread only.
    void run() {
        if (cpu_ >= 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu_, &set);
            ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set);
        }
        std::vector<epoll_event> events(512);
        bool running = true;
        while (running) {
            const int n = ::epoll_wait(ep_, events.data(), static_cast<int>(events.size()), -1);
            if (n < 0) {
                if (errno == EINTR) continue;
                std::fprintf(stderr, "strix-echo-raw-epoll: epoll_wait: %s\n", std::strerror(errno));
                std::abort();
            }
            for (int i = 0; i < n; ++i) {
                const epoll_event& e = events[static_cast<std::size_t>(i)];
                if (e.data.ptr == &listener_tag) {
                    accept_all();
                } else if (e.data.ptr == &stop_tag) {
                    running = false;
                } else {
                    auto& c = *static_cast<connection*>(e.data.ptr);
                    if (c.closed) continue;
                    if (e.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) on_readable(c, e.events);
                    if (!c.closed && (e.events & EPOLLOUT) && !c.out.empty()) mark_dirty(c);
                }
            }
      // One write per connection per turn, after every event of the batch was parsed. The list
      // may grow while we walk it (a paused reader that resumes), hence the index.
            for (std::size_t k = 0; k < dirty_.size(); ++k) {
                connection& c = *dirty_[k];
                c.dirty = false;
                if (!c.closed) flush(c);
            }
            dirty_.clear();
            for (connection* c : closing_) {
                const int fd = c->fd;
                ::close(fd);
                by_fd_[static_cast<std::size_t>(fd)].reset();
            }
            closing_.clear();
        }
    }

  /// Messages echoed so far. Read by the main thread after join().
    std::uint64_t echoed() const { return echoed_; }

private:
    void accept_all() {
        for (;;) {
            const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED) continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK) {
          // EMFILE and friends: the connection waits in the backlog; say why once per event.
                    std::fprintf(stderr, "strix-echo-raw-epoll: accept: %s\n", std::strerror(errno));
                }
                return;
            }
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            if (by_fd_.size() <= static_cast<std::size_t>(fd)) by_fd_.resize(static_cast<std::size_t>(fd) + 64);
            by_fd_[static_cast<std::size_t>(fd)] = std::make_unique<connection>(fd);
            epoll_event ev{};
      // Edge-triggered EPOLLOUT fires only after a write ran out of socket buffer (the kernel
      // wakes writers only when SOCK_NOSPACE is set), so registering it once is free and saves
      // an epoll_ctl pair per would-block.
            ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
            ev.data.ptr = by_fd_[static_cast<std::size_t>(fd)].get();
            if (::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0) {
                std::fprintf(stderr, "strix-echo-raw-epoll: epoll_ctl: %s\n", std::strerror(errno));
                ::close(fd);
                by_fd_[static_cast<std::size_t>(fd)].reset();
            }
        }
    }

    void mark_dirty(connection& c) {
        if (c.dirty) return;
        c.dirty = true;
        dirty_.push_back(&c);
    }

    void close_conn(connection& c) {
        if (c.closed) return;
        c.closed = true;
    // The fd is closed at the end of the turn, so it cannot be reused by an accept while events
    // of this batch still point at this connection.
        ::epoll_ctl(ep_, EPOLL_CTL_DEL, c.fd, nullptr);
        closing_.push_back(&c);
    }

    void on_readable(connection& c, std::uint32_t events) {
        const bool hangup = (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
        for (;;) {
            if (c.out.size() > pause_reading_above) {
                c.read_paused = true;
                return;
            }
            std::uint8_t* p = c.in.prepare(read_chunk);
            const std::size_t room = c.in.writable();
            const ssize_t n = ::read(c.fd, p, room);
            if (n > 0) {
                c.in.commit(static_cast<std::size_t>(n));
                echo_messages(c);
                if (c.closed) return;
        // A short read drained the socket: new data raises a new edge, so the EAGAIN read is
        // skipped. After a hangup we read on to the end to see the close.
                if (static_cast<std::size_t>(n) < room && !hangup) return;
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (hangup) close_conn(c);
                return;
            }
            close_conn(c);  // orderly close (n == 0) or a reset: the peer is gone either way
            return;
        }
    }

  // Parses every complete message in c.in and appends its echo to c.out, one copy per message.
    void echo_messages(connection& c) {
        bool any = false;
        while (c.in.size() >= echo_header_size) {
            const std::uint32_t len = echo_load_u32le(c.in.data());
            if (len < echo_header_size || len > max_message) {
                std::fprintf(stderr, "strix-echo-raw-epoll: closing a connection that sent length %u\n", len);
                close_conn(c);
                return;
            }
            if (c.in.size() < len) break;
            std::uint8_t* dst = c.out.prepare(len);
            std::memcpy(dst, c.in.data(), len);
            if (opt_.corrupt_every != 0 && (echoed_ + 1) % opt_.corrupt_every == 0) dst[len - 1] ^= 0x01;
            c.out.commit(len);
            c.in.consume(len);
            ++echoed_;
            any = true;
        }
        if (any) mark_dirty(c);
    }

    void flush(connection& c) {
        if (c.out.empty()) return;
        ssize_t n;
        do {
            n = ::write(c.fd, c.out.data(), c.out.size());
        } while (n < 0 && errno == EINTR);
        if (n > 0) {
            c.out.consume(static_cast<std::size_t>(n));
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            close_conn(c);
            return;
        }
    // A partial write leaves SOCK_NOSPACE set, so EPOLLOUT resumes it.
        if (c.read_paused && c.out.size() <= pause_reading_above / 4) {
            c.read_paused = false;
            on_readable(c, 0);
        }
    }

    const options& opt_;
    const int stop_fd_;
    const int cpu_;
    int ep_ = -1;
    int listen_fd_ = -1;
    std::vector<std::unique_ptr<connection>> by_fd_;
    std::vector<connection*> dirty_;
    std::vector<connection*> closing_;
    std::uint64_t echoed_ = 0;
};

int run(int argc, char** argv) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    ::sched_getaffinity(0, sizeof(allowed), &allowed);
    std::vector<int> cpus;
    for (int i = 0; i < CPU_SETSIZE; ++i) {
        if (CPU_ISSET(i, &allowed)) cpus.push_back(i);
    }
    if (cpus.empty()) cpus.push_back(-1);

    options opt;
    opt.threads = static_cast<unsigned>(cpus.size());
    CLI::App app{"strix-echo-raw-epoll: the physical-limit reference server of the echo shoot-out",
                 "strix-echo-raw-epoll"};
    app.footer("Wire format: 4-byte little-endian total length (header included), then the body.\n"
               "Every message is echoed back unchanged. Stops on SIGTERM or SIGINT.");
  // A repeated option keeps its last value, so a wrapper script can override what it passed.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("--port", opt.port, "TCP port to listen on, 127.0.0.1")->required()->check(CLI::Range(1, 65535));
    app.add_option("--threads", opt.threads,
                   "reactor threads, one per core, each with its own SO_REUSEPORT listener "
                   "(default: the number of CPUs this process may run on)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    app.add_flag("--pin,!--no-pin", opt.pin,
                 "pin thread i to the i-th CPU this process may run on (default), or leave the threads "
                 "to the scheduler");
  // Test only, left out of --help: flips one byte in every Nth echo of a thread.
    app.add_option("--corrupt-every", opt.corrupt_every)->check(CLI::Range(0LL, 1LL << 40))->group("");
    echo_parse_args(app, argc, argv);

    std::signal(SIGPIPE, SIG_IGN);
  // SIGTERM / SIGINT are taken by sigwait in this thread; the reactors never see them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    const int stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd < 0) {
        std::fprintf(stderr, "strix-echo-raw-epoll: eventfd: %s\n", std::strerror(errno));
        return 1;
    }
    std::vector<std::unique_ptr<reactor_thread>> reactors;
    for (unsigned i = 0; i < opt.threads; ++i) {
        reactors.push_back(std::make_unique<reactor_thread>(opt, stop_fd, opt.pin ? cpus[i % cpus.size()] : -1));
        const std::string err = reactors.back()->open();
        if (!err.empty()) {
            std::fprintf(stderr, "strix-echo-raw-epoll: %s\n", err.c_str());
            return 1;
        }
    }
    std::vector<std::thread> threads;
    for (auto& r : reactors) threads.emplace_back([&r] { r->run(); });
    std::printf("strix-echo-raw-epoll: listening on 127.0.0.1:%u with %u %s threads%s\n", opt.port, opt.threads,
                opt.pin ? "pinned" : "unpinned", opt.corrupt_every ? " (CORRUPTING echoes: test mode)" : "");
    std::fflush(stdout);

    int sig = 0;
    ::sigwait(&stop_signals, &sig);
    const std::uint64_t one = 1;
    if (::write(stop_fd, &one, sizeof(one)) != static_cast<ssize_t>(sizeof(one))) std::abort();
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < threads.size(); ++i) {
        threads[i].join();
        total += reactors[i]->echoed();
    }
    std::printf("strix-echo-raw-epoll: stopped by signal %d after echoing %llu messages\n", sig,
                static_cast<unsigned long long>(total));
    ::close(stop_fd);
    return 0;
}

}  // namespace
}  // namespace strix

int main(int argc, char** argv) { return strix::run(argc, argv); }
