// History, resume and resume tokens over the wire (docs/protocol.md, "History and resume",
// "Resume tokens", "Retention"), on SQLite and PostgreSQL: what a client that reconnects gets is
// every message it missed, in order, or a gap, never part of it.
#include "chat_fixture.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace {

using namespace strix;
using namespace strix::test;
using proto::error_code;
using proto::msg_type;
using bytes = std::vector<std::byte>;

class history : public chat_test {
protected:
    // A login_req with a resume token (and a password, possibly empty).
    static bool send_resume_login(chat_client& c, const std::string& name, const bytes& token,
                                  const std::string& password = "") {
        flatbuffers::FlatBufferBuilder fbb;
        auto n = fbb.CreateString(name);
        auto p = fbb.CreateString(password);
        auto t = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(token.data()), token.size());
        fbb.Finish(proto::Createlogin_req(fbb, n, p, 0, t));
        return c.send(fbb, msg_type::login_req);
    }
    // The resume token of a login_res (empty: none).
    static bytes resume_token_of(const frame& f) {
        bytes out;
        auto* r = f.as<proto::login_res>();
        if (r && r->resume_token()) {
            const auto* b = reinterpret_cast<const std::byte*>(r->resume_token()->data());
            out.assign(b, b + r->resume_token()->size());
        }
        return out;
    }
    static bytes password_login(chat_client& c, const std::string& name) {
        c.send_login(name, "pw");
        auto f = c.expect(msg_type::login_res);
        bytes t = resume_token_of(f);
        EXPECT_EQ(t.size(), 32u) << "login_res carries a resume token";
        return t;
    }
    static void send_history(chat_client& c, std::uint64_t room, std::uint64_t before, std::uint64_t after,
                             std::uint32_t limit) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createhistory_req(fbb, room, before, after, limit));
        c.send(fbb, msg_type::history_req);
    }
    static void send_resume(chat_client& c, std::uint64_t room, std::uint64_t last_seq) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createresume_req(fbb, room, last_seq));
        c.send(fbb, msg_type::resume_req);
    }
    struct page {
        std::vector<std::uint64_t> seqs;
        std::vector<std::string> texts;
        bool more = false;
        std::uint64_t oldest = 0, last = 0;
    };
    static page history_page(chat_client& c, std::uint64_t room, std::uint64_t before, std::uint64_t after,
                             std::uint32_t limit) {
        send_history(c, room, before, after, limit);
        auto f = c.expect(msg_type::history_res);
        page p;
        auto* r = f.as<proto::history_res>();
        if (!r) return p;
        EXPECT_EQ(r->room_id(), room);
        if (r->messages())
            for (auto* m : *r->messages()) {
                p.seqs.push_back(m->seq());
                p.texts.push_back(m->text()->str());
                EXPECT_EQ(m->room_id(), room);
            }
        p.more = r->more();
        p.oldest = r->oldest_seq();
        p.last = r->last_seq();
        return p;
    }
    struct resumed {
        bool gap = false;
        std::vector<std::uint64_t> seqs;
        std::uint64_t to = 0, oldest = 0;
        int frames = 0;
    };
    static resumed resume(chat_client& c, std::uint64_t room, std::uint64_t last_seq) {
        send_resume(c, room, last_seq);
        resumed out;
        for (;;) {
            auto f = c.expect(msg_type::resume_res);
            auto* r = f.as<proto::resume_res>();
            if (!r) return out;
            ++out.frames;
            out.gap = r->status() == proto::resume_status::gap;
            out.to = r->to_seq();
            out.oldest = r->oldest_seq();
            if (r->messages())
                for (auto* m : *r->messages()) out.seqs.push_back(m->seq());
            if (!r->more()) return out;
        }
    }
    static std::vector<std::uint64_t> iota(std::uint64_t first, std::uint64_t last) {
        std::vector<std::uint64_t> v;
        for (std::uint64_t s = first; s <= last; ++s) v.push_back(s);
        return v;
    }
    // `n` messages from c, each acknowledged (its own chat_msg), others in the room must drain.
    static void say(chat_client& c, int n, const std::string& prefix) {
        for (int i = 0; i < n; ++i) {
            c.send_chat(prefix + std::to_string(i), static_cast<std::uint64_t>(i + 1));
            c.expect_chat();
        }
    }
};

TEST_P(history, pages_come_from_the_database_in_seq_order) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port());
    a.login("ann");
    b.login("ben");
    const auto room = a.create("log");
    say(a, 30, "m");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    auto p = history_page(b, room, 0, 0, 10);
    EXPECT_EQ(p.seqs, iota(21, 30));
    EXPECT_EQ(p.texts.front(), "m20");
    EXPECT_TRUE(p.more);
    EXPECT_EQ(p.oldest, 1u);
    EXPECT_EQ(p.last, 30u);
    p = history_page(b, room, 21, 0, 10);
    EXPECT_EQ(p.seqs, iota(11, 20));
    p = history_page(b, room, 11, 0, 0);  // limit 0: the default
    EXPECT_EQ(p.seqs, iota(1, 10));
    EXPECT_FALSE(p.more) << "nothing older";
    p = history_page(b, room, 0, 25, 10);
    EXPECT_EQ(p.seqs, iota(26, 30));
    EXPECT_FALSE(p.more);
    send_history(b, room, 5, 5, 10);
    b.expect_error(msg_type::history_req, error_code::bad_request);
    send_history(b, room + 256, 0, 0, 10);
    b.expect_error(msg_type::history_req, error_code::not_in_room);
    chat_client c(srv->port());
    c.login("cat");
    send_history(c, room, 0, 0, 10);
    c.expect_error(msg_type::history_req, error_code::not_in_room);  // members only
    // A request after a history_req is answered after it.
    send_history(b, room, 0, 0, 1);
    b.send_ping(7);
    b.expect(msg_type::history_res);
    b.expect(msg_type::pong_res);
    stop_cleanly(*srv);
}

TEST_P(history, a_reconnect_with_its_resume_token_gets_exactly_what_it_missed) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port());
    const bytes token = password_login(a, "ann");
    b.login("ben");
    const auto room = a.create("r");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    say(b, 5, "before");
    for (int i = 0; i < 5; ++i) a.expect_chat();
    a.close();  // ann saw 1..5
    b.expect_presence(room, "ann", false);
    say(b, 7, "away");  // 6..12

    chat_client a2(srv->port());
    ASSERT_TRUE(send_resume_login(a2, "ann", token));
    auto lf = a2.expect(msg_type::login_res);
    const bytes next = resume_token_of(lf);
    EXPECT_EQ(next.size(), 32u);
    EXPECT_NE(next, token) << "rotated";
    auto jf = a2.expect(msg_type::join_room_res);
    auto* j = jf.as<proto::join_room_res>();
    ASSERT_TRUE(j);
    EXPECT_EQ(j->last_seq(), 12u);
    b.expect_presence(room, "ann", true);
    // A live message before the resume: it is above the join point and comes live.
    b.send_chat("live", 1);
    b.expect_chat();
    EXPECT_EQ(a2.expect_chat().seq, 13u);
    auto r = resume(a2, room, 5);
    EXPECT_FALSE(r.gap);
    EXPECT_EQ(r.seqs, iota(6, 12)) << "everything missed, in order, nothing live twice";
    EXPECT_EQ(r.to, 12u);
    EXPECT_EQ(r.oldest, 1u);
    // Nothing missed: complete and empty.
    r = resume(a2, room, 13);
    EXPECT_FALSE(r.gap);
    EXPECT_TRUE(r.seqs.empty());

    // The used token is spent; a made-up one is refused; neither needed a password to fail.
    chat_client a3(srv->port());
    ASSERT_TRUE(send_resume_login(a3, "ann", token));
    a3.expect_error(msg_type::login_req, error_code::invalid_token);
    ASSERT_TRUE(send_resume_login(a3, "ann", bytes(32, std::byte{7})));
    a3.expect_error(msg_type::login_req, error_code::invalid_token);
    ASSERT_TRUE(send_resume_login(a3, "ben", next)) << "another account's token";
    a3.expect_error(msg_type::login_req, error_code::invalid_token);
    // With a password too, an invalid token falls back to the password.
    ASSERT_TRUE(send_resume_login(a3, "ann", token, "pw"));
    a3.expect(msg_type::login_res);
    stop_cleanly(*srv);
}

TEST_P(history, more_missed_than_the_bound_is_a_gap_not_a_part) {
    auto srv = start(2, {"--resume-max", "5"});
    chat_client a(srv->port()), b(srv->port());
    const bytes token = password_login(a, "ann");
    b.login("ben");
    const auto room = a.create("r");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    a.close();
    b.expect_presence(room, "ann", false);
    say(b, 8, "x");
    chat_client a2(srv->port());
    ASSERT_TRUE(send_resume_login(a2, "ann", token));
    a2.expect(msg_type::login_res);
    a2.expect(msg_type::join_room_res);
    auto r = resume(a2, room, 0);
    EXPECT_TRUE(r.gap) << "8 missed, bound 5";
    EXPECT_TRUE(r.seqs.empty());
    EXPECT_EQ(r.to, 8u);
    r = resume(a2, room, 3);
    EXPECT_FALSE(r.gap) << "5 missed: within the bound";
    EXPECT_EQ(r.seqs, iota(4, 8));
    // After a gap the client pages through history.
    auto p = history_page(a2, room, 9, 0, 50);
    EXPECT_EQ(p.seqs, iota(1, 8));
    stop_cleanly(*srv);
}

TEST_P(history, retention_keeps_the_newest_and_a_resume_into_deleted_messages_is_a_gap) {
    auto srv = start(2, {"--retention-max-per-room", "10", "--retention-interval-ms", "50"});
    chat_client a(srv->port()), b(srv->port());
    const bytes token = password_login(a, "ann");
    b.login("ben");
    const auto room = a.create("r");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    a.close();
    b.expect_presence(room, "ann", false);
    say(b, 30, "y");
    EXPECT_TRUE(eventually([&] { return history_page(b, room, 0, 0, 50).oldest == 21u; }))
        << "retention trims the room to its newest 10";
    EXPECT_EQ(history_page(b, room, 0, 0, 50).seqs, iota(21, 30));
    chat_client a2(srv->port());
    ASSERT_TRUE(send_resume_login(a2, "ann", token));
    a2.expect(msg_type::login_res);
    a2.expect(msg_type::join_room_res);
    auto r = resume(a2, room, 15);
    EXPECT_TRUE(r.gap) << "16..20 are deleted: not a partial answer";
    EXPECT_EQ(r.oldest, 21u);
    r = resume(a2, room, 25);
    EXPECT_FALSE(r.gap);
    EXPECT_EQ(r.seqs, iota(26, 30));
    stop_cleanly(*srv);
    EXPECT_EQ(open_store()->count_chat_logs(), 10u);
}

TEST_P(history, a_large_resume_comes_in_several_frames) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port());
    const bytes token = password_login(a, "ann");
    b.login("ben");
    const auto room = a.create("r");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    a.close();
    b.expect_presence(room, "ann", false);
    const std::string big(30000, 'z');
    for (int i = 0; i < 6; ++i) {
        b.send_chat(big, static_cast<std::uint64_t>(i + 1));
        b.expect_chat();
    }
    chat_client a2(srv->port());
    ASSERT_TRUE(send_resume_login(a2, "ann", token));
    a2.expect(msg_type::login_res);
    a2.expect(msg_type::join_room_res);
    auto r = resume(a2, room, 0);
    EXPECT_FALSE(r.gap);
    EXPECT_EQ(r.seqs, iota(1, 6));
    EXPECT_GE(r.frames, 3) << "180 KB of messages do not fit one frame";
    stop_cleanly(*srv);
}

TEST_P(history, retention_takes_its_policy_from_the_config_file) {
    const std::string cfg = dir_.path() + "/retention.toml";
    std::ofstream(cfg) << "retention-max-per-room = 3\nretention-interval-ms = 50\nretention-batch = 2\n";
    auto srv = start(2, {"--config", cfg});
    chat_client a(srv->port());
    a.login("ann");
    const auto room = a.create("r");
    say(a, 10, "z");
    EXPECT_TRUE(eventually([&] { return history_page(a, room, 0, 0, 50).oldest == 8u; }))
        << "each room keeps its newest 3";
    EXPECT_EQ(history_page(a, room, 0, 0, 50).seqs, iota(8, 10));
    stop_cleanly(*srv);
}

TEST_P(history, revoking_an_accounts_tokens_revokes_its_resume_tokens) {
    auto srv = start();
    chat_client a(srv->port());
    const bytes token = password_login(a, "ann");
    a.close();
    const std::string log = dir_.path() + "/revoke.log";
    child tool("strix-chat-server", {"--db", db_url_, "--revoke-device-tokens", "ann"}, log);
    const int st = tool.wait_exit(std::chrono::seconds(20));
    ASSERT_TRUE(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log);
    EXPECT_NE(read_file(log).find("revoked 1 resume token of ann"), std::string::npos) << read_file(log);
    chat_client a2(srv->port());
    ASSERT_TRUE(send_resume_login(a2, "ann", token));
    a2.expect_error(msg_type::login_req, error_code::invalid_token);
    stop_cleanly(*srv);
}

STRIX_CHAT_BACKENDS(history);

}  // namespace
