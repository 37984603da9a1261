// Random and mutated requests, 12,000 of them, from an anonymous and a logged-in connection:
// the server must answer every one with a well-formed frame (a reply or an error_res), keep both
// connections open (every frame is within the size limits), keep serving everyone else exactly,
// and stop cleanly afterwards.
#include "chat_fixture.hpp"

#include <map>
#include <random>

using namespace strix;
using namespace strix::chat;
using namespace strix::test;
using proto::msg_type;

namespace {

class fuzz : public chat_test {};

using body = std::vector<std::byte>;

body finished(flatbuffers::FlatBufferBuilder& fbb) {
    const auto* p = reinterpret_cast<const std::byte*>(fbb.GetBufferPointer());
    return body(p, p + fbb.GetSize());
}

std::string random_text(std::mt19937& rng, std::size_t max_len) {
    std::uniform_int_distribution<std::size_t> len(0, max_len);
    std::uniform_int_distribution<int> ch(0, 255);
    std::string s(len(rng), '\0');
    for (auto& c : s) c = static_cast<char>(ch(rng));
    return s;
}

/// A well-formed body of a random request type, with random field values (names that may or may
/// not validate, room ids that may or may not exist). Returns the type through `type`.
body valid_request(std::mt19937& rng, std::uint64_t known_room, msg_type& type) {
    flatbuffers::FlatBufferBuilder fbb;
    std::uniform_int_distribution<int> pick(0, 6);
    switch (pick(rng)) {
        case 0: {
            auto n = fbb.CreateString(random_text(rng, 40));
            auto p = fbb.CreateString(random_text(rng, 20));
            fbb.Finish(proto::Createlogin_req(fbb, n, p));
            type = msg_type::login_req;
            break;
        }
        case 1:
            fbb.Finish(proto::Createcreate_room_req(fbb, fbb.CreateString(random_text(rng, 80))));
            type = msg_type::create_room_req;
            break;
        case 2:
            fbb.Finish(proto::Createjoin_room_req(fbb, rng() % 2 ? known_room : (std::uint64_t(rng()) << 32 | rng())));
            type = msg_type::join_room_req;
            break;
        case 3:
            fbb.Finish(proto::Createleave_room_req(fbb));
            type = msg_type::leave_room_req;
            break;
        case 4:
            fbb.Finish(proto::Createchat_req(fbb, fbb.CreateString(random_text(rng, 200)), rng(), rng()));
            type = msg_type::chat_req;
            break;
        case 5:
            fbb.Finish(proto::Createlist_rooms_req(fbb));
            type = msg_type::list_rooms_req;
            break;
        default:
            fbb.Finish(proto::Createping_req(fbb, rng()));
            type = msg_type::ping_req;
            break;
    }
    return finished(fbb);
}

/// One fuzzed frame: a valid request with a few bytes flipped, random bytes, or a valid body under
/// a random type number.
std::vector<std::byte> fuzzed_frame(std::mt19937& rng, std::uint64_t known_room) {
    msg_type type = msg_type::none;
    body b;
    std::uint16_t wire_type = 0;
    switch (rng() % 10) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4: {  // mutated valid request
            b = valid_request(rng, known_room, type);
            wire_type = static_cast<std::uint16_t>(type);
            const auto flips = static_cast<unsigned>(rng() % 5);
            for (unsigned i = 0; i < flips && !b.empty(); ++i) b[rng() % b.size()] = static_cast<std::byte>(rng());
            break;
        }
        case 5:
        case 6:
        case 7: {  // random bytes under a request type
            static constexpr std::uint16_t types[] = {1, 3, 5, 7, 9, 11, 13};
            wire_type = types[rng() % std::size(types)];
            b.resize(rng() % 200);
            for (auto& x : b) x = static_cast<std::byte>(rng());
            break;
        }
        default:  // a valid body under any type number
            b = valid_request(rng, known_room, type);
            wire_type = static_cast<std::uint16_t>(rng() % 120u);
            break;
    }
    return chat_client::raw_frame(wire_type, b);
}

/// True when the frame is one the server may send and its body verifies as that table.
bool well_formed(const frame& f) {
    switch (f.type) {
        case msg_type::login_res: return f.as<proto::login_res>() != nullptr;
        case msg_type::create_room_res: return f.as<proto::create_room_res>() != nullptr;
        case msg_type::join_room_res: return f.as<proto::join_room_res>() != nullptr;
        case msg_type::leave_room_res: return f.as<proto::leave_room_res>() != nullptr;
        case msg_type::list_rooms_res: return f.as<proto::list_rooms_res>() != nullptr;
        case msg_type::pong_res: return f.as<proto::pong_res>() != nullptr;
        case msg_type::chat_msg: return f.as<proto::chat_msg>() != nullptr;
        case msg_type::member_joined: return f.as<proto::member_joined>() != nullptr;
        case msg_type::member_left: return f.as<proto::member_left>() != nullptr;
        case msg_type::error_res: {
            const auto* e = f.as<proto::error_res>();
            return e != nullptr && e->reason() != nullptr && e->reason()->size() > 0;
        }
        default: return false;
    }
}

TEST_P(fuzz, random_and_mutated_requests_get_well_formed_answers_and_break_nothing) {
    auto srv = start();
    // Bystanders in their own room: they must see exactly their own traffic throughout.
    chat_client ann(srv->port()), ben(srv->port());
    ann.login("ann");
    ben.login("ben");
    const auto room = ann.create("quiet");
    ben.join(room);
    ann.expect_member_event(msg_type::member_joined, room, "ben");

    chat_client anon(srv->port()), member(srv->port());
    member.login("fuzzer");
    std::mt19937 rng(20261121);
    // Rounds of 1,500 frames per connection, read back between rounds: the replies of one round
    // stay below the session's high-water mark, so the server never has to pause reading us.
    constexpr int rounds = 4, frames_each = 1500;
    std::map<msg_type, int> seen;
    for (int round = 0; round < rounds; ++round) {
        for (chat_client* c : {&anon, &member}) {
            for (int i = 0; i < frames_each; ++i) ASSERT_TRUE(c->send_raw(fuzzed_frame(rng, room))) << "frame " << i;
            // The pong proves every fuzzed frame was handled; everything before it must be well formed.
            const auto replies = c->sync(0xF00D + static_cast<std::uint64_t>(round));
            if (HasFailure()) {
                FAIL() << "round " << round << ", " << (c == &anon ? "anonymous" : "logged-in")
                       << " connection; server log:\n"
                       << srv->log();
            }
            ASSERT_FALSE(replies.empty());
            for (const frame& f : replies) {
                EXPECT_TRUE(well_formed(f)) << "malformed or unexpected " << type_name(f.type);
                ++seen[f.type];
            }
        }
    }
    for (const auto& [t, n] : seen) std::printf("fuzz: %d x %s\n", n, type_name(t).c_str());
    EXPECT_GT(seen[msg_type::error_res], 100) << "the fuzzed requests were mostly refused";

    // The bystanders' room still works exactly; whatever the fuzzers joined or said there is
    // skipped, but ann's own message must arrive once, in order, to both.
    ann.send_chat("still here", 1);
    for (chat_client* c : {&ann, &ben}) {
        bool got = false;
        for (int i = 0; i < 5000 && !got; ++i) {
            auto f = c->recv();
            ASSERT_TRUE(f.has_value()) << "no chat_msg";
            ASSERT_TRUE(well_formed(*f)) << type_name(f->type);
            if (f->type != msg_type::chat_msg) continue;
            const auto line = to_line(*f->as<proto::chat_msg>());
            got = line.text == "still here" && line.sender == "ann";
        }
        EXPECT_TRUE(got);
    }
    stop_cleanly(*srv);
}

// Garbage on the wire, headers included: each connection sends random bytes (sometimes after a
// valid login). The server may answer or close, but every frame it sends is well formed, every
// connection ends one way or the other within the timeout, and a fresh client is served normally.
TEST_P(fuzz, random_bytes_on_the_wire_never_take_the_server_down) {
    auto srv = start();
    std::mt19937 rng(7);
    constexpr int connections = 200;
    std::vector<std::unique_ptr<chat_client>> clients;
    for (int i = 0; i < connections; ++i) {
        clients.push_back(std::make_unique<chat_client>(srv->port()));
        if (i % 4 == 0) clients.back()->login("wire" + std::to_string(i));
        std::vector<std::byte> junk(1 + rng() % 300);
        for (auto& b : junk) b = static_cast<std::byte>(rng());
        ASSERT_TRUE(clients.back()->send_raw(junk));
    }
    // Watch all of them until the server has closed nearly every one (a few may hold a partial
    // frame and stay open) or 10 s pass; whatever arrives before a close must be well formed.
    int closed = 0, answered = 0;
    std::vector<bool> done(connections, false);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (closed < connections - 10 && std::chrono::steady_clock::now() < deadline) {
        std::vector<pollfd> fds;
        std::vector<int> who;
        for (int i = 0; i < connections; ++i) {
            if (done[static_cast<std::size_t>(i)]) continue;
            fds.push_back({clients[static_cast<std::size_t>(i)]->fd(), POLLIN, 0});
            who.push_back(i);
        }
        if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
        for (std::size_t k = 0; k < fds.size(); ++k) {
            if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            auto& c = *clients[static_cast<std::size_t>(who[k])];
            char byte;
            if (::recv(c.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) {
                done[static_cast<std::size_t>(who[k])] = true;
                ++closed;
                continue;
            }
            auto f = c.recv(std::chrono::seconds(5));
            ASSERT_TRUE(f.has_value()) << "connection " << who[k] << ": a partial frame";
            EXPECT_TRUE(well_formed(*f)) << "connection " << who[k] << ": " << type_name(f->type);
            ++answered;
        }
    }
    std::printf("wire fuzz: %d of %d connections closed by the server, %d frames answered\n", closed, connections,
                answered);
    // A random 12-byte header almost never passes: its length field alone is over the limit for
    // nearly every draw, and a bad header closes the connection.
    EXPECT_GT(closed, 150);
    chat_client fresh(srv->port());
    fresh.login("after_the_noise");
    EXPECT_NE(fresh.create("calm"), 0u);
    fresh.send_chat("hello", 1);
    EXPECT_EQ(fresh.expect_chat().text, "hello");
    stop_cleanly(*srv);
}

STRIX_CHAT_BACKENDS(fuzz);

}  // namespace
