// One room with members on several shards: every member receives every message exactly once
// and all members see the same order (the owner shard's seq), whichever shard they live on.
#include "chat_fixture.hpp"

#include <atomic>
#include <map>
#include <set>
#include <thread>

using namespace strix::test;
using proto::error_code;
using proto::msg_type;

namespace {

// (gcc 12 warns falsely about chained std::string operator+ at -O3; snprintf it is.)
std::string text_of(const std::string& sender, std::uint64_t k) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "from %s #%llu", sender.c_str(), static_cast<unsigned long long>(k));
    return buf;
}

std::string name_of(int i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "p%d", i);
    return buf;
}

class shards : public chat_test {};

TEST_P(shards, members_on_different_shards_see_the_same_order) {
    const unsigned n_shards = 3;
    auto srv = start(n_shards, {"--chat-rate", "100000", "--chat-burst", "100000"});
    const int n_clients = 12;
    const int per_client = sanitized ? 40 : 150;
    std::vector<std::unique_ptr<chat_client>> cs;
    std::vector<std::uint64_t> ids;
    std::vector<std::string> names;
    std::set<unsigned> shards_seen;
    for (int i = 0; i < n_clients; ++i) {
        cs.push_back(std::make_unique<chat_client>(srv->port()));
        names.push_back(name_of(i));
        ids.push_back(cs.back()->login(names.back()));
        // A room created by a client lives on the client's shard: its id reveals the shard.
        auto probe = cs.back()->create("probe" + std::to_string(i));
        shards_seen.insert(static_cast<unsigned>(probe & 0xff));
        cs.back()->send_leave();
        cs.back()->expect(msg_type::leave_room_res);
    }
    ASSERT_GE(shards_seen.size(), 2u) << "all clients landed on one shard; the test proves nothing";

    auto room = cs[0]->create("mesh");
    for (int i = 1; i < n_clients; ++i) {
        auto listed = cs[static_cast<std::size_t>(i)]->join(room);
        EXPECT_EQ(listed, std::vector<std::string>(names.begin(), names.begin() + i + 1)) << "members in join order";
        // Everyone already inside hears about the newcomer, in join order.
        for (int k = 0; k < i; ++k)
            cs[static_cast<std::size_t>(k)]->expect_member_event(msg_type::member_joined, room,
                                                                 names[static_cast<std::size_t>(i)]);
    }

    // Everybody sends at once and reads everything.
    const std::size_t total = static_cast<std::size_t>(n_clients * per_client);
    std::vector<std::vector<chat_line>> got(static_cast<std::size_t>(n_clients));
    std::atomic<int> failures{0};
    std::vector<std::thread> ts;
    for (int i = 0; i < n_clients; ++i) {
        ts.emplace_back([&, i] {
            auto& c = *cs[static_cast<std::size_t>(i)];
            auto& mine = got[static_cast<std::size_t>(i)];
            std::thread sender([&] {
                for (int k = 1; k <= per_client; ++k)
                    if (!c.send_chat(text_of(names[static_cast<std::size_t>(i)], static_cast<std::uint64_t>(k)),
                                     static_cast<std::uint64_t>(k)))
                        break;
            });
            while (mine.size() < total) {
                auto f = c.recv();
                if (!f || f->type != msg_type::chat_msg) {
                    ++failures;
                    break;
                }
                mine.push_back(to_line(*f->as<proto::chat_msg>()));
            }
            sender.join();
        });
    }
    for (auto& t : ts) t.join();
    ASSERT_EQ(failures.load(), 0);

    const auto& ref = got[0];
    ASSERT_EQ(ref.size(), total);
    for (std::size_t k = 0; k < total; ++k) EXPECT_EQ(ref[k].seq, k + 1) << "seq has no gaps";
    // Per sender, messages keep the order they were sent in.
    std::map<std::uint64_t, std::uint64_t> last_client_seq;
    for (auto& l : ref) {
        EXPECT_EQ(l.text, text_of(l.sender, l.client_seq));
        EXPECT_EQ(l.client_seq, last_client_seq[l.sender_id] + 1) << "sender " << l.sender;
        last_client_seq[l.sender_id] = l.client_seq;
    }
    EXPECT_EQ(last_client_seq.size(), static_cast<std::size_t>(n_clients));
    for (int i = 1; i < n_clients; ++i)
        EXPECT_TRUE(got[static_cast<std::size_t>(i)] == ref) << "client " << i << " saw a different sequence";
    for (auto& c : cs) c->expect_nothing(std::chrono::milliseconds(20));
    stop_cleanly(*srv);

    // Everything acknowledged is in the chat log, in the same order.
    auto store = open_store();
    auto history = store->room_history(room, total + 10);
    ASSERT_EQ(history.size(), total);
    for (std::size_t k = 0; k < total; ++k) {
        EXPECT_EQ(history[k].seq, ref[k].seq);
        EXPECT_EQ(history[k].text, ref[k].text);
        EXPECT_EQ(history[k].sender_id, ref[k].sender_id);
        EXPECT_EQ(history[k].sender_name, ref[k].sender);
        EXPECT_EQ(static_cast<std::uint64_t>(history[k].server_ts_us), ref[k].server_ts_us);
    }
}

STRIX_CHAT_BACKENDS(shards);

}  // namespace
