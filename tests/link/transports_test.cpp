// The transport table as a socket sees it: an address is taken by its scheme (tcp, ipc, inproc)
// and refused otherwise, and one socket's transports close and pause together.
#include "link/link_fixture.hpp"

#include <strix/link/socket.hpp>

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace {

using namespace strix;
using namespace strix::test;
using link::socket_type;
using strs = std::vector<std::string>;

std::string inproc_address(const char* what) {
    return std::string("inproc://transports-") + what + "-" + std::to_string(::getpid());
}

// What bind or connect threw, or "" when it did not throw std::invalid_argument.
template <class F>
std::string refusal(F&& f) {
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

TEST(link_transports, an_address_without_a_known_scheme_is_refused_naming_the_schemes) {
    link_env env;
    auto& s = env.make(0, socket_type::pull);
    temp_dir dir;
    // unix:// and bare paths name Unix sockets to strix::net's endpoint::parse; link takes only
    // its table's schemes, as libzmq does.
    const strs refused = {"unix://" + dir.path() + "/u.sock", dir.path() + "/p.sock", "udp://1.2.3.4:5",
                          "tcp:127.0.0.1:5", ""};
    for (const std::string& a : refused) {
        for (bool bind : {true, false}) {
            const std::string why = refusal([&] {
                env.on(0, [&] {
                    if (bind)
                        s.bind(a);
                    else
                        s.connect(a);
                });
            });
            EXPECT_NE(why.find("'" + a + "'"), std::string::npos) << why;
            EXPECT_NE(why.find("tcp://, ipc://, inproc://"), std::string::npos) << why;
        }
    }
    // A malformed address of a known scheme still gets that transport's own message.
    const std::string why = refusal([&] { env.on(0, [&] { s.bind("tcp://127.0.0.1"); }); });
    EXPECT_NE(why.find("missing ':port'"), std::string::npos) << why;
    EXPECT_NE(refusal([&] { env.on(0, [&] { s.bind("inproc://"); }); }).find("needs a name"), std::string::npos);
    // The refusals left the socket as it was: it binds and receives.
    auto& push = env.make(1, socket_type::push);
    const std::string where = env.on(0, [&] { return s.bind("tcp://127.0.0.1:*"); });
    env.on(1, [&] { push.connect(where); });
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return s.peers(); }) == 1; }));
    EXPECT_EQ(env.on(0, [&] { return s.stats().peers; }), 1u);
}

// One PULL bound on all three transports (tcp and ipc share a session group, inproc has its own
// pipes): every peer arrives, pause_receiving holds all of them, and resuming delivers all.
TEST(link_transports, one_socket_on_tcp_ipc_and_inproc_pauses_and_resumes_them_all) {
    link_env env;
    temp_dir dir;
    inbox& got = env.new_inbox();
    event_log& log = env.new_log();
    auto& pull = env.make(0, socket_type::pull, {}, &got, &log);
    const std::string tcp = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    const std::string ipc = env.on(0, [&] { return pull.bind("ipc://" + dir.path() + "/all.sock"); });
    const std::string inproc = env.on(0, [&] { return pull.bind(inproc_address("all")); });
    EXPECT_EQ(ipc, "ipc://" + dir.path() + "/all.sock");
    EXPECT_EQ(inproc, inproc_address("all"));
    EXPECT_EQ(log.count(link::socket_event::kind::listening), 3u);

    auto& a = env.make(1, socket_type::push);
    auto& b = env.make(1, socket_type::push);
    auto& c = env.make(1, socket_type::push);
    env.on(1, [&] {
        a.connect(tcp);
        b.connect(ipc);
        c.connect(inproc);
    });
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return pull.peers(); }) == 3; }));

    env.on(0, [&] { pull.pause_receiving(true); });
    ASSERT_FALSE(env.send(a, {"over tcp"}));
    ASSERT_FALSE(env.send(b, {"over ipc"}));
    ASSERT_FALSE(env.send(c, {"over inproc"}));
    EXPECT_TRUE(got.stays_empty(300ms));

    env.on(0, [&] { pull.pause_receiving(false); });
    std::set<std::string> arrived;
    for (int i = 0; i < 3; ++i) {
        const auto m = got.pop();
        ASSERT_EQ(m.size(), 1u);
        arrived.insert(m[0]);
    }
    EXPECT_EQ(arrived, (std::set<std::string>{"over tcp", "over ipc", "over inproc"}));
    EXPECT_EQ(env.on(0, [&] { return pull.stats().messages_in; }), 3u);
}

// Closing the binder closes its peers on every transport, and frees the inproc name for the next.
TEST(link_transports, closing_a_socket_disconnects_its_peers_on_every_transport) {
    link_env env;
    temp_dir dir;
    event_log& log = env.new_log();
    auto& pull = env.make(0, socket_type::pull);
    const std::string tcp = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    const std::string ipc = env.on(0, [&] { return pull.bind("ipc://" + dir.path() + "/close.sock"); });
    const std::string inproc = env.on(0, [&] { return pull.bind(inproc_address("close")); });
    auto& push = env.make(1, socket_type::push, {}, nullptr, &log);
    env.on(1, [&] {
        push.connect(tcp);
        push.connect(ipc);
        push.connect(inproc);
    });
    ASSERT_TRUE(eventually([&] { return env.on(1, [&] { return push.peers(); }) == 3; }));
    env.destroy(pull);
    ASSERT_TRUE(eventually([&] { return env.on(1, [&] { return push.peers(); }) == 0; }));
    EXPECT_TRUE(eventually([&] { return log.count(link::socket_event::kind::disconnected) == 3; }));
    auto& again = env.make(0, socket_type::pull);
    EXPECT_EQ(env.on(0, [&] { return again.bind(inproc_address("close")); }), inproc_address("close"));
}

}  // namespace
