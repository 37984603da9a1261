// Bad input and abusive clients: malformed bodies and unknown types get bad_request and the
// connection stays; oversized frames close it; the rate limit refuses excess chat; a member that
// stops reading is disconnected while the others keep receiving everything.
#include "chat_fixture.hpp"

#include <atomic>
#include <thread>

using namespace strix;
using namespace strix::chat;
using namespace strix::test;
using proto::error_code;
using proto::msg_type;

namespace {

class limits : public chat_test {};

std::vector<std::byte> bytes_of(std::initializer_list<int> v) {
    std::vector<std::byte> b;
    for (int x : v) b.push_back(static_cast<std::byte>(x));
    return b;
}

TEST_P(limits, malformed_bodies_and_unknown_types_get_bad_request_and_the_connection_stays) {
    auto srv = start();
    chat_client a(srv->port());
    // A login_req whose root offset points past the end.
    a.send_raw(chat_client::raw_frame(static_cast<std::uint16_t>(msg_type::login_req),
                                      bytes_of({0xff, 0xff, 0, 0, 1, 2, 3, 4})));
    a.expect_error(msg_type::login_req, error_code::bad_request);
    // Empty body (shorter than a FlatBuffer root offset).
    a.send_raw(chat_client::raw_frame(static_cast<std::uint16_t>(msg_type::ping_req), {}));
    a.expect_error(msg_type::ping_req, error_code::bad_request);
    // Types the server does not take: a reply type, a push type, an unassigned number.
    for (std::uint16_t t : {std::uint16_t(2), std::uint16_t(100), std::uint16_t(77), std::uint16_t(0)}) {
        a.send_raw(chat_client::raw_frame(t, bytes_of({4, 0, 0, 0, 0, 0, 0, 0})));
        a.expect_error(static_cast<msg_type>(t), error_code::bad_request);
    }
    // Still open and working: log in, then a malformed chat_req in a room.
    a.login("ann");
    auto room = a.create("r");
    ASSERT_NE(room, 0u);
    a.send_raw(
        chat_client::raw_frame(static_cast<std::uint16_t>(msg_type::chat_req), bytes_of({8, 0, 0, 0, 0xaa, 0xbb})));
    a.expect_error(msg_type::chat_req, error_code::bad_request);
    a.send_chat("fine");
    EXPECT_EQ(a.expect_chat().seq, 1u) << "the malformed message took no seq";
    a.expect_nothing();
    stop_cleanly(*srv);
}

TEST_P(limits, a_frame_over_4_kib_before_login_closes_the_connection) {
    auto srv = start();
    chat_client a(srv->port());
    // A header announcing 5000 bytes: rejected on the header, before the body is buffered.
    std::vector<std::byte> head(frame_header_size);
    std::vector<std::byte> body(5000 - frame_header_size, std::byte{0});
    encode_header(head.data(), make_header(static_cast<std::uint16_t>(msg_type::login_req), body, false));
    ASSERT_TRUE(a.send_raw(head));
    // The server may say why before closing; either way the connection ends.
    auto f = a.recv(std::chrono::seconds(5));
    if (f) {
        EXPECT_EQ(f->type, msg_type::error_res);
        EXPECT_TRUE(wait_closed(a.fd(), std::chrono::seconds(5)));
    }
    // Exactly at the limit is fine (a 4096-byte frame is still a request, albeit a bad one).
    chat_client b(srv->port());
    std::vector<std::byte> body4k(4096 - frame_header_size, std::byte{0});
    ASSERT_TRUE(b.send_raw(chat_client::raw_frame(static_cast<std::uint16_t>(msg_type::login_req), body4k)));
    b.expect_error(msg_type::login_req, error_code::bad_request);
    EXPECT_TRUE(b.sync().empty());
    // After login the limit is 64 KiB: a 60 KB chat passes (see flows), 70000 bytes closes.
    chat_client c(srv->port());
    EXPECT_NE(c.login("after"), 0u);
    std::vector<std::byte> big_head(frame_header_size);
    std::vector<std::byte> big_body(70000 - frame_header_size, std::byte{0});
    encode_header(big_head.data(), make_header(static_cast<std::uint16_t>(msg_type::chat_req), big_body, false));
    ASSERT_TRUE(c.send_raw(big_head));
    EXPECT_TRUE(wait_closed(c.fd(), std::chrono::seconds(5)));
    // The server is unharmed.
    chat_client d(srv->port());
    EXPECT_NE(d.login("later"), 0u);
    stop_cleanly(*srv);
}

TEST_P(limits, chat_over_the_rate_limit_is_refused_and_not_broadcast) {
    // 3 messages at once, then one per 10 s: a burst of 6 is 3 accepted and 3 refused.
    auto srv = start(2, {"--chat-rate", "0.1", "--chat-burst", "3"});
    chat_client a(srv->port()), b(srv->port());
    a.login("ann");
    b.login("ben");
    auto room = a.create("r");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    for (int i = 1; i <= 6; ++i) a.send_chat("m" + std::to_string(i), static_cast<std::uint64_t>(i));
    int accepted = 0, limited = 0;
    std::vector<std::uint64_t> seqs;
    for (int i = 0; i < 6; ++i) {
        auto f = a.recv();
        ASSERT_TRUE(f);
        if (f->type == msg_type::chat_msg) {
            ++accepted;
            seqs.push_back(f->as<proto::chat_msg>()->client_seq());
        } else {
            ASSERT_EQ(f->type, msg_type::error_res);
            auto* e = f->as<proto::error_res>();
            EXPECT_EQ(e->code(), error_code::rate_limited);
            EXPECT_EQ(e->request(), msg_type::chat_req);
            ++limited;
        }
    }
    EXPECT_EQ(accepted, 3);
    EXPECT_EQ(limited, 3);
    EXPECT_EQ(seqs, (std::vector<std::uint64_t>{1, 2, 3})) << "the burst's first three pass";
    for (std::uint64_t s = 1; s <= 3; ++s) {
        auto l = b.expect_chat();
        EXPECT_EQ(l.seq, s);
        EXPECT_EQ(l.client_seq, s);
    }
    b.expect_nothing();
    stop_cleanly(*srv);
}

TEST_P(limits, a_member_that_stops_reading_is_disconnected_and_the_others_get_everything) {
    // A small output cap so the stalled member is cut quickly.
    auto srv = start(2, {"--chat-rate", "100000", "--chat-burst", "100000", "--max-queued", "262144",
                         "--stall-timeout-ms", "1000"});
    chat_client a(srv->port()), b(srv->port());
    chat_client slow(srv->port(), 4096);  // tiny receive buffer, and it never reads
    a.login("ann");
    b.login("ben");
    slow.login("sloth");
    auto room = a.create("r");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    slow.join(room);
    a.expect_member_event(msg_type::member_joined, room, "sloth");
    b.expect_member_event(msg_type::member_joined, room, "sloth");

    // ~300 messages of 30 KB: about 9 MB per member, far beyond what the stalled member's
    // socket buffers and its 256 KiB output cap can hold.
    const int n = sanitized ? 200 : 300;
    const std::string payload(30000, 'p');
    std::atomic<bool> b_ok{true};
    std::string b_problem;
    std::vector<chat_line> b_seen;
    std::atomic<int> b_count{0};
    bool b_saw_left = false;
    std::thread reader([&] {
        while (static_cast<int>(b_seen.size()) < n) {
            auto f = b.recv();
            if (!f) {
                b_problem = "connection lost after " + std::to_string(b_seen.size()) + " messages";
                b_ok = false;
                return;
            }
            if (f->type == msg_type::chat_msg) {
                auto l = to_line(*f->as<proto::chat_msg>());
                l.text = l.text == payload ? "ok" : "corrupt";
                b_seen.push_back(l);
                b_count = static_cast<int>(b_seen.size());
            } else if (f->type == msg_type::member_presence) {
                b_saw_left = true;
            } else {
                b_problem = "unexpected " + type_name(f->type);
                b_ok = false;
                return;
            }
        }
    });
    int a_got = 0;
    bool a_saw_left = false;
    for (int i = 1; i <= n; ++i) {
        // Paced to the reading member (at most two messages ahead of it), so only the stalled
        // member's backlog can grow.
        ASSERT_TRUE(eventually([&] { return b_count.load() >= i - 2 || !b_ok.load(); }));
        ASSERT_TRUE(b_ok.load()) << "the reading member: " << b_problem;
        ASSERT_TRUE(a.send_chat(payload, static_cast<std::uint64_t>(i)));
        // The sender reads its acks as it goes (it is a well-behaved client).
        for (;;) {
            auto f = a.recv();
            ASSERT_TRUE(f) << "sender lost its connection at message " << i;
            if (f->type == msg_type::member_presence) {
                a_saw_left = true;
                continue;
            }
            ASSERT_EQ(f->type, msg_type::chat_msg);
            EXPECT_EQ(f->as<proto::chat_msg>()->client_seq(), static_cast<std::uint64_t>(i));
            ++a_got;
            break;
        }
    }
    reader.join();
    ASSERT_TRUE(b_ok) << "the reading member: " << b_problem;
    ASSERT_EQ(b_seen.size(), static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(b_seen[static_cast<std::size_t>(i)].seq, static_cast<std::uint64_t>(i + 1));
        EXPECT_EQ(b_seen[static_cast<std::size_t>(i)].text, "ok");
    }
    EXPECT_EQ(a_got, n);
    // The stalled member was cut off: the room tells the others it is offline (it is still a
    // member: it did not leave) and no longer counts it online.
    if (!a_saw_left) a.expect_presence(room, "sloth", false);
    if (!b_saw_left) b.expect_presence(room, "sloth", false);
    auto rooms = a.list_online();
    ASSERT_EQ(rooms.size(), 1u);
    EXPECT_EQ(std::get<1>(rooms[0]), 3u);
    EXPECT_EQ(std::get<2>(rooms[0]), 2u);
    EXPECT_TRUE(wait_closed(slow.fd(), std::chrono::seconds(10))) << "the stalled member is disconnected";
    stop_cleanly(*srv);
}

STRIX_CHAT_BACKENDS(limits);

}  // namespace
