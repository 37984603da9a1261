// The hardening's throttle rows, rerun: failed logins back off, then lock out, answered without
// hashing; per source address too; the password-hash queue is bounded (server_busy beyond it); an
// unknown account takes as long to refuse as a wrong password; room changes are rate limited like
// chat; and 2,000 join+leave pairs in under a second no longer send every member 4,000 notices.
#include "chat_fixture.hpp"
#include "metrics_scrape.hpp"

using namespace strix;
using namespace strix::chat;
using namespace strix::test;
using namespace std::chrono_literals;
using proto::error_code;
using proto::msg_type;

namespace {

class throttle : public chat_test {
protected:
    std::unique_ptr<server_process> start_with_metrics(std::vector<std::string> extra, unsigned shards = 2) {
        mport_ = free_port();
        extra.push_back("--metrics-port");
        extra.push_back(std::to_string(mport_));
        return start(shards, std::move(extra));
    }
    long long metric(const std::string& name) { return metric_value(http_get(mport_, "/metrics"), name); }
    std::uint16_t mport_ = 0;
};

// The error_res for a login: its code, and its reason.
std::pair<error_code, std::string> login_error(chat_client& c, const std::string& name, const std::string& pw) {
    c.send_login(name, pw);
    auto f = c.expect(msg_type::error_res);
    auto* e = f.as<proto::error_res>();
    if (!e) return {error_code::none, ""};
    EXPECT_EQ(e->request(), msg_type::login_req);
    return {e->code(), e->reason() ? e->reason()->str() : ""};
}

TEST_P(throttle, failed_logins_back_off_then_lock_out_and_refusals_hash_nothing) {
    auto srv = start_with_metrics({"--login-free-failures", "2", "--login-lockout-failures", "4", "--login-backoff-ms",
                                   "400", "--login-lockout-ms", "2500"});
    chat_client c(srv->port());
    ASSERT_NE(c.login("ann", "right"), 0u);
    c.close();
    chat_client x(srv->port());
    // Failures 1 and 2 are free; the 2nd earns a 400 ms wait.
    EXPECT_EQ(login_error(x, "ann", "wrong").first, error_code::wrong_password);
    EXPECT_EQ(login_error(x, "ann", "wrong").first, error_code::wrong_password);
    // Every password check is a database job (the pool counts one as done just after its reply).
    EXPECT_TRUE(eventually([&] { return metric("strix_job_queue_executed_total") == 3; }));
    auto [code, why] = login_error(x, "ann", "wrong");
    EXPECT_EQ(code, error_code::rate_limited);
    EXPECT_NE(why.find("for this account"), std::string::npos) << why;
    // Waiting helps: the 3rd failure earns 800 ms.
    std::this_thread::sleep_for(450ms);
    EXPECT_EQ(login_error(x, "ann", "wrong").first, error_code::wrong_password);
    EXPECT_EQ(login_error(x, "ann", "right").first, error_code::rate_limited) << "even the right password waits";
    std::this_thread::sleep_for(850ms);
    // The 4th failure locks the account out for 2.5 s: the right password is refused unhashed.
    EXPECT_EQ(login_error(x, "ann", "wrong").first, error_code::wrong_password);
    EXPECT_TRUE(eventually([&] { return metric("strix_job_queue_executed_total") == 5; }))
        << "refused logins ran a password check";
    for (int i = 0; i < 5; ++i) EXPECT_EQ(login_error(x, "ann", "right").first, error_code::rate_limited);
    EXPECT_EQ(metric("strix_job_queue_executed_total"), 5) << "a locked-out login reached the database";
    EXPECT_EQ(metric("strix_login_throttled_total"), 7);
    // Other accounts are not affected.
    chat_client other(srv->port());
    EXPECT_NE(other.login("ben"), 0u);
    // After the lockout the right password works, and clears the account's failures.
    std::this_thread::sleep_for(2600ms);
    EXPECT_NE(x.login("ann", "right"), 0u);
    chat_client y(srv->port());
    EXPECT_EQ(login_error(y, "ann", "wrong").first, error_code::wrong_password);
    EXPECT_EQ(login_error(y, "ann", "wrong").first, error_code::wrong_password)
        << "failures start over after a success";
    stop_cleanly(*srv);
}

// Row: "2,000 wrong-password logins for one account from 10 connections: all answered, no
// throttle; 57-96 % of both cores on argon2id for 78-150 s; a real user's login takes 0.4-2.9 s".
TEST_P(throttle, two_thousand_wrong_passwords_for_one_account_cost_a_few_hashes_and_delay_nobody) {
    auto srv = start_with_metrics({"--password-cost", "interactive"});
    {
        chat_client v(srv->port());
        ASSERT_NE(v.login("victim", "the-real-one"), 0u);
    }
    std::vector<chat_client> attackers(10);
    std::vector<std::byte> burst;
    for (int i = 0; i < 200; ++i) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(
            proto::Createlogin_req(fbb, fbb.CreateString("victim"), fbb.CreateString("guess" + std::to_string(i))));
        auto f = finish_frame(fbb, msg_type::login_req);
        burst.insert(burst.end(), f->data(), f->data() + f->size());
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& a : attackers) {
        ASSERT_TRUE(a.connect(srv->port()));
        ASSERT_TRUE(a.send_raw(burst));
    }
    // Meanwhile a real user, from another address, logs in as fast as ever.
    chat_client user;
    ASSERT_TRUE(user.connect_from(srv->port(), "127.0.0.9"));
    const auto u0 = std::chrono::steady_clock::now();
    EXPECT_NE(user.login("alice", "pw"), 0u);
    const double user_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - u0).count();
    int wrong = 0, limited = 0;
    for (auto& a : attackers) {
        for (int i = 0; i < 200; ++i) {
            auto f = a.recv(30s);
            ASSERT_TRUE(f.has_value()) << "reply " << i;
            ASSERT_EQ(f->type, msg_type::error_res);
            auto* e = f->as<proto::error_res>();
            ASSERT_NE(e, nullptr);
            if (e->code() == error_code::wrong_password)
                ++wrong;
            else if (e->code() == error_code::rate_limited)
                ++limited;
            else
                ADD_FAILURE() << proto::EnumNameerror_code(e->code());
        }
    }
    const double all_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("2000 wrong passwords answered in %.2f s: %d checked, %d refused unhashed; a real login took %.0f ms\n",
                all_s, wrong, limited, user_ms);
    EXPECT_EQ(wrong + limited, 2000);
    // The first attempts of the ten connections run at once (3 are free, and nothing holds a key
    // before it has failures); from then on one at a time, and the 1 s wait outlasts the burst.
    EXPECT_LE(wrong, 20) << "the throttle let the guesses through to argon2id";
    EXPECT_LT(user_ms, 2000.0);
    EXPECT_LT(all_s, 20.0);
    stop_cleanly(*srv);
}

TEST_P(throttle, failed_logins_from_one_address_back_off_across_accounts) {
    auto srv = start_with_metrics({"--no-auto-register", "--address-free-failures", "3", "--address-lockout-failures",
                                   "5", "--login-backoff-ms", "1500", "--login-lockout-ms", "5000"});
    chat_client a;
    ASSERT_TRUE(a.connect_from(srv->port(), "127.0.0.7"));
    // Three unknown names: each a failure of the address (and of a different account).
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(login_error(a, "nobody" + std::to_string(i), "pw").first, error_code::unknown_account);
    auto [code, why] = login_error(a, "nobody9", "pw");
    EXPECT_EQ(code, error_code::rate_limited);
    EXPECT_NE(why.find("from this address"), std::string::npos) << why;
    // A new connection from the same address waits too; another address does not.
    chat_client same;
    ASSERT_TRUE(same.connect_from(srv->port(), "127.0.0.7"));
    EXPECT_EQ(login_error(same, "nobody10", "pw").first, error_code::rate_limited);
    chat_client elsewhere;
    ASSERT_TRUE(elsewhere.connect_from(srv->port(), "127.0.0.8"));
    EXPECT_EQ(login_error(elsewhere, "nobody11", "pw").first, error_code::unknown_account);
    EXPECT_EQ(metric("strix_login_throttled_total"), 2);
    stop_cleanly(*srv);
}

TEST_P(throttle, logins_beyond_the_hash_queue_get_server_busy) {
    // Real argon2id (64 MiB, tens of ms each) on one worker, two logins pending at most.
    auto srv = start_with_metrics({"--password-cost", "interactive", "--db-workers", "1", "--login-queue", "2"});
    std::vector<chat_client> cs(10);
    for (auto& c : cs) ASSERT_TRUE(c.connect(srv->port()));
    for (std::size_t i = 0; i < cs.size(); ++i) cs[i].send_login("user" + std::to_string(i), "pw");
    int ok = 0, busy = 0;
    for (auto& c : cs) {
        auto f = c.recv(30s);
        ASSERT_TRUE(f.has_value());
        if (f->type == msg_type::login_res) {
            ++ok;
        } else {
            ASSERT_EQ(f->type, msg_type::error_res);
            auto* e = f->as<proto::error_res>();
            ASSERT_NE(e, nullptr);
            EXPECT_EQ(e->code(), error_code::server_busy) << e->reason()->str();
            ++busy;
        }
    }
    EXPECT_EQ(ok + busy, 10);
    EXPECT_GE(ok, 2);
    EXPECT_GE(busy, 4) << "ten logins at once on a queue of two";
    EXPECT_EQ(metric("strix_login_queue_full_total"), busy);
    EXPECT_EQ(metric("strix_login_hashes_pending"), 0);
    // The queue drained: a login goes through again.
    chat_client late(srv->port());
    EXPECT_NE(late.login("late"), 0u);
    stop_cleanly(*srv);
}

TEST_P(throttle, an_unknown_account_takes_as_long_to_refuse_as_a_wrong_password) {
    // The account exists with a real (interactive) hash; the server verifies unknown names against
    // a dummy hash of the same cost.
    {
        auto store = open_chat_store(db_url_, password_policy::interactive());
        ASSERT_EQ(store->login("ann", "right", true).outcome, login_outcome::created);
    }
    auto srv = start(2, {"--password-cost", "interactive", "--no-auto-register", "--login-free-failures", "200",
                         "--login-lockout-failures", "240", "--address-free-failures", "200",
                         "--address-lockout-failures", "240"});
    chat_client c(srv->port());
    // The fastest of several replies, interleaved: a busy machine (ctest runs other tests that hash
    // beside this one) only adds time, so the minimum is each path's own cost. Medians were not
    // enough: with both cores loaded one run measured 104.5 ms against 48.6 ms. Even the minimum
    // was not, once: beside this test's twin on the other back end, hashing in step with it, every
    // unknown name's reply met the twin's hash (fastest 141.4 ms against 73.5). So the order
    // alternates within a round, and a round whose figures are out of bounds is measured again,
    // three rounds at most. Noise only adds time, so an unknown name answered fast (no dummy
    // check) fails every round.
    auto time_ms = [](auto&& reply) {
        const auto t0 = std::chrono::steady_clock::now();
        reply();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    double wrong = 0, unknown = 0;
    for (int round = 0; round < 3; ++round) {
        wrong = 1e9;
        unknown = 1e9;
        for (int i = 0; i < 9; ++i) {
            auto wrong_reply = [&] { EXPECT_EQ(login_error(c, "ann", "wrong").first, error_code::wrong_password); };
            auto unknown_reply = [&] {
                EXPECT_EQ(login_error(c, "nobody" + std::to_string(round * 9 + i), "wrong").first,
                          error_code::unknown_account);
            };
            if (i % 2 == 0) {
                wrong = std::min(wrong, time_ms(wrong_reply));
                unknown = std::min(unknown, time_ms(unknown_reply));
            } else {
                unknown = std::min(unknown, time_ms(unknown_reply));
                wrong = std::min(wrong, time_ms(wrong_reply));
            }
        }
        std::printf("round %d, fastest reply: wrong password %.1f ms, unknown account %.1f ms\n", round + 1, wrong,
                    unknown);
        if (wrong > 5.0 && unknown > 0.6 * wrong && unknown < 1.7 * wrong) break;
    }
    EXPECT_GT(wrong, 5.0) << "a wrong password was not checked against argon2id";
    // Without the dummy check an unknown name answers in about 1 ms against tens of ms.
    EXPECT_GT(unknown, 0.6 * wrong) << "an unknown account is answered faster: the reply time tells names apart";
    EXPECT_LT(unknown, 1.7 * wrong);
    stop_cleanly(*srv);
}

TEST_P(throttle, room_changes_are_rate_limited_per_session) {
    auto srv = start_with_metrics({"--room-rate", "2", "--room-burst", "3"});
    chat_client owner(srv->port()), u(srv->port());
    owner.login("owner");
    u.login("mover");
    auto room = owner.create("r");
    for (int i = 0; i < 3; ++i) {
        u.join(room);
        u.send_leave();
        u.expect(msg_type::leave_room_res);
    }
    u.send_join(room);
    u.expect_error(msg_type::join_room_req, error_code::rate_limited);
    u.send_create("mine");
    u.expect_error(msg_type::create_room_req, error_code::rate_limited);
    u.send_leave();
    u.expect_error(msg_type::leave_room_req, error_code::not_in_room);
    EXPECT_EQ(metric("strix_room_rate_limited_total"), 2);
    std::this_thread::sleep_for(600ms);  // one token back at 2 per second
    u.join(room);
    stop_cleanly(*srv);
}

// Counts member notices arriving at c until `quiet` passes with nothing, returning them in order.
std::vector<msg_type> drain_notices(chat_client& c, std::chrono::milliseconds quiet) {
    std::vector<msg_type> got;
    while (auto f = c.recv(quiet)) {
        if (f->type == msg_type::member_joined || f->type == msg_type::member_left) got.push_back(f->type);
    }
    return got;
}

// Row: "2,000 join+leave pairs in under a second: every member of the room gets 4,000 notices".
// With the room-change rate out of the way, coalescing alone: a join and leave within the notice
// delay send nothing.
TEST_P(throttle, two_thousand_join_leave_pairs_send_the_members_almost_no_notices) {
    auto srv = start_with_metrics({"--room-rate", "1000000", "--room-burst", "1000000"});
    chat_client churner(srv->port());
    churner.login("churner");
    // A room on the other shard than the churner's session: every join and leave crosses the
    // mesh both ways (a room created by a session lives on that session's shard).
    const unsigned churner_shard = static_cast<unsigned>(churner.create("probe") & 0xff);
    churner.send_leave();
    churner.expect(msg_type::leave_room_res);
    std::vector<std::unique_ptr<chat_client>> observers;
    std::uint64_t room = 0;
    for (int i = 0; i < 32 && room == 0; ++i) {
        observers.push_back(std::make_unique<chat_client>(srv->port()));
        observers.back()->login("observer" + std::to_string(i));
        auto r = observers.back()->create("busy" + std::to_string(i));
        if ((r & 0xff) != churner_shard) room = r;
    }
    ASSERT_NE(room, 0u) << "every session landed on the churner's shard";
    chat_client& o = *observers.back();
    std::vector<std::byte> burst;
    for (int i = 0; i < 2000; ++i) {
        flatbuffers::FlatBufferBuilder j;
        j.Finish(proto::Createjoin_room_req(j, room));
        auto jf = finish_frame(j, msg_type::join_room_req);
        burst.insert(burst.end(), jf->data(), jf->data() + jf->size());
        flatbuffers::FlatBufferBuilder l;
        l.Finish(proto::Createleave_room_req(l));
        auto lf = finish_frame(l, msg_type::leave_room_req);
        burst.insert(burst.end(), lf->data(), lf->data() + lf->size());
    }
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(churner.send_raw(burst));
    for (int i = 0; i < 2000; ++i) {
        churner.expect(msg_type::join_room_res);
        churner.expect(msg_type::leave_room_res);
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto notices = drain_notices(o, 500ms);
    std::printf("2000 join+leave pairs in %.2f s; the observer got %zu notices\n", secs, notices.size());
    // A notice can only escape when the 100 ms delay ends between a join and its leave: at most
    // one pair per delay.
    const auto bound = static_cast<std::size_t>(2 * (secs * 10 + 2));
    EXPECT_LE(notices.size(), std::min<std::size_t>(bound, 200)) << "churn reached the members";
    // What does arrive is consistent: every member_joined is followed by its member_left.
    ASSERT_EQ(notices.size() % 2, 0u);
    for (std::size_t i = 0; i < notices.size(); i += 2) {
        EXPECT_EQ(notices[i], msg_type::member_joined);
        EXPECT_EQ(notices[i + 1], msg_type::member_left);
    }
    EXPECT_EQ(metric("strix_member_notices_coalesced_total"), static_cast<long long>(2000 - notices.size() / 2));
    EXPECT_TRUE(o.sync().empty());
    stop_cleanly(*srv);
}

// The same churn at the default room-change rate: most joins are refused outright.
TEST_P(throttle, two_thousand_join_leave_pairs_at_the_default_rate_are_mostly_refused) {
    auto srv = start_with_metrics({});
    chat_client o(srv->port()), churner(srv->port());
    o.login("observer");
    churner.login("churner");
    auto room = o.create("busy");
    std::vector<std::byte> burst;
    for (int i = 0; i < 2000; ++i) {
        flatbuffers::FlatBufferBuilder j;
        j.Finish(proto::Createjoin_room_req(j, room));
        auto jf = finish_frame(j, msg_type::join_room_req);
        burst.insert(burst.end(), jf->data(), jf->data() + jf->size());
        flatbuffers::FlatBufferBuilder l;
        l.Finish(proto::Createleave_room_req(l));
        auto lf = finish_frame(l, msg_type::leave_room_req);
        burst.insert(burst.end(), lf->data(), lf->data() + lf->size());
    }
    ASSERT_TRUE(churner.send_raw(burst));
    int joined = 0, limited = 0;
    for (int i = 0; i < 2000; ++i) {
        auto f = churner.recv(10s);
        ASSERT_TRUE(f.has_value()) << "pair " << i;
        if (f->type == msg_type::join_room_res) {
            ++joined;
            churner.expect(msg_type::leave_room_res);
            continue;
        }
        ASSERT_EQ(f->type, msg_type::error_res) << "pair " << i;
        auto* e = f->as<proto::error_res>();
        ASSERT_NE(e, nullptr);
        EXPECT_EQ(e->code(), error_code::rate_limited);
        ++limited;
        churner.expect_error(msg_type::leave_room_req, error_code::not_in_room);
    }
    EXPECT_EQ(joined + limited, 2000);
    EXPECT_LE(joined, 20) << "burst 10 plus 5 per second";
    auto notices = drain_notices(o, 500ms);
    EXPECT_LE(notices.size(), static_cast<std::size_t>(2 * joined));
    EXPECT_EQ(metric("strix_room_rate_limited_total"), limited);
    stop_cleanly(*srv);
}

TEST_P(throttle, a_delayed_member_joined_still_comes_before_the_newcomers_words_and_in_time) {
    auto srv = start(2);
    chat_client o(srv->port()), b(srv->port()), c(srv->port());
    o.login("observer");
    b.login("ben");
    c.login("cat");
    auto room = o.create("r");
    // Join and speak at once: the notice waits for no timer, it goes out ahead of the message.
    b.join(room);
    b.send_chat("hello");
    b.expect_chat();
    o.expect_member_event(msg_type::member_joined, room, "ben");
    EXPECT_EQ(o.expect_chat().text, "hello");
    // Join and stay quiet: the notice comes after the delay (100 ms by default).
    const auto t0 = std::chrono::steady_clock::now();
    c.join(room);
    o.expect_member_event(msg_type::member_joined, room, "cat");
    b.expect_member_event(msg_type::member_joined, room, "cat");
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    // A leave after the join's notice went out is announced as before.
    c.send_leave();
    c.expect(msg_type::leave_room_res);
    o.expect_member_event(msg_type::member_left, room, "cat");
    b.expect_member_event(msg_type::member_left, room, "cat");
    EXPECT_TRUE(o.sync().empty());
    stop_cleanly(*srv);
}

STRIX_CHAT_BACKENDS(throttle);

}  // namespace
