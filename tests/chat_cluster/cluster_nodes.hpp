#pragma once
// End-to-end helpers of the cluster tests that run real nodes (cluster_faults_test,
// cluster_stream_test): two strix-chat-server nodes on one PostgreSQL database and a
// redis-server, logins with resume tokens, members' received frames, and a look at Redis with
// hiredis. Included by one test file per executable (the helpers live in an unnamed namespace).
#include "../chat/chat_fixture.hpp"

#include <support/redis_server.hpp>

#include <hiredis/hiredis.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace strix;
using namespace strix::test;
using proto::msg_type;
using bytes = std::vector<std::byte>;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

class pg_environment : public ::testing::Environment {
public:
    void TearDown() override { stop_shared_pg_server(); }
};
const ::testing::Environment* const pg_registered = ::testing::AddGlobalTestEnvironment(new pg_environment);

inline std::vector<std::string> node_args(std::uint16_t redis_port, unsigned node) {
    return {"--cluster", "redis://127.0.0.1:" + std::to_string(redis_port), "--node-id", std::to_string(node)};
}

inline long long ms_since(clock_type::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t).count();
}

// One command on a fresh hiredis connection; the integer reply (or the integer of a two-element
// array reply), or -1.
inline long long redis_integer(std::uint16_t port, const std::vector<std::string>& args) {
    timeval tv{2, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
    long long n = -1;
    if (c != nullptr && c->err == 0) {
        std::vector<const char*> argv;
        std::vector<std::size_t> lens;
        for (const auto& a : args) {
            argv.push_back(a.data());
            lens.push_back(a.size());
        }
        auto* r =
            static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data()));
        if (r != nullptr && r->type == REDIS_REPLY_INTEGER) n = r->integer;
        if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_INTEGER)
            n = r->element[1]->integer;  // PUBSUB NUMSUB channel -> [channel, n]
        if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[0]->type == REDIS_REPLY_INTEGER)
            n = r->element[0]->integer;  // FCALL chat_publish -> [seq, epoch]
        if (r != nullptr) freeReplyObject(r);
    }
    if (c != nullptr) redisFree(c);
    return n;
}

inline long long subscribers(std::uint16_t port, std::uint64_t room) {
    return redis_integer(port, {"PUBSUB", "NUMSUB", "chat:{" + std::to_string(room) + "}"});
}

inline bool wait_subscribers(std::uint16_t port, std::uint64_t room, long long n,
                             std::chrono::milliseconds within = 10s) {
    const auto until = clock_type::now() + within;
    while (clock_type::now() < until) {
        if (subscribers(port, room) == n) return true;
        std::this_thread::sleep_for(5ms);
    }
    return false;
}

// The sum of "filled from the database: N messages" over a node's log lines, and the missing.
inline std::pair<std::uint64_t, std::uint64_t> refilled(const std::string& log) {
    // Parsed by hand: std::regex trips gcc 12's -Wmaybe-uninitialized under the sanitizers.
    static const std::string marker = "filled from the database: ";
    std::pair<std::uint64_t, std::uint64_t> n{0, 0};
    for (auto pos = log.find(marker); pos != std::string::npos; pos = log.find(marker, pos + 1)) {
        std::size_t used = 0;
        const std::string rest = log.substr(pos + marker.size(), 64);  // "N messages, M missing"
        n.first += std::stoull(rest, &used);
        const auto comma = rest.find(", ", used);
        if (comma != std::string::npos) n.second += std::stoull(rest.substr(comma + 2));
    }
    return n;
}

// What a member got of its room, in arrival order: chat_msgs, and gap notices (resume_res with
// status gap outside any resume_req: seqs up to to_seq are lost).
struct received {
    std::vector<chat_line> chats;
    std::vector<std::uint64_t> gap_notices;
    std::vector<std::uint64_t> seqs;  // every chat_msg's seq and every gap notice's to_seq, in order
    int errors = 0;                   // error_res (server_busy for a chat_req the backplane failed)

    // Reads frames until none came for `quiet`.
    void drain(chat_client& c, std::chrono::milliseconds quiet) {
        while (auto f = c.recv(quiet)) take(*f);
    }
    void take(const frame& f) {
        if (f.type == msg_type::chat_msg) {
            chats.push_back(to_line(*f.as<proto::chat_msg>()));
            seqs.push_back(chats.back().seq);
        } else if (f.type == msg_type::resume_res) {
            auto* r = f.as<proto::resume_res>();
            EXPECT_TRUE(r && r->status() == proto::resume_status::gap) << "only gap notices come unasked";
            if (r) {
                gap_notices.push_back(r->to_seq());
                seqs.push_back(r->to_seq());
            }
        } else if (f.type == msg_type::error_res) {
            ++errors;
        }
    }
    std::size_t own(std::uint64_t sender) const {
        std::size_t n = 0;
        for (const auto& l : chats) n += l.sender_id == sender;
        return n;
    }
};

inline void expect_increasing(const received& r, const char* who) {
    for (std::size_t i = 1; i < r.seqs.size(); ++i)
        EXPECT_LT(r.seqs[i - 1], r.seqs[i]) << who << ": seqs in order, each once (at " << i << ")";
}

// A login with a resume token instead of the password; the login_res's new token.
inline bytes token_login(chat_client& c, const std::string& name, const bytes& token) {
    flatbuffers::FlatBufferBuilder fbb;
    auto n = fbb.CreateString(name);
    auto p = fbb.CreateString("");
    auto t = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(token.data()), token.size());
    fbb.Finish(proto::Createlogin_req(fbb, n, p, 0, t));
    c.send(fbb, msg_type::login_req);
    auto f = c.expect(msg_type::login_res);
    bytes out;
    if (auto* r = f.as<proto::login_res>(); r && r->resume_token())
        out.assign(reinterpret_cast<const std::byte*>(r->resume_token()->data()),
                   reinterpret_cast<const std::byte*>(r->resume_token()->data()) + r->resume_token()->size());
    return out;
}

inline bytes password_login(chat_client& c, const std::string& name) {
    c.send_login(name, "pw");
    auto f = c.expect(msg_type::login_res);
    bytes out;
    if (auto* r = f.as<proto::login_res>(); r && r->resume_token())
        out.assign(reinterpret_cast<const std::byte*>(r->resume_token()->data()),
                   reinterpret_cast<const std::byte*>(r->resume_token()->data()) + r->resume_token()->size());
    EXPECT_EQ(out.size(), 32u) << "login_res carries a resume token";
    return out;
}

// Sends `n` messages "<prefix><i>" (client_seq first_seq + i) and waits for each one's
// acknowledgement (the sender's own chat_msg); other frames go to `r`.
inline void say(chat_client& c, std::uint64_t sender, received& r, const std::string& prefix, std::uint64_t n,
                std::uint64_t first_seq = 1) {
    for (std::uint64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(c.send_chat(prefix + std::to_string(first_seq + i), first_seq + i));
        const std::size_t before = r.own(sender);
        while (r.own(sender) == before) {
            auto f = c.recv(10s);
            ASSERT_TRUE(f) << "no acknowledgement for " << prefix << first_seq + i;
            r.take(*f);
        }
    }
}

struct two_nodes {
    explicit two_nodes(std::uint16_t redis_port, std::vector<std::string> extra = {})
        : db(shared_pg_server().create_database()),
          a(db, dir.path() + "/a.log", 2, with(node_args(redis_port, 1), extra)),
          b(db, dir.path() + "/b.log", 2, with(node_args(redis_port, 2), extra)) {}
    static std::vector<std::string> with(std::vector<std::string> v, const std::vector<std::string>& extra) {
        v.insert(v.end(), extra.begin(), extra.end());
        return v;
    }
    temp_dir dir;
    std::string db;
    server_process a, b;
};

}  // namespace
