// The login lockout row: 2,000 wrong passwords for one name from one address used to keep the
// owner out for five minutes, whatever address and password the owner came with. With device
// tokens (docs/protocol.md, "Device tokens") the owner's client, which logged in before, gets in
// during and after such a flood; a client without a token is still refused. And the token rules:
// a token counts its own failures, expired and other names' tokens are ignored, made-up tokens
// are failures of their address and exempt nothing, the database holds only the token's hash,
// a flood of made-up tokens costs no more password hashes than a flood without, and revoked
// tokens (strix-chat-server --revoke-device-tokens) exempt nothing.
#include "chat_fixture.hpp"
#include "metrics_scrape.hpp"

#include "apps/chat/storage/device_token.hpp"

#include <libpq-fe.h>
#include <sqlite3.h>

#include <atomic>
#include <thread>

using namespace strix;
using namespace strix::chat;
using namespace strix::test;
using namespace std::chrono_literals;
using proto::error_code;
using proto::msg_type;

namespace {

using bytes = std::vector<std::byte>;

struct refusal {
    error_code code = error_code::none;
    std::string reason;
};

// The error_res of a login that must fail.
refusal login_error(chat_client& c, const std::string& name, const std::string& pw,
                    std::span<const std::byte> token = {}) {
    c.send_login(name, pw, token);
    auto f = c.expect(msg_type::error_res);
    auto* e = f.as<proto::error_res>();
    if (!e) return {};
    EXPECT_EQ(e->request(), msg_type::login_req);
    return {e->code(), e->reason() ? e->reason()->str() : ""};
}

// N from "...; retry in N s" (-1 if the reason has no such part).
long retry_seconds(const std::string& reason) {
    const auto pos = reason.find("retry in ");
    return pos == std::string::npos ? -1 : std::stol(reason.substr(pos + 9));
}

bytes random_token() {
    const device_token t = make_device_token();
    return bytes(t.bytes.begin(), t.bytes.end());
}

device_token_hash hash_of(const bytes& token) {
    device_token t;
    EXPECT_TRUE(device_token_from(token, t));
    return hash_device_token(t);
}

// True if `needle` occurs in the file's bytes (false for a missing file).
bool file_contains(const std::string& path, std::span<const std::byte> needle) {
    const std::string hay = read_file(path);
    const std::string_view n(reinterpret_cast<const char*>(needle.data()), needle.size());
    return hay.find(n) != std::string::npos;
}

// Rows of device_tokens whose token_hash equals `value`, counted by the database itself.
long long rows_with_hash(backend b, const std::string& url, std::span<const std::byte> value) {
    const std::string hex = to_hex(value);
    if (b == backend::sqlite) {
        sqlite3* db = nullptr;
        if (::sqlite3_open_v2(url.substr(7).c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
            ::sqlite3_close(db);
            ADD_FAILURE() << "cannot open " << url;
            return -1;
        }
        std::unique_ptr<sqlite3, decltype(&::sqlite3_close)> guard(db, &::sqlite3_close);
        const std::string sql = "SELECT COUNT(*) FROM device_tokens WHERE token_hash = x'" + hex + "'";
        sqlite3_stmt* st = nullptr;
        if (::sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
            ADD_FAILURE() << ::sqlite3_errmsg(db);
            return -1;
        }
        std::unique_ptr<sqlite3_stmt, decltype(&::sqlite3_finalize)> sguard(st, &::sqlite3_finalize);
        return ::sqlite3_step(st) == SQLITE_ROW ? ::sqlite3_column_int64(st, 0) : -1;
    }
    std::unique_ptr<PGconn, decltype(&::PQfinish)> c(::PQconnectdb(url.c_str()), &::PQfinish);
    if (::PQstatus(c.get()) != CONNECTION_OK) {
        ADD_FAILURE() << "cannot connect to " << url;
        return -1;
    }
    const std::string sql = "SELECT COUNT(*) FROM device_tokens WHERE token_hash = '\\x" + hex + "'::bytea";
    std::unique_ptr<PGresult, decltype(&::PQclear)> r(::PQexec(c.get(), sql.c_str()), &::PQclear);
    if (::PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
        ADD_FAILURE() << ::PQresultErrorMessage(r.get());
        return -1;
    }
    return std::stoll(::PQgetvalue(r.get(), 0, 0));
}

class device_tokens : public chat_test {
protected:
    std::unique_ptr<server_process> start_with_metrics(std::vector<std::string> extra) {
        mport_ = free_port();
        extra.push_back("--metrics-port");
        extra.push_back(std::to_string(mport_));
        return start(2, std::move(extra));
    }
    long long metric(const std::string& name) { return metric_value(http_get(mport_, "/metrics"), name); }
    std::uint16_t mport_ = 0;
};

TEST_P(device_tokens, the_owner_with_a_token_logs_in_during_and_after_a_flood_that_locks_the_name) {
    // Default waits, but a 1 ms first backoff, so the flood reaches the 5-minute lockout quickly.
    auto srv = start_with_metrics({"--login-backoff-ms", "1"});
    bytes token;
    {
        chat_client owner;
        ASSERT_TRUE(owner.connect_from(srv->port(), "127.0.0.9"));
        token = owner.login_for_token("victim", "the-real-one");
        ASSERT_EQ(token.size(), 32u);
    }
    // The attacker guesses from 127.0.0.5 until told to stop, and at least 2,000 times.
    std::atomic<int> sent{0}, wrong{0}, limited{0}, other{0};
    std::atomic<bool> stop{false};
    std::thread attacker([&] {
        chat_client a;
        if (!a.connect_from(srv->port(), "127.0.0.5")) {
            ++other;
            return;
        }
        while (!stop || sent < 2000) {
            a.send_login("victim", "guess" + std::to_string(sent.load()));
            ++sent;
            auto f = a.recv();
            const proto::error_res* e = f ? f->as<proto::error_res>() : nullptr;
            if (e && e->code() == error_code::wrong_password)
                ++wrong;
            else if (e && e->code() == error_code::rate_limited)
                ++limited;
            else {
                ++other;
                return;
            }
        }
    });
    // Once the guesses keep the name locked out (the 10th failure) ...
    ASSERT_TRUE(eventually([&] { return wrong >= 10 || other > 0; }, 30s));
    ASSERT_EQ(other.load(), 0);
    // ... the owner's client, with its token, gets in; each login hands out the next token.
    for (int i = 0; i < 3; ++i) {
        chat_client owner;
        ASSERT_TRUE(owner.connect_from(srv->port(), "127.0.0.9"));
        bytes next = owner.login_for_token("victim", "the-real-one", token);
        ASSERT_EQ(next.size(), 32u) << "login " << i << " during the flood";
        EXPECT_NE(next, token);
        token = next;
    }
    EXPECT_EQ(metric("strix_device_token_logins_total"), 3);
    // Without a token the right password is refused, from any address, for the whole lockout.
    chat_client no_token;
    ASSERT_TRUE(no_token.connect_from(srv->port(), "127.0.0.10"));
    auto r = login_error(no_token, "victim", "the-real-one");
    EXPECT_EQ(r.code, error_code::rate_limited) << r.reason;
    EXPECT_NE(r.reason.find("for this account"), std::string::npos) << r.reason;
    EXPECT_GE(retry_seconds(r.reason), 250) << r.reason;
    // The attacker was still guessing all along (it stops only when told to, or on a failure).
    EXPECT_EQ(other.load(), 0);
    stop = true;
    attacker.join();
    std::printf("flood: %d guesses, %d checked, %d refused unhashed\n", sent.load(), wrong.load(), limited.load());
    EXPECT_EQ(other.load(), 0);
    EXPECT_EQ(wrong + limited, sent.load());
    EXPECT_GE(sent.load(), 2000);
    EXPECT_EQ(wrong.load(), 10) << "the lockout let guesses through to the password check";
    // After the flood: still in for the owner's client, still out for everyone else.
    chat_client owner;
    ASSERT_TRUE(owner.connect_from(srv->port(), "127.0.0.9"));
    EXPECT_EQ(owner.login_for_token("victim", "the-real-one", token).size(), 32u);
    chat_client later;
    ASSERT_TRUE(later.connect_from(srv->port(), "127.0.0.11"));
    EXPECT_EQ(login_error(later, "victim", "the-real-one").code, error_code::rate_limited);
    stop_cleanly(*srv);
}

TEST_P(device_tokens, a_token_counts_its_own_failures_and_leaves_the_name_alone) {
    auto srv = start_with_metrics({"--login-backoff-ms", "60000"});
    chat_client c(srv->port());
    const bytes token = c.login_for_token("ann", "right");
    c.close();
    chat_client t(srv->port());
    // 3 free failures, like a name; then the token waits, even with the right password.
    for (int i = 0; i < 3; ++i) EXPECT_EQ(login_error(t, "ann", "wrong", token).code, error_code::wrong_password);
    auto r = login_error(t, "ann", "right", token);
    EXPECT_EQ(r.code, error_code::rate_limited);
    EXPECT_NE(r.reason.find("with this device token"), std::string::npos) << r.reason;
    // The name was not charged: a login without the token goes through (and gets a token).
    chat_client other(srv->port());
    EXPECT_EQ(other.login_for_token("ann", "right").size(), 32u);
    // A token that is not 32 bytes is a malformed request.
    chat_client bad(srv->port());
    const bytes short_token(5, std::byte{1});
    EXPECT_EQ(login_error(bad, "ann", "right", short_token).code, error_code::bad_request);
    EXPECT_EQ(metric("strix_device_token_logins_total"), 0);
    stop_cleanly(*srv);
}

TEST_P(device_tokens, expired_tokens_and_other_names_tokens_are_ignored) {
    // One failure makes a name, or an address, wait a minute.
    auto srv = start_with_metrics({"--login-free-failures", "1", "--login-lockout-failures", "2",
                                   "--address-free-failures", "1", "--address-lockout-failures", "2",
                                   "--login-backoff-ms", "60000", "--login-lockout-ms", "120000"});
    chat_client setup(srv->port());
    const bytes victims = setup.login_for_token("victim", "pw");
    setup.close();
    chat_client b(srv->port());
    const bytes bobs = b.login_for_token("bob", "pw");
    b.close();
    chat_client carols_client(srv->port());
    ASSERT_EQ(carols_client.login_for_token("carol", "pw").size(), 32u);
    carols_client.close();
    // Expired tokens of victim and carol, planted as if issued 40 days ago for 30 days.
    const bytes expired = random_token(), carols_expired = random_token();
    {
        auto store = open_store();
        const auto victim_id = store->find_account("victim")->id;
        const auto carol_id = store->find_account("carol")->id;
        const std::int64_t now =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        const std::int64_t day = 86'400'000'000;
        store->store_device_token({victim_id, hash_of(expired), now - 40 * day, now - 10 * day, std::nullopt, 16});
        store->store_device_token(
            {carol_id, hash_of(carols_expired), now - 40 * day, now - 10 * day, std::nullopt, 16});
    }
    chat_client attacker;
    ASSERT_TRUE(attacker.connect_from(srv->port(), "127.0.0.5"));
    EXPECT_EQ(login_error(attacker, "victim", "x").code, error_code::wrong_password);  // the name waits now

    chat_client c;
    ASSERT_TRUE(c.connect_from(srv->port(), "127.0.0.9"));
    // The expired token and bob's token exempt nothing: the name's wait applies.
    auto r = login_error(c, "victim", "pw", expired);
    EXPECT_EQ(r.code, error_code::rate_limited);
    EXPECT_NE(r.reason.find("for this account"), std::string::npos) << r.reason;
    EXPECT_EQ(login_error(c, "victim", "pw", bobs).code, error_code::rate_limited);
    // Neither was a failure of 127.0.0.9 (one would put it in backoff), nor used up bob's token.
    chat_client carol;
    ASSERT_TRUE(carol.connect_from(srv->port(), "127.0.0.9"));
    // carol's expired token on a name that does not wait: an ordinary login, with a new token.
    const bytes carols_new = carol.login_for_token("carol", "pw", carols_expired);
    EXPECT_EQ(carols_new.size(), 32u);
    EXPECT_NE(carols_new, carols_expired);
    chat_client bob;
    ASSERT_TRUE(bob.connect_from(srv->port(), "127.0.0.9"));
    EXPECT_EQ(bob.login_for_token("bob", "pw", bobs).size(), 32u);
    // The victim's own token still gets in.
    chat_client v;
    ASSERT_TRUE(v.connect_from(srv->port(), "127.0.0.9"));
    EXPECT_EQ(v.login_for_token("victim", "pw", victims).size(), 32u);
    EXPECT_EQ(metric("strix_device_tokens_ignored_total"), 3);
    EXPECT_EQ(metric("strix_device_tokens_unknown_total"), 0);
    EXPECT_EQ(metric("strix_device_token_logins_total"), 2);
    stop_cleanly(*srv);
}

TEST_P(device_tokens, a_made_up_token_exempts_nothing_and_is_a_failure_of_its_address) {
    // One failure makes a name wait a minute; an address has 3 free failures.
    auto srv = start_with_metrics({"--login-free-failures", "1", "--login-lockout-failures", "2",
                                   "--address-free-failures", "3", "--address-lockout-failures", "5",
                                   "--login-backoff-ms", "60000", "--login-lockout-ms", "120000"});
    for (const char* name : {"victim", "carol"}) {
        chat_client setup(srv->port());
        ASSERT_NE(setup.login(name, name == std::string("victim") ? "first" : "pw"), 0u);
    }
    chat_client attacker;
    ASSERT_TRUE(attacker.connect_from(srv->port(), "127.0.0.5"));
    EXPECT_EQ(login_error(attacker, "victim", "x").code, error_code::wrong_password);
    EXPECT_EQ(login_error(attacker, "victim", "y").code, error_code::rate_limited);
    // A made-up token with the right password: no exemption from the name's wait.
    chat_client forger;
    ASSERT_TRUE(forger.connect_from(srv->port(), "127.0.0.7"));
    auto r = login_error(forger, "victim", "first", random_token());
    EXPECT_EQ(r.code, error_code::rate_limited);
    EXPECT_NE(r.reason.find("for this account"), std::string::npos) << r.reason;
    // Each made-up token is a failure of its address, even where the password is right: with 3
    // free failures, the 3rd is refused and the address waits.
    chat_client f2;
    ASSERT_TRUE(f2.connect_from(srv->port(), "127.0.0.8"));
    EXPECT_NE(f2.login("carol", "pw"), 0u);  // no token: no failure
    chat_client f3;
    ASSERT_TRUE(f3.connect_from(srv->port(), "127.0.0.8"));
    f3.send_login("carol", "pw", random_token());
    f3.expect(msg_type::login_res);
    chat_client f4;
    ASSERT_TRUE(f4.connect_from(srv->port(), "127.0.0.8"));
    f4.send_login("carol", "pw", random_token());
    f4.expect(msg_type::login_res);
    chat_client f5;
    ASSERT_TRUE(f5.connect_from(srv->port(), "127.0.0.8"));
    r = login_error(f5, "carol", "pw", random_token());
    EXPECT_EQ(r.code, error_code::rate_limited);
    EXPECT_NE(r.reason.find("from this address"), std::string::npos) << r.reason;
    // From now on the address waits, token or not, before any database work.
    r = login_error(f5, "carol", "pw");
    EXPECT_EQ(r.code, error_code::rate_limited);
    EXPECT_NE(r.reason.find("from this address"), std::string::npos) << r.reason;
    EXPECT_EQ(metric("strix_device_tokens_unknown_total"), 4);
    stop_cleanly(*srv);
}

TEST_P(device_tokens, a_flood_of_made_up_tokens_costs_no_more_password_checks) {
    auto srv = start_with_metrics({});
    {
        chat_client v(srv->port());
        ASSERT_NE(v.login("victim", "the-real-one"), 0u);
    }
    // 2,000 guesses from one address, each with a made-up token, in one write.
    bytes burst;
    for (int i = 0; i < 2000; ++i) {
        flatbuffers::FlatBufferBuilder fbb;
        const bytes t = random_token();
        fbb.Finish(proto::Createlogin_req(fbb, fbb.CreateString("victim"),
                                          fbb.CreateString("guess" + std::to_string(i)),
                                          fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(t.data()), t.size())));
        auto f = finish_frame(fbb, msg_type::login_req);
        burst.insert(burst.end(), f->data(), f->data() + f->size());
    }
    const long long jobs_before = metric("strix_job_queue_executed_total");
    chat_client a;
    ASSERT_TRUE(a.connect_from(srv->port(), "127.0.0.5"));
    ASSERT_TRUE(a.send_raw(burst));
    int wrong = 0, limited = 0;
    for (int i = 0; i < 2000; ++i) {
        auto f = a.recv(30s);
        ASSERT_TRUE(f.has_value()) << "reply " << i;
        auto* e = f->as<proto::error_res>();
        ASSERT_NE(e, nullptr) << type_name(f->type);
        if (e->code() == error_code::wrong_password)
            ++wrong;
        else if (e->code() == error_code::rate_limited)
            ++limited;
        else
            ADD_FAILURE() << proto::EnumNameerror_code(e->code());
    }
    const long long jobs = metric("strix_job_queue_executed_total") - jobs_before;
    std::printf("2000 made-up tokens: %d password checks, %d refused, %lld database jobs\n", wrong, limited, jobs);
    // No more password checks than the name's waits allow without tokens: 3 free, then one per
    // wait (1 s, 2 s, 4 s, ...; the burst is answered in a few seconds at most).
    EXPECT_LE(wrong, 8);
    // Each made-up token that reached the database (a lookup, no hash) was a failure of the
    // address: after its 20 free ones the address waits and the rest are refused on the shard.
    EXPECT_LE(jobs, 35);
    EXPECT_EQ(wrong + limited, 2000);
    stop_cleanly(*srv);
}

TEST_P(device_tokens, the_database_holds_the_tokens_hash_never_the_token) {
    auto srv = start(2);
    chat_client c(srv->port());
    const bytes token = c.login_for_token("ann", "pw");
    ASSERT_EQ(token.size(), 32u);
    c.close();
    stop_cleanly(*srv);
    const device_token_hash h = hash_of(token);
    EXPECT_EQ(rows_with_hash(GetParam(), db_url_, h.bytes), 1) << "the token's hash is not stored";
    EXPECT_EQ(rows_with_hash(GetParam(), db_url_, token), 0) << "the raw token is stored";
    auto store = open_store();
    auto rec = store->find_device_token(h);
    ASSERT_TRUE(rec.has_value());
    EXPECT_EQ(rec->account_name, "ann");
    // 30 days by default.
    EXPECT_EQ(rec->expires_at_us - rec->created_at_us, 30 * std::int64_t{86'400'000'000});
    if (GetParam() == backend::sqlite) {
        // Nowhere in the file or its write-ahead log, while the hash is (so the search works).
        const std::string file = db_url_.substr(7);
        EXPECT_FALSE(file_contains(file, token) || file_contains(file + "-wal", token));
        EXPECT_TRUE(file_contains(file, h.bytes) || file_contains(file + "-wal", h.bytes));
    }
}

TEST_P(device_tokens, with_device_tokens_off_none_is_handed_out_and_presented_ones_are_ignored) {
    auto srv = start_with_metrics({"--device-token-days", "0"});
    chat_client c(srv->port());
    c.send_login("ann", "pw", random_token());
    auto f = c.expect(msg_type::login_res);
    auto* r = f.as<proto::login_res>();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->device_token(), nullptr);
    EXPECT_EQ(metric("strix_device_tokens_unknown_total"), 0);
    stop_cleanly(*srv);
}

TEST_P(device_tokens, revoked_tokens_exempt_nothing_any_more) {
    auto srv = start_with_metrics({"--login-free-failures", "1", "--login-backoff-ms", "60000"});
    chat_client c(srv->port());
    const bytes token = c.login_for_token("ann", "pw");
    c.close();
    chat_client attacker;
    ASSERT_TRUE(attacker.connect_from(srv->port(), "127.0.0.5"));
    EXPECT_EQ(login_error(attacker, "ann", "guess").code, error_code::wrong_password);  // ann waits now
    // The operator revokes ann's tokens while the server runs.
    auto revoke = [&](const std::string& name) {
        const std::string log = dir_.path() + "/revoke-" + name + ".log";
        child tool("strix-chat-server", {"--db", db_url_, "--revoke-device-tokens", name}, log);
        const int st = tool.wait_exit(std::chrono::seconds(20));
        return std::make_pair(st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1, read_file(log));
    };
    auto [status, out] = revoke("ann");
    EXPECT_EQ(status, 0) << out;
    EXPECT_NE(out.find("revoked 1 device token of ann"), std::string::npos) << out;
    auto [missing_status, missing_out] = revoke("nobody");
    EXPECT_EQ(missing_status, 1) << missing_out;
    EXPECT_NE(missing_out.find("no account called 'nobody'"), std::string::npos) << missing_out;
    chat_client owner;
    ASSERT_TRUE(owner.connect_from(srv->port(), "127.0.0.9"));
    auto r = login_error(owner, "ann", "pw", token);
    EXPECT_EQ(r.code, error_code::rate_limited);
    EXPECT_NE(r.reason.find("for this account"), std::string::npos) << r.reason;
    EXPECT_EQ(metric("strix_device_tokens_unknown_total"), 1);
    stop_cleanly(*srv);
}

STRIX_CHAT_BACKENDS(device_tokens);

}  // namespace
