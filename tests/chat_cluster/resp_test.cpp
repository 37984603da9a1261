// The RESP framer and reader without a Redis: where replies end (every split point of real
// replies), hostile lengths refused before anything is buffered, malformed input refused, the
// lower bound on an incomplete reply never above its real size, hiredis's parse of each frame,
// and the command encoding byte for byte.
#include "apps/chat/cluster/redis_errc.hpp"
#include "apps/chat/cluster/resp.hpp"
#include "apps/chat/cluster/resp_framer.hpp"

#include <strix/net/net_errc.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace strix;
using namespace strix::chat;

constexpr std::size_t max_frame = 1 << 20;

frame_cut cut(std::string_view s, std::size_t limit = max_frame) {
    return resp_framer().cut(std::as_bytes(std::span(s.data(), s.size())), limit);
}

std::string parse(std::string_view s) {
    resp_reader r;
    resp_reply out;
    const auto ec = r.parse(std::as_bytes(std::span(s.data(), s.size())), out);
    if (ec) return "error: " + r.last_error();
    return out.describe();
}

struct sample {
    std::string wire;
    std::string parsed;
};

const std::vector<sample>& samples() {
    static const std::vector<sample> s{
        {"+OK\r\n", "OK"},
        {"-ERR unknown command 'FOO'\r\n", "(error) ERR unknown command 'FOO'"},
        {":-42\r\n", "-42"},
        {"$5\r\nhello\r\n", "\"hello\""},
        {"$0\r\n\r\n", "\"\""},
        {"$-1\r\n", "nil"},
        {"*-1\r\n", "nil"},
        {"*0\r\n", "[]"},
        // A bulk holding CR LF and a '*': the body is skipped by length, never scanned.
        {"$6\r\n*1\r\n\r\n\r\n", "\"*1\r\n\r\n\""},
        {"*3\r\n$7\r\nmessage\r\n$8\r\nchat:{1}\r\n$9\r\n3:ab:hi!!\r\n", "[\"message\", \"chat:{1}\", \"3:ab:hi!!\"]"},
        {"*3\r\n:2\r\n$4\r\nepoc\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nd\r\n$1\r\nx\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$"
         "1\r\nd\r\n$0\r\n\r\n",
         "[2, \"epoc\", [[\"1-0\", [\"d\", \"x\"]], [\"2-0\", [\"d\", \"\"]]]]"},
        {"*2\r\n*0\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:7\r\n", "[[], [[[[[[7]]]]]]]"},
    };
    return s;
}

TEST(resp_framer, cuts_every_sample_exactly_and_hiredis_parses_it) {
    for (const auto& s : samples()) {
        const auto c = cut(s.wire);
        EXPECT_FALSE(c.error) << s.wire;
        EXPECT_EQ(c.size, s.wire.size()) << s.wire;
        EXPECT_EQ(parse(s.wire), s.parsed);
    }
}

// Every prefix of a reply is incomplete, with a size bound above the bytes present and never
// above the reply's real size (so max_frame refuses only replies that really are too large).
TEST(resp_framer, every_prefix_waits_with_a_sound_lower_bound) {
    for (const auto& s : samples()) {
        for (std::size_t n = 1; n < s.wire.size(); ++n) {
            const auto c = cut(std::string_view(s.wire).substr(0, n));
            ASSERT_FALSE(c.error) << s.wire << " prefix " << n;
            EXPECT_GT(c.size, n) << s.wire << " prefix " << n;
            EXPECT_LE(c.size, s.wire.size()) << s.wire << " prefix " << n;
        }
    }
}

TEST(resp_framer, cuts_only_the_first_of_pipelined_replies) {
    const std::string two = "*2\r\n:1\r\n:2\r\n+OK\r\n";
    EXPECT_EQ(cut(two).size, 12u);
    EXPECT_EQ(cut(std::string_view(two).substr(12)).size, 5u);
}

TEST(resp_framer, hostile_lengths_are_refused_before_the_body_arrives) {
    // hiredis 0.14 would calloc 2e9 pointers on seeing this header.
    EXPECT_GT(cut("*2000000000\r\n").size, max_frame);
    EXPECT_GT(cut("$999999999\r\n").size, max_frame);
    EXPECT_GT(cut("$1048577\r\n").size, max_frame);  // one byte over
    EXPECT_EQ(cut("$1048576\r\n").size, 1048576u + 10 + 2);  // exactly at the limit: wait for it
    // An array whose smallest possible elements cannot fit.
    EXPECT_GT(cut("*349526\r\n").size, max_frame);
    // Nested arrays add up their lower bounds.
    EXPECT_GT(cut("*2\r\n*300000\r\n", max_frame).size, 900000u);
    EXPECT_GT(cut("*1\r\n$99999999999999999\r\n").size, max_frame);
}

TEST(resp_framer, malformed_input_is_a_bad_frame) {
    for (std::string_view bad :
         {"?x\r\n", "$-2\r\n", "*-5\r\n", "$abc\r\n", "*1x\r\n", ":12a\r\n", "$3\r\nabcXY", "$\r\n", "*\r\n",
          "$1234567890123456789012345\r\n", "$1111111111111111111111111111111"}) {
        const auto c = cut(bad);
        EXPECT_EQ(std::error_code(c.error), make_error_code(net_errc::bad_frame)) << bad;
    }
    // Nesting deeper than hiredis accepts.
    EXPECT_EQ(std::error_code(cut("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n").error),
              make_error_code(net_errc::bad_frame));
    EXPECT_FALSE(cut("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n").error);
}

TEST(resp_framer, a_long_status_line_waits_within_max_frame) {
    std::string line = "-" + std::string(5000, 'e');
    const auto c = cut(line);
    EXPECT_FALSE(c.error);
    EXPECT_GT(c.size, line.size());
    line += "\r\n";
    EXPECT_EQ(cut(line).size, line.size());
    // ... and a line longer than max_frame is refused.
    EXPECT_GT(cut(std::string(100, '+'), 50).size, 50u);
}

// Random replies: built as a tree, written as RESP, cut and parsed back.
struct random_reply {
    std::mt19937_64 rng{0x5eed};
    std::string bytes(std::size_t n, bool line) {
        std::string s;
        for (std::size_t i = 0; i < n; ++i) {
            char c = static_cast<char>(rng() & 0xff);
            if (line && (c == '\r' || c == '\n')) c = 'x';
            s += c;
        }
        return s;
    }
    // Appends one reply of at most `depth` levels to wire and returns the tree.
    resp_reply make(std::string& wire, int depth) {
        resp_reply r;
        switch (rng() % (depth > 0 ? 6 : 5)) {
            case 0:
                r.type = resp_reply::kind::status;
                r.str = bytes(rng() % 20, true);
                wire += "+" + r.str + "\r\n";
                break;
            case 1:
                r.type = resp_reply::kind::error;
                r.str = bytes(rng() % 20, true);
                wire += "-" + r.str + "\r\n";
                break;
            case 2:
                r.type = resp_reply::kind::integer;
                r.integer = static_cast<std::int64_t>(rng()) >> (rng() % 64);
                wire += ":" + std::to_string(r.integer) + "\r\n";
                break;
            case 3:
                r.type = resp_reply::kind::string;
                r.str = bytes(rng() % 300, false);
                wire += "$" + std::to_string(r.str.size()) + "\r\n" + r.str + "\r\n";
                break;
            case 4:
                r.type = resp_reply::kind::nil;
                wire += rng() % 2 ? "$-1\r\n" : "*-1\r\n";
                break;
            default: {
                r.type = resp_reply::kind::array;
                const auto n = rng() % 6;
                wire += "*" + std::to_string(n) + "\r\n";
                for (std::size_t i = 0; i < n; ++i) r.elements.push_back(make(wire, depth - 1));
            }
        }
        return r;
    }
};

TEST(resp_framer, random_replies_cut_and_parse_back_exactly) {
    random_reply gen;
    resp_reader reader;
    for (int i = 0; i < 3000; ++i) {
        std::string wire;
        const resp_reply want = gen.make(wire, resp_max_depth);
        const std::size_t first = wire.size();
        gen.make(wire, 2);  // a pipelined reply behind it
        const auto c = cut(wire);
        ASSERT_FALSE(c.error) << i;
        ASSERT_EQ(c.size, first) << i;
        resp_reply got;
        ASSERT_FALSE(reader.parse(std::as_bytes(std::span(wire.data(), first)), got)) << reader.last_error();
        ASSERT_EQ(got.describe(), want.describe()) << i;
        // Every proper prefix waits, with a bound within the reply's real size.
        const std::size_t n = 1 + gen.rng() % first;
        if (n < first) {
            const auto p = cut(std::string_view(wire).substr(0, n));
            ASSERT_FALSE(p.error);
            ASSERT_GT(p.size, n);
            ASSERT_LE(p.size, first);
        }
    }
}

// STRIX_RESP_DAMAGE_ROUNDS raises the count for a longer local run.
int damage_rounds() {
    const char* e = std::getenv("STRIX_RESP_DAMAGE_ROUNDS");
    return e != nullptr ? std::atoi(e) : 20000;
}

// Whatever the framer calls one complete reply, hiredis must parse as exactly one reply: the
// framer and the parser never disagree about where a reply ends, even on damaged input.
TEST(resp_framer, damaged_replies_never_split_framer_and_hiredis) {
    random_reply gen;
    resp_reader reader;
    int complete = 0;
    for (int i = 0; i < damage_rounds(); ++i) {
        std::string wire;
        gen.make(wire, 3);
        for (int k = 0, flips = 1 + static_cast<int>(gen.rng() % 3); k < flips; ++k) {
            wire[gen.rng() % wire.size()] = "*$:+-\r\n0123456789x"[gen.rng() % 19];
        }
        const auto c = cut(wire);
        if (c.error || c.size > wire.size()) continue;
        ++complete;
        resp_reply got;
        ASSERT_FALSE(reader.parse(std::as_bytes(std::span(wire.data(), c.size)), got))
            << reader.last_error() << " on " << testing::PrintToString(wire.substr(0, c.size));
    }
    EXPECT_GT(complete, 1000);  // the damage leaves many inputs well-formed: the property was exercised
}

TEST(resp_reader, reports_a_frame_holding_two_replies) {
    resp_reader r;
    resp_reply out;
    const std::string two = "+OK\r\n+OK\r\n";
    EXPECT_EQ(r.parse(std::as_bytes(std::span(two.data(), two.size())), out),
              make_error_code(redis_errc::protocol_error));
    // The reader is usable again afterwards.
    const std::string one = ":5\r\n";
    ASSERT_FALSE(r.parse(std::as_bytes(std::span(one.data(), one.size())), out));
    EXPECT_EQ(out.type, resp_reply::kind::integer);
    EXPECT_EQ(out.integer, 5);
}

TEST(resp_reader, reports_an_incomplete_frame) {
    resp_reader r;
    resp_reply out;
    const std::string part = "*2\r\n:1\r\n";
    EXPECT_EQ(r.parse(std::as_bytes(std::span(part.data(), part.size())), out),
              make_error_code(redis_errc::protocol_error));
}

TEST(resp_command, encodes_binary_safe_bulk_strings) {
    std::string out;
    append_command(out, {"SET", "k", std::string_view("a\r\n\0b", 5)});
    EXPECT_EQ(out, std::string("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\na\r\n\0b\r\n", 31));
    append_command(out, {"PING"});
    EXPECT_EQ(out.substr(31), "*1\r\n$4\r\nPING\r\n");
}

}  // namespace
