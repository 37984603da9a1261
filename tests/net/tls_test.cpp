// TLS in strix::net: a strix server against a peer that is not strix (OpenSSL's blocking client),
// strix to strix over connect_options::tls, and every way a handshake can go wrong: an unknown
// CA, an expired certificate, the wrong host name, plaintext to a TLS port and TLS to a plain
// one, a stalled handshake, too many handshakes from one address, a peer that leaves mid-record,
// renegotiation. Run on both backends.
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"
#include "support/test_certs.hpp"
#include "support/tls_peer.hpp"

#include <strix/net/connection.hpp>
#include <strix/net/net_errc.hpp>
#include <strix/net/session_group.hpp>
#include <strix/net/tls.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace strix;
using namespace std::chrono_literals;

test::test_certs& certs() {
    static test::test_certs c;
    return c;
}

std::shared_ptr<tls_server> server_identity(tls_server_config extra = {}) {
    extra.cert_file = certs().cert;
    extra.key_file = certs().key;
    return tls_server::load(extra);
}

server_config tls_config(std::shared_ptr<tls_server> id) {
    server_config c;
    c.tls = std::move(id);
    return c;
}

test::bytes body_of(const std::string& s) {
    test::bytes b(s.size());
    std::memcpy(b.data(), s.data(), s.size());
    return b;
}

// Records what the server's handler hears.
struct recording_echo : session_handler {
    std::mutex mu;
    std::vector<std::string> versions, alpns, names;
    std::vector<bool> resumed;
    std::atomic<int> opens{0};
    void on_open(session& s) override {
        const tls_info* t = s.tls();
        std::lock_guard lk(mu);
        ++opens;
        versions.push_back(t ? t->version : "plain");
        alpns.push_back(t ? t->alpn : "");
        names.push_back(t ? t->server_name : "");
        resumed.push_back(t && t->resumed);
    }
    void on_frame(session& s, std::span<const std::byte> f) override { s.send(f); }
};

// Every shard's handler reports to one recording_echo.
server::handler_factory forward_to(recording_echo& h) {
    return [&h](shard&) {
        struct fwd : session_handler {
            recording_echo* r;
            void on_open(session& s) override { r->on_open(s); }
            void on_frame(session& s, std::span<const std::byte> f) override { r->on_frame(s, f); }
        };
        auto p = std::make_unique<fwd>();
        p->r = &h;
        return p;
    };
}

TEST(tls, a_strix_server_echoes_to_an_openssl_client_over_tls_1_3_and_1_2) {
    recording_echo h;
    test::server_fixture fx(tls_config(server_identity({.alpn = {"strix-echo", "h2"}})), forward_to(h));
    for (int max : {0, TLS1_2_VERSION}) {
        test::tls_peer c(fx.srv.port(),
                         {.ca = certs().ca, .host = "localhost", .alpn = {"h2", "strix-echo"}, .max_version = max});
        ASSERT_TRUE(c.handshake()) << c.error();
        for (int i = 0; i < 50; ++i) ASSERT_TRUE(c.echo(body_of("message " + std::to_string(i))));
        std::mt19937 rng(7);
        ASSERT_TRUE(c.echo(test::random_bytes(rng, 60000))) << "a frame spanning several records";
    }
    std::lock_guard lk(h.mu);
    ASSERT_EQ(h.versions.size(), 2u);
    EXPECT_EQ(h.versions[0], "TLSv1.3");
    EXPECT_EQ(h.versions[1], "TLSv1.2");
    EXPECT_EQ(h.alpns[0], "strix-echo") << "the server's preference wins";
    EXPECT_EQ(h.names[0], "localhost") << "SNI reaches the session";
    EXPECT_EQ(fx.srv.stats().tls_handshakes, 2u);
}

TEST(tls, many_small_sends_of_one_turn_leave_as_few_records) {
    // 200 frames of 10 bytes answered in one turn: the echo comes back in far fewer reads than
    // frames, because the session's chain is sealed into records of up to 16 KiB per flush.
    struct burst : session_handler {
        void on_frame(session& s, std::span<const std::byte> f) override {
            for (int i = 0; i < 200; ++i) s.send(f);
        }
    };
    test::server_fixture fx(tls_config(server_identity()), [](shard&) { return std::make_unique<burst>(); });
    test::tls_peer c(fx.srv.port(), {.ca = certs().ca});
    ASSERT_TRUE(c.handshake()) << c.error();
    test::bytes f = test::frame_le32(body_of("0123456789"));
    ASSERT_TRUE(c.write_all(f));
    test::bytes back(f.size() * 200);
    ASSERT_TRUE(c.read_exact(back.data(), back.size()));
    for (std::size_t i = 0; i < 200; ++i)
        ASSERT_TRUE(std::equal(f.begin(), f.end(), back.begin() + static_cast<long>(i * f.size())));
    // Records received by the client: SSL_read pulls one record at a time, so count what the
    // server wrote: bytes_out is plaintext, writes one per record-sealing SSL_write.
    const auto st = fx.srv.stats();
    EXPECT_EQ(st.bytes_out, back.size());
    EXPECT_LE(st.writes, 3u) << "200 sends sealed into " << st.writes << " records";
}

TEST(tls, handshake_failures_close_the_connection_and_are_counted) {
    test::server_fixture fx(tls_config(server_identity()));
    {
        test::tls_peer c(fx.srv.port(), {.ca = certs().other_ca});
        EXPECT_FALSE(c.handshake()) << "a certificate from an unknown CA is refused by the client";
    }
    {
        test::tls_peer c(fx.srv.port(), {.ca = certs().ca, .host = "other.example"});
        EXPECT_FALSE(c.handshake()) << "the wrong host name is refused";
    }
    {
        // Plaintext to a TLS port: an HTTP request instead of a ClientHello.
        int fd = test::connect_tcp(fx.srv.port());
        ASSERT_GE(fd, 0);
        const std::string http = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
        ASSERT_TRUE(test::send_all(fd, http.data(), http.size()));
        EXPECT_TRUE(test::wait_closed(fd, 5s)) << "plaintext to a TLS port: closed";
        ::close(fd);
    }
    ASSERT_TRUE(test::eventually([&] { return fx.srv.stats().tls_failures >= 3; }));
    EXPECT_EQ(fx.srv.stats().tls_handshakes, 0u);
}

TEST(tls, an_expired_certificate_is_refused) {
    tls_server_config cfg;
    cfg.cert_file = certs().expired_cert;
    cfg.key_file = certs().expired_key;
    test::server_fixture fx(tls_config(tls_server::load(cfg)));
    test::tls_peer c(fx.srv.port(), {.ca = certs().ca});
    EXPECT_FALSE(c.handshake());
    EXPECT_NE(c.error().find("certificate verify failed"), std::string::npos) << c.error();
}

TEST(tls, tls_to_a_plain_port_is_closed_as_a_framing_error) {
    test::server_fixture fx;  // plain
    test::tls_peer c(fx.srv.port(), {});
    EXPECT_FALSE(c.handshake());
    ASSERT_TRUE(test::eventually([&] { return fx.srv.stats().frame_errors == 1; }));
}

TEST(tls, a_stalled_handshake_is_closed_by_its_timeout) {
    test::server_fixture fx(tls_config(server_identity({.handshake_timeout = 300ms})));
    int fd = test::connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(test::wait_closed(fd, 5s));
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms);
    ::close(fd);
    EXPECT_TRUE(test::eventually([&] { return fx.srv.stats().tls_timeouts == 1; }));
}

TEST(tls, handshakes_beyond_the_per_address_cap_are_closed_at_once) {
    // One shard, so every connection meets the same gate.
    test::server_fixture fx(tls_config(server_identity({.max_handshakes_per_address = 3})), {}, 1);
    std::vector<int> stalled;
    for (int i = 0; i < 3; ++i) {
        stalled.push_back(test::connect_tcp(fx.srv.port()));
        ASSERT_GE(stalled.back(), 0);
    }
    ASSERT_TRUE(test::eventually([&] { return fx.srv.stats().accepted == 3; }));
    int extra = test::connect_tcp(fx.srv.port());
    ASSERT_GE(extra, 0);
    EXPECT_TRUE(test::wait_closed(extra, 5s)) << "the fourth handshake from the address is refused";
    ::close(extra);
    EXPECT_TRUE(test::eventually([&] { return fx.srv.stats().tls_refused == 1; }));
    // The stalled ones leave; a real client gets in again.
    for (int fd : stalled) ::close(fd);
    ASSERT_TRUE(test::eventually([&] { return fx.srv.stats().tls_failures == 3; }));
    test::tls_peer c(fx.srv.port(), {.ca = certs().ca});
    ASSERT_TRUE(c.handshake()) << c.error();
    EXPECT_TRUE(c.echo(body_of("after the flood")));
}

TEST(tls, a_second_connection_resumes_the_first_session) {
    recording_echo h;
    test::server_fixture fx(tls_config(server_identity()), forward_to(h));
    SSL_SESSION* saved = nullptr;
    {
        test::tls_peer c(fx.srv.port(), {.ca = certs().ca});
        ASSERT_TRUE(c.handshake()) << c.error();
        ASSERT_TRUE(c.echo(body_of("first")));  // the TLS 1.3 tickets arrive with this read
        saved = c.session();
    }
    {
        test::tls_peer c(fx.srv.port(), {.ca = certs().ca, .resume = saved});
        ASSERT_TRUE(c.handshake()) << c.error();
        ASSERT_TRUE(c.echo(body_of("second")));
        EXPECT_EQ(SSL_session_reused(c.ssl()), 1);
    }
    SSL_SESSION_free(saved);
    EXPECT_EQ(fx.srv.stats().tls_resumed, 1u);
    std::lock_guard lk(h.mu);
    ASSERT_EQ(h.resumed.size(), 2u);
    EXPECT_FALSE(h.resumed[0]);
    EXPECT_TRUE(h.resumed[1]);
}

TEST(tls, a_graceful_close_delivers_everything_then_close_notify) {
    struct say_and_close : session_handler {
        void on_frame(session& s, std::span<const std::byte>) override {
            std::string big(200000, 'x');
            s.send(std::as_bytes(std::span(big)));
            s.close();
        }
    };
    test::server_fixture fx(tls_config(server_identity()), [](shard&) { return std::make_unique<say_and_close>(); });
    test::tls_peer c(fx.srv.port(), {.ca = certs().ca});
    ASSERT_TRUE(c.handshake()) << c.error();
    ASSERT_TRUE(c.write_all(test::frame_le32(body_of("bye"))));
    std::string got(200000, '\0');
    ASSERT_TRUE(c.read_exact(got.data(), got.size()));
    EXPECT_EQ(got, std::string(200000, 'x'));
    EXPECT_EQ(c.read_end(), SSL_ERROR_ZERO_RETURN) << "the server ended with close_notify";
}

TEST(tls, a_peer_that_leaves_mid_record_is_closed_cleanly) {
    test::server_fixture fx(tls_config(server_identity()));
    {
        test::tls_peer c(fx.srv.port(), {.ca = certs().ca});
        ASSERT_TRUE(c.handshake()) << c.error();
        ASSERT_TRUE(c.echo(body_of("one")));
        // Half of a record header and a few bytes: then the socket closes.
        const unsigned char partial[] = {0x17, 0x03, 0x03, 0x01, 0x00, 1, 2, 3};
        ASSERT_TRUE(test::send_all(c.fd(), partial, sizeof partial));
    }
    ASSERT_TRUE(test::eventually([&] { return fx.srv.stats().closed == 1; }));
    test::tls_peer again(fx.srv.port(), {.ca = certs().ca});
    ASSERT_TRUE(again.handshake()) << again.error();
    EXPECT_TRUE(again.echo(body_of("still serving")));
}

TEST(tls, renegotiation_is_refused) {
    test::server_fixture fx(tls_config(server_identity()));
    test::tls_peer c(fx.srv.port(), {.ca = certs().ca, .max_version = TLS1_2_VERSION});
    ASSERT_TRUE(c.handshake()) << c.error();
    ASSERT_TRUE(c.echo(body_of("before")));
    ASSERT_EQ(SSL_renegotiate(c.ssl()), 1);
    // The client's renegotiation ClientHello goes out with its next write; the server answers
    // no_renegotiation (or closes): either way no second handshake completes.
    const bool echoed = c.echo(body_of("during"));
    EXPECT_FALSE(echoed && SSL_renegotiate_pending(c.ssl()) == 0 && fx.srv.stats().tls_handshakes > 1);
    EXPECT_EQ(fx.srv.stats().tls_handshakes, 1u);
}

TEST(tls, reload_serves_the_new_certificate_to_new_connections_only) {
    tls_server_config cfg;
    cfg.cert_file = certs().path("live.pem");
    cfg.key_file = certs().path("live.key");
    std::filesystem::copy_file(certs().cert, cfg.cert_file, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(certs().key, cfg.key_file, std::filesystem::copy_options::overwrite_existing);
    auto id = tls_server::load(cfg);
    test::server_fixture fx(tls_config(id));
    test::tls_peer before(fx.srv.port(), {.ca = certs().ca});
    ASSERT_TRUE(before.handshake()) << before.error();
    auto serial = [](SSL* s) {
        X509* x = SSL_get1_peer_certificate(s);
        long v = ASN1_INTEGER_get(X509_get_serialNumber(x));
        X509_free(x);
        return v;
    };
    const long first = serial(before.ssl());
    std::filesystem::copy_file(certs().cert2, cfg.cert_file, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(certs().key2, cfg.key_file, std::filesystem::copy_options::overwrite_existing);
    id->reload();
    test::tls_peer after(fx.srv.port(), {.ca = certs().ca});
    ASSERT_TRUE(after.handshake()) << after.error();
    EXPECT_NE(serial(after.ssl()), first) << "new connections get the reloaded certificate";
    EXPECT_TRUE(before.echo(body_of("the old connection still works")));
    // A broken file: reload throws and the running identity stays.
    test::test_certs& c = certs();
    c.write_text("live.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
    EXPECT_THROW(id->reload(), tls_error);
    test::tls_peer still(fx.srv.port(), {.ca = certs().ca});
    EXPECT_TRUE(still.handshake()) << still.error();
}

TEST(tls, load_errors_name_the_file_and_the_reason) {
    auto message = [](tls_server_config cfg) {
        try {
            tls_server::load(cfg);
        } catch (const tls_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    const std::string missing = certs().path("missing.pem");
    std::string m = message({.cert_file = missing, .key_file = certs().key});
    EXPECT_NE(m.find(missing), std::string::npos) << m;
    EXPECT_NE(m.find("No such file"), std::string::npos) << m;
    m = message({.cert_file = certs().cert, .key_file = certs().key2});
    EXPECT_NE(m.find(certs().key2), std::string::npos) << m;
    EXPECT_NE(m.find("mismatch"), std::string::npos) << m;
    const std::string junk = certs().write_text("junk.pem", "hello\n");
    m = message({.cert_file = junk, .key_file = certs().key});
    EXPECT_NE(m.find(junk), std::string::npos) << m;
    try {
        tls_client::load({.ca_file = missing});
        ADD_FAILURE() << "a missing CA file loads";
    } catch (const tls_error& e) {
        EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    }
}

// --- strix to strix ------------------------------------------------------------------------------

struct client_log : session_handler {
    std::mutex mu;
    std::vector<std::string> frames;
    std::vector<std::error_code> failures;
    std::vector<bool> resumed;
    std::string send_on_open = "ping";
    void on_open(session& s) override {
        {
            std::lock_guard lk(mu);
            resumed.push_back(s.tls() && s.tls()->resumed);
        }
        test::bytes f = test::frame_le32(body_of(send_on_open));
        s.send(std::span<const std::byte>(f));
    }
    void on_frame(session& s, std::span<const std::byte> f) override {
        std::lock_guard lk(mu);
        frames.emplace_back(reinterpret_cast<const char*>(f.data()) + 4, f.size() - 4);
        s.close();
    }
    void on_connect_failed(connection&, std::error_code ec) override {
        std::lock_guard lk(mu);
        failures.push_back(ec);
    }
};

// A client that trusts the test CA, expects "localhost" and reconnects 10 ms after a close.
connect_options reconnecting_tls_client() {
    connect_options o;
    o.tls = tls_client::load({.ca_file = certs().ca});
    o.server_name = "localhost";
    o.reconnect = true;
    o.reconnect_initial = 10ms;
    return o;
}

TEST(tls, a_strix_client_verifies_and_talks_to_a_strix_server_and_resumes_on_reconnect) {
    test::server_fixture fx(tls_config(server_identity()));
    client_log h;
    auto group = std::make_unique<session_group>(fx.eng.at(1), h);
    const connect_options o = reconnecting_tls_client();
    connection_ptr c;
    test::on_shard(fx.eng, 1, [&] { c = group->connect(endpoint::tcp("127.0.0.1", fx.srv.port()), o); });
    // Each session says ping, gets the echo and closes; the connection reconnects.
    ASSERT_TRUE(test::eventually([&] {
        std::lock_guard lk(h.mu);
        return h.frames.size() >= 3;
    }));
    test::on_shard(fx.eng, 1, [&] {
        c->close();
        c.reset();
        group.reset();
    });
    std::lock_guard lk(h.mu);
    EXPECT_EQ(h.frames[0], "ping");
    EXPECT_TRUE(h.failures.empty());
    ASSERT_GE(h.resumed.size(), 3u);
    EXPECT_FALSE(h.resumed[0]);
    EXPECT_TRUE(h.resumed[2]) << "a reconnect offers the session the last one received";
    EXPECT_GE(fx.srv.stats().tls_resumed, 1u);
}

TEST(tls, closing_a_connection_mid_handshake_is_not_a_failed_connect) {
    // A listener that accepts and never answers: the client's TLS handshake waits for its
    // ServerHello when the application closes the connection.
    const int l = test::listen_loopback(4);
    ASSERT_GE(l, 0);
    test::server_fixture fx(tls_config(server_identity()));  // only for its engine
    client_log h;
    auto group = std::make_unique<session_group>(fx.eng.at(1), h);
    const connect_options o = reconnecting_tls_client();
    connection_ptr c;
    test::on_shard(fx.eng, 1, [&] { c = group->connect(endpoint::tcp("127.0.0.1", test::local_port_of(l)), o); });
    const int peer = ::accept(l, nullptr, nullptr);  // blocks until the client's connect lands
    ASSERT_GE(peer, 0);
    char hello[5];
    ASSERT_TRUE(test::recv_exact(peer, hello, sizeof hello)) << "the ClientHello's record header";
    connection::status after_close{};
    test::on_shard(fx.eng, 1, [&] {
        c->close();
        after_close = c->state();
        c.reset();
        group.reset();
    });
    EXPECT_EQ(after_close, connection::status::closed);
    std::lock_guard lk(h.mu);
    EXPECT_TRUE(h.failures.empty()) << "on_connect_failed: " << (h.failures.empty() ? "" : h.failures[0].message());
    EXPECT_TRUE(h.resumed.empty()) << "the handler never met the session";
    ::close(peer);
    ::close(l);
}

TEST(tls, a_strix_client_refuses_a_server_its_ca_did_not_sign_or_of_another_name) {
    test::server_fixture fx(tls_config(server_identity()));
    for (auto [ca, name] :
         {std::pair{certs().other_ca, std::string("localhost")}, std::pair{certs().ca, std::string("other.example")}}) {
        client_log h;
        auto group = std::make_unique<session_group>(fx.eng.at(1), h);
        connect_options o;
        o.tls = tls_client::load({.ca_file = ca});
        o.server_name = name;
        connection_ptr c;
        test::on_shard(fx.eng, 1, [&] { c = group->connect(endpoint::tcp("127.0.0.1", fx.srv.port()), o); });
        ASSERT_TRUE(test::eventually([&] {
            std::lock_guard lk(h.mu);
            return !h.failures.empty();
        }));
        test::on_shard(fx.eng, 1, [&] {
            EXPECT_EQ(c->state(), connection::status::closed);
            c.reset();
            group.reset();
        });
        std::lock_guard lk(h.mu);
        EXPECT_EQ(h.failures[0], net_errc::tls_handshake_failed) << h.failures[0].message();
        EXPECT_TRUE(h.frames.empty());
        EXPECT_TRUE(h.resumed.empty()) << "the handler never met the session";
    }
}

}  // namespace
