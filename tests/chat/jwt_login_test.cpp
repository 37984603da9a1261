// JWT logins through a running server (docs/protocol.md, "JWT logins"): a JWT-only deployment
// takes tokens over TCP and WebSocket and no passwords, creates the account at the first login,
// refuses bad tokens with their reason, holds a session to its token's rooms, tells it when the
// token expires and closes it after the grace unless it refreshes, and rotates keys on SIGHUP.
#include "chat_fixture.hpp"
#include "jwt_signer.hpp"
#include "metrics_scrape.hpp"
#include "tls_chat.hpp"

#include <support/test_certs.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <set>

namespace {

using namespace strix;
using namespace strix::test;
using proto::error_code;
using proto::msg_type;
namespace j = strix::test::jwt;

const std::string secret = "jwt-login-test-secret-0123456789abcdef";

class jwt_login : public chat_test {
protected:
    std::string key_file(const std::string& text) {
        const std::string path = dir_.path() + "/jwt" + std::to_string(++keys_) + ".key";
        std::ofstream(path) << text;
        return path;
    }
    std::unique_ptr<server_process> start_jwt(std::vector<std::string> extra = {}) {
        key_ = key_file(secret);
        std::vector<std::string> args{"--jwt-key", key_, "--ws-port", "0"};
        args.insert(args.end(), extra.begin(), extra.end());
        return start(2, args);
    }
    static bool send_jwt_login(chat_client& c, const std::string& token) {
        flatbuffers::FlatBufferBuilder fbb;
        auto t = fbb.CreateString(token);
        fbb.Finish(proto::Createlogin_req(fbb, 0, 0, 0, 0, 2, t));
        return c.send(fbb, msg_type::login_req);
    }
    static bool send_refresh(chat_client& c, const std::string& token) {
        flatbuffers::FlatBufferBuilder fbb;
        auto t = fbb.CreateString(token);
        fbb.Finish(proto::Createrefresh_req(fbb, t));
        return c.send(fbb, msg_type::refresh_req);
    }
    // Logs in with `token`; returns login_res (asserting its account name).
    static frame login(chat_client& c, const std::string& token, const std::string& sub) {
        send_jwt_login(c, token);
        auto f = c.expect(msg_type::login_res);
        auto* r = f.as<proto::login_res>();
        EXPECT_TRUE(r && r->player() && r->player()->name()->str() == sub);
        return f;
    }
    // The next error_res: its code, and its reason contains `says`.
    static void refused(chat_client& c, msg_type request, error_code code, const std::string& says) {
        auto f = c.expect(msg_type::error_res);
        auto* e = f.as<proto::error_res>();
        ASSERT_TRUE(e);
        EXPECT_EQ(e->request(), request);
        EXPECT_EQ(e->code(), code);
        EXPECT_NE(e->reason()->str().find(says), std::string::npos) << e->reason()->str();
    }
    std::string key_;
    int keys_ = 0;
};

TEST_P(jwt_login, a_jwt_only_server_logs_users_in_by_token_over_tcp_and_websocket) {
    auto srv = start_jwt();
    auto claims = j::claims_for("7d3f0c1e-9a4b-4c1d-8e2f-0123456789ab");
    claims["name"] = "Grace Hopper";
    const std::string token = j::hs256(secret, claims);
    {
        chat_client c(srv->port());
        auto f = login(c, token, claims["sub"]);
        auto* r = f.as<proto::login_res>();
        EXPECT_TRUE(r->created());
        EXPECT_EQ(r->display_name()->str(), "Grace Hopper");
        EXPECT_EQ(r->expires_at(), claims["exp"].get<std::uint64_t>());
        EXPECT_EQ(r->resume_token(), nullptr) << "no resume token: the app's tokens are the credential";
        EXPECT_EQ(r->device_token(), nullptr);
        c.create("jwt room");
    }
    chat_client w;
    ASSERT_TRUE(w.connect_ws(srv->ws_port()));
    auto f = login(w, token, claims["sub"]);
    EXPECT_FALSE(f.as<proto::login_res>()->created()) << "the second login finds the account";
    ASSERT_TRUE(f.as<proto::login_res>()->rooms());
    EXPECT_EQ(f.as<proto::login_res>()->rooms()->size(), 1u);

    // No passwords on a JWT-only server; a password account's name is not a token's to take.
    chat_client p(srv->port());
    p.send_login_version("someone", "pw", 2);
    refused(p, msg_type::login_req, error_code::bad_request, "JWT logins only");
    stop_cleanly(*srv);
}

// Logins that arrive together reach the database together: 120 clients send their login_req at
// once, every one is answered with its own account (a second round finds them), and the server
// ran them in fewer database transactions than logins.
TEST_P(jwt_login, logins_sent_at_once_are_answered_each_with_its_account_from_batched_transactions) {
    const std::uint16_t mport = free_port();
    auto srv = start_jwt({"--metrics-port", std::to_string(mport), "--login-queue", "200"});
    constexpr int n = 120;
    std::vector<std::string> tokens;
    for (int i = 0; i < n; ++i) tokens.push_back(j::hs256(secret, j::claims_for("batch-" + std::to_string(i))));
    std::vector<std::uint64_t> ids(n, 0);
    for (int round = 0; round < 2; ++round) {
        std::vector<std::unique_ptr<chat_client>> cs;
        for (int i = 0; i < n; ++i) cs.push_back(std::make_unique<chat_client>(srv->port()));
        for (int i = 0; i < n; ++i) ASSERT_TRUE(send_jwt_login(*cs[i], tokens[i]));
        for (int i = 0; i < n; ++i) {
            auto f = cs[i]->expect(msg_type::login_res);
            auto* r = f.as<proto::login_res>();
            ASSERT_TRUE(r && r->player());
            EXPECT_EQ(r->player()->name()->str(), "batch-" + std::to_string(i));
            EXPECT_EQ(r->created(), round == 0);
            if (round == 0)
                ids[i] = r->player()->id();
            else
                EXPECT_EQ(r->player()->id(), ids[i]) << "the second round finds the first round's account";
        }
    }
    EXPECT_EQ(std::set<std::uint64_t>(ids.begin(), ids.end()).size(), std::size_t{n});
    const std::string m = http_get(mport, "/metrics");
    EXPECT_EQ(metric_value(m, "strix_jwt_login_batched_total"), 2 * n);
    const long long batches = metric_value(m, "strix_jwt_login_batches_total");
    EXPECT_GE(batches, 2);
    EXPECT_LT(batches, n) << "logins sent together shared transactions";
    stop_cleanly(*srv);
}

// The same token over TLS, with a client that is not ours (OpenSSL) verifying the server.
TEST_P(jwt_login, a_jwt_logs_in_over_tls) {
    test_certs certs;
    auto srv = start_jwt({"--tls-cert", certs.cert, "--tls-key", certs.key});
    tls_chat t(srv->port(), certs.ca);
    ASSERT_TRUE(t.ok()) << t.error();
    flatbuffers::FlatBufferBuilder fbb;
    auto tok = fbb.CreateString(j::hs256(secret, j::claims_for("tls-user")));
    fbb.Finish(proto::Createlogin_req(fbb, 0, 0, 0, 0, 2, tok));
    ASSERT_TRUE(t.send(fbb, msg_type::login_req));
    auto f = t.recv();
    ASSERT_TRUE(f && f->type == msg_type::login_res);
    auto* r = f->as<proto::login_res>();
    ASSERT_TRUE(r && r->player());
    EXPECT_EQ(r->player()->name()->str(), "tls-user");
    EXPECT_TRUE(r->created());
    stop_cleanly(*srv);
}

TEST_P(jwt_login, bad_tokens_are_refused_with_their_reason_and_the_session_may_retry) {
    auto srv = start_jwt({"--jwt-audience", "chat", "--jwt-issuer", "app"});
    chat_client c(srv->port());
    auto good = j::claims_for("u1");
    good["aud"] = "chat";
    good["iss"] = "app";
    auto expired = good;
    expired["exp"] = j::now_s() - 120;
    auto other_aud = good;
    other_aud["aud"] = "billing";
    const std::pair<std::string, std::string> cases[] = {
        {j::signing_input({{"alg", "none"}}, good) + ".", "alg none"},
        {j::hs256(secret + "?", good), "signature"},
        {j::hs256(secret, expired), "expired"},
        {j::hs256(secret, other_aud), "audience"},
        {j::hs256(secret, j::claims_for("u1")), "audience"},
        {"not-a-token", "three base64url parts"},
    };
    for (const auto& [token, says] : cases) {
        send_jwt_login(c, token);
        refused(c, msg_type::login_req, error_code::invalid_token, says);
    }
    login(c, j::hs256(secret, good), "u1");
    stop_cleanly(*srv);
}

TEST_P(jwt_login, the_rooms_claim_limits_joins_and_creates) {
    auto srv = start_jwt();
    chat_client owner(srv->port());
    login(owner, j::hs256(secret, j::claims_for("owner")), "owner");
    const auto open_room = owner.create("open");
    const auto listed_room = owner.create("listed");

    auto c = j::claims_for("guest");
    c["rooms"] = {listed_room, "mine"};
    chat_client g(srv->port());
    login(g, j::hs256(secret, c), "guest");
    g.send_join(open_room);
    refused(g, msg_type::join_room_req, error_code::forbidden, "rooms claim");
    g.send_create("elsewhere");
    refused(g, msg_type::create_room_req, error_code::forbidden, "rooms claim");
    EXPECT_EQ(g.join(listed_room), (std::vector<std::string>{"owner", "guest"}));
    g.create("mine");
    stop_cleanly(*srv);
}

// The token lives 2 s from a whole second (so 1 to 2 s: with 1 s a login that took a moment could
// arrive expired) and the grace is 2 s: the server checks expiry once a second, so the refresh
// window is at least a second even on a loaded CI machine.
TEST_P(jwt_login, an_expired_session_is_told_then_closed_unless_it_refreshes) {
    auto srv = start_jwt({"--jwt-leeway", "0", "--jwt-grace", "2"});
    const auto short_lived = [](const std::string& sub) {
        auto c = j::claims_for(sub, 2);
        return j::hs256(secret, c);
    };
    chat_client stays(srv->port()), goes(srv->port());
    login(stays, short_lived("stays"), "stays");
    login(goes, short_lived("goes"), "goes");

    for (chat_client* c : {&stays, &goes}) {
        auto f = c->expect(msg_type::token_expired, std::chrono::seconds(5));
        EXPECT_EQ(f.as<proto::token_expired>()->grace_seconds(), 2u);
    }
    // A token for another account is refused; the session's own gets refresh_res.
    send_refresh(stays, j::hs256(secret, j::claims_for("goes")));
    refused(stays, msg_type::refresh_req, error_code::invalid_token, "another account");
    auto fresh = j::claims_for("stays", 600);
    send_refresh(stays, j::hs256(secret, fresh));
    auto r = stays.expect(msg_type::refresh_res);
    EXPECT_EQ(r.as<proto::refresh_res>()->expires_at(), fresh["exp"].get<std::uint64_t>());

    refused(goes, msg_type::none, error_code::token_expired, "expired");
    const auto before = std::chrono::steady_clock::now();
    EXPECT_FALSE(goes.recv(std::chrono::seconds(5)).has_value());
    EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(4)) << "closed, not silent";
    // The refreshed one is still served well past the grace.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    stays.create("still here");
    stop_cleanly(*srv);
}

TEST_P(jwt_login, sighup_rotates_the_keys) {
    auto srv = start_jwt();
    const std::string next = secret + "-next-one";
    std::ofstream(key_) << next;
    ::kill(srv->pid(), SIGHUP);
    for (int i = 0; i < 200 && srv->log().find("JWT keys reloaded") == std::string::npos; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_NE(srv->log().find("JWT keys reloaded"), std::string::npos) << srv->log();
    chat_client c(srv->port());
    send_jwt_login(c, j::hs256(secret, j::claims_for("u1")));
    refused(c, msg_type::login_req, error_code::invalid_token, "signature");
    login(c, j::hs256(next, j::claims_for("u1")), "u1");
    // A file that no longer loads keeps the keys in use.
    std::ofstream(key_) << "short";
    ::kill(srv->pid(), SIGHUP);
    for (int i = 0; i < 200 && srv->log().find("JWT key reload failed") == std::string::npos; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_NE(srv->log().find("JWT key reload failed"), std::string::npos) << srv->log();
    chat_client d(srv->port());
    login(d, j::hs256(next, j::claims_for("u2")), "u2");
    stop_cleanly(*srv);
}

// JWT logins are verified on the login queue's workers and check storage only through
// login_external (tested on both back ends in chat_storage): SQLite is enough here.
INSTANTIATE_TEST_SUITE_P(db, jwt_login, ::testing::Values(backend::sqlite), backend_name);

}  // namespace
