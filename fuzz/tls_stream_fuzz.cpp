// Fuzz target: the TLS transport glue (src/net/tls/tls_stream.cpp) between a backend stream and a
// session, with OpenSSL below it. No sockets and no engine: a fake backend stream hands the
// stream its ciphertext in chunks and takes what it sends; a fake session lends receive space,
// sometimes none (paused), and records what it is told.
//
// Input: [mode u8][seed u32][bytes...]
//   mode even: the bytes arrive instead of a handshake, at a server stream.
//   mode odd:  a client and a server stream complete a real handshake in memory and exchange a
//              message; then the bytes arrive at the server after it (garbage records), or, when
//              mode & 2, they flip bits of the client's next records on the way.
//
// Checked: no crash, leak or sanitizer finding; the stream never hands the session more bytes
// than the space it lent; after a failure or an end of stream the session hears nothing more;
// in the exchange, the message arrives whole and in order before any injected byte.
#include "fuzz_support.hpp"

#include "net/tls/tls_stream.hpp"
#include "tests/support/test_certs.hpp"

#include <strix/net/tls.hpp>

#include <memory>
#include <string>
#include <vector>

using namespace strix;
using strix::fuzz::bytes;

namespace {

// The backend below: send() copies the chain out (as if the kernel took it all).
struct fake_backend final : detail::stream_io {
    stream_user* user = nullptr;
    std::vector<std::byte> wire;
    bool closed = false;
    std::error_code start() override { return {}; }
    void ready(std::uint32_t) override {}
    void pause_receive() override {}
    void resume_receive() override {}
    void send(buffer_chain& tx) override {
        iovec iov[64];
        while (!tx.empty()) {
            const int n = tx.fill_iov(iov, 64);
            std::size_t k = 0;
            for (int i = 0; i < n; ++i) {
                auto* p = static_cast<const std::byte*>(iov[i].iov_base);
                wire.insert(wire.end(), p, p + iov[i].iov_len);
                k += iov[i].iov_len;
            }
            tx.consume(k);
            user->sent(k);
        }
    }
    bool send_busy() const noexcept override { return false; }
    void close() noexcept override { closed = true; }
};

// The session above.
struct fake_session final : stream_user {
    std::vector<std::byte> got;
    std::byte space[3000];
    std::size_t lent = 0;
    bool paused = false, ended = false, established_seen = false;
    int recv_space(iovec (&iov)[2]) override {
        STRIX_FUZZ_CHECK(!ended);
        if (paused) return 0;
        lent = sizeof space / 2;
        iov[0] = {space, lent};
        iov[1] = {space + lent, sizeof space - lent};
        lent = sizeof space;
        return 2;
    }
    bool received(std::size_t n) override {
        STRIX_FUZZ_CHECK(!ended);
        STRIX_FUZZ_CHECK(n > 0 && n <= lent);
        got.insert(got.end(), space, space + n);
        return true;
    }
    void peer_closed() override {
        STRIX_FUZZ_CHECK(!ended);
        ended = true;
    }
    void stream_failed(std::error_code) override {
        STRIX_FUZZ_CHECK(!ended);
        ended = true;
    }
    void sent(std::size_t) override {}
    void send_ready() override {}
    void established() override { established_seen = true; }
};

struct side {
    fake_session user;
    fake_backend* below = nullptr;
    std::unique_ptr<detail::tls_stream> tls;
    net_counters counters;

    side(detail::ssl_ptr ssl, bool server) {
        detail::tls_stream_config cfg;
        cfg.counters = &counters;
        cfg.address = "fuzz";
        cfg.handshake_timeout = std::chrono::milliseconds(0);  // no timer: there is no shard
        tls = std::make_unique<detail::tls_stream>(std::move(ssl), server, user, std::move(cfg));
        auto b = std::make_unique<fake_backend>();
        b->user = tls.get();
        below = b.get();
        tls->attach(std::move(b));
        tls->start();
    }
    // Hands bytes to the stream as the backend would, in chunks of the sizes cut picks.
    void deliver(bytes data, fuzz::cuts& cut) {
        while (!data.empty() && !user.ended) {
            iovec iov[2];
            const int n = tls->recv_space(iov);
            if (n <= 0) return;
            std::size_t k = std::min<std::size_t>({iov[0].iov_len, data.size(), 1 + cut.next() % 2048});
            std::memcpy(iov[0].iov_base, data.data(), k);
            data = data.subspan(k);
            tls->received(k);
        }
    }
};

struct identities {
    test::test_certs certs;
    std::shared_ptr<tls_server> server;
    std::shared_ptr<tls_client> client;
    identities() {
        server = tls_server::load({.cert_file = certs.cert, .key_file = certs.key});
        client = tls_client::load({.ca_file = certs.ca});
    }
};

identities& ids() {
    static identities i;
    return i;
}

std::vector<std::byte> take(std::vector<std::byte>& wire) {
    std::vector<std::byte> out;
    out.swap(wire);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::reader r(fuzz::as_bytes(data, size));
    const std::uint8_t mode = r.u8();
    fuzz::cuts cut(r.u32());
    const fuzz::exact_copy input(r.rest());

    side server(detail::new_server_ssl(*ids().server), true);
    if ((mode & 1) == 0) {
        server.deliver(input.view(), cut);
        STRIX_FUZZ_CHECK(server.user.got.empty() || server.user.established_seen);
        return 0;
    }

    side client(detail::new_client_ssl(*ids().client, "localhost"), false);
    // The handshake, flights shuttled until neither side has anything to say.
    for (int round = 0; round < 8; ++round) {
        auto c2s = take(client.below->wire);
        auto s2c = take(server.below->wire);
        if (c2s.empty() && s2c.empty()) break;
        server.deliver(c2s, cut);
        client.deliver(s2c, cut);
    }
    STRIX_FUZZ_CHECK(server.user.established_seen && client.user.established_seen);
    const std::string msg = "a message that must arrive whole";
    buffer_chain out;
    out.append(std::as_bytes(std::span(msg)));
    client.tls->send(out);
    STRIX_FUZZ_CHECK(out.empty());
    auto records = take(client.below->wire);
    if (mode & 2) {
        // Flip bits of the client's records on the way, at offsets the input picks.
        for (std::size_t i = 0; i + 1 < input.view().size() && !records.empty(); i += 2) {
            const auto at = static_cast<std::size_t>(input.view()[i]) * 7 % records.size();
            records[at] ^= input.view()[i + 1];
        }
        server.deliver(records, cut);
        return 0;
    }
    server.user.paused = (cut.next() & 3) == 0;  // sometimes the session takes nothing at first
    server.deliver(records, cut);
    server.user.paused = false;
    server.tls->resume_receive();
    STRIX_FUZZ_CHECK(server.user.got.size() == msg.size());
    STRIX_FUZZ_CHECK(std::memcmp(server.user.got.data(), msg.data(), msg.size()) == 0);
    server.deliver(input.view(), cut);  // garbage after the handshake
    return 0;
}
