// strix-echo-asio-naive: the Echo server shoot-out's "naive" boost::asio echo server, ported to
// Linux.
//
// Kept as the report wrote it, because its shape is what is being measured:
//   - one io_context run by 20 threads (--threads),
//   - per connection: async_read of the 4-byte header, then async_read of the body,
//   - for EACH message one async_write, serialized by a mutex-guarded std::deque of pending
//     messages (the next write starts when the previous one completes),
//   - the message is a fixed-size object copied into the queue, like the asio chat example's
//     chat_message that the report's code derives from (body at most 512 bytes).
// Changes from the report's code, and why:
//   - std::thread instead of boost::thread and std::mutex instead of a Win32 CRITICAL_SECTION;
//   - the 4-byte header is the total length, little-endian (the shoot-out's wire format);
//   - it binds 127.0.0.1 instead of every interface (benchmarks run over loopback only);
//   - TCP_NODELAY is set, as on every other server in the shoot-out, so the comparison is about
//     the I/O model and not about Nagle's algorithm;
//   - SIGTERM / SIGINT stop it cleanly (the report's server waited for a key press).

#include <boost/asio.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "echo_args.hpp"
#include "echo_wire.hpp"

namespace strix {
namespace {

using boost::asio::ip::tcp;

class message {
public:
    static constexpr std::size_t header_length = echo_header_size;
    static constexpr std::size_t max_body_length = 512;

    std::uint8_t* data() { return data_.data(); }
    std::size_t length() const { return header_length + body_length_; }
    std::uint8_t* body() { return data_.data() + header_length; }
    std::size_t body_length() const { return body_length_; }

  /// Reads the body length from the header; false when it is out of range. Session's thread.
    bool decode_header() {
        const std::uint32_t total = echo_load_u32le(data_.data());
        if (total < header_length || total - header_length > max_body_length) return false;
        body_length_ = total - header_length;
        return true;
    }

private:
    std::array<std::uint8_t, header_length + max_body_length> data_{};
    std::size_t body_length_ = 0;
};

using message_queue = std::deque<message>;

class participant {
public:
    virtual ~participant() = default;
  /// Queues msg for sending. Any thread.
    virtual void deliver(const message& msg) = 0;
};

class session : public participant, public std::enable_shared_from_this<session> {
public:
    explicit session(tcp::socket socket) : socket_(std::move(socket)) {}

  /// Starts the read chain. The accepting handler's thread.
    void start() { do_read_header(); }

    void deliver(const message& msg) override {
        std::lock_guard<std::mutex> lock(mutex_);
        const bool write_in_progress = !write_msgs_.empty();
        write_msgs_.push_back(msg);
        if (!write_in_progress) do_write();
    }

private:
    void do_read_header() {
        auto self(shared_from_this());
        boost::asio::async_read(socket_, boost::asio::buffer(read_msg_.data(), message::header_length),
                                [this, self](boost::system::error_code ec, std::size_t /*length*/) {
                                    if (!ec && read_msg_.decode_header()) do_read_body();
                                });
    }

    void do_read_body() {
        auto self(shared_from_this());
        boost::asio::async_read(socket_, boost::asio::buffer(read_msg_.body(), read_msg_.body_length()),
                                [this, self](boost::system::error_code ec, std::size_t /*length*/) {
                                    if (!ec) {
                                        deliver(read_msg_);
                                        do_read_header();
                                    }
                                });
    }

  // Called with mutex_ held.
    void do_write() {
        auto self(shared_from_this());
        boost::asio::async_write(socket_, boost::asio::buffer(write_msgs_.front().data(), write_msgs_.front().length()),
                                 [this, self](boost::system::error_code ec, std::size_t /*length*/) {
                                     if (!ec) {
                                         std::lock_guard<std::mutex> lock(mutex_);
                                         write_msgs_.pop_front();
                                         if (!write_msgs_.empty()) do_write();
                                     }
                                 });
    }

    tcp::socket socket_;
    message read_msg_;
    message_queue write_msgs_;
    std::mutex mutex_;
};

class echo_server {
public:
    echo_server(boost::asio::io_context& io, const tcp::endpoint& endpoint) : acceptor_(io, endpoint), socket_(io) {
        do_accept();
    }

private:
    void do_accept() {
        acceptor_.async_accept(socket_, [this](boost::system::error_code ec) {
            if (!ec) {
                boost::system::error_code ignored;
                socket_.set_option(tcp::no_delay(true), ignored);
                std::make_shared<session>(std::move(socket_))->start();
            }
            do_accept();
        });
    }

    tcp::acceptor acceptor_;
    tcp::socket socket_;
};

int run(int argc, char** argv) {
    std::uint16_t port = 0;
    unsigned nthreads = 20;
    CLI::App app{"strix-echo-asio-naive: the Echo server shoot-out's naive boost::asio echo server",
                 "strix-echo-asio-naive"};
    app.footer("Wire format: 4-byte little-endian total length (header included), then the body\n"
               "(at most 512 bytes here, like asio's chat_message). Stops on SIGTERM or SIGINT.");
  // A repeated option keeps its last value, so a wrapper script can override what it passed.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("--port", port, "TCP port to listen on, 127.0.0.1")->required()->check(CLI::Range(1, 65535));
    app.add_option("--threads", nthreads, "threads running the one io_context (20 as in the shoot-out)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    echo_parse_args(app, argc, argv);
    try {
        boost::asio::io_context io;
        echo_server server(io, tcp::endpoint(boost::asio::ip::address_v4::loopback(), port));
        boost::asio::signal_set stop(io, SIGTERM, SIGINT);
        stop.async_wait([&io](boost::system::error_code, int) { io.stop(); });
        std::vector<std::thread> threads;
        for (unsigned i = 0; i < nthreads; ++i) threads.emplace_back([&io] { io.run(); });
        std::printf("strix-echo-asio-naive: listening on 127.0.0.1:%u with %u threads on one io_context\n", port,
                    nthreads);
        std::fflush(stdout);
        for (auto& t : threads) t.join();
        std::printf("strix-echo-asio-naive: stopped\n");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strix-echo-asio-naive: %s (is another server on port %u?)\n", e.what(), port);
        return 1;
    }
    return 0;
}

}  // namespace
}  // namespace strix

int main(int argc, char** argv) { return strix::run(argc, argv); }
