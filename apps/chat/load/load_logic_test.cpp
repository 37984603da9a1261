// The load tool's verification logic without a server: if these are wrong, a broken server could
// score. Payload mix parsing and draws, the deterministic texts, the latency histogram and the
// delivery checker's classification of in-order, gap, late and duplicate messages; --ws's framing.

#include "delivery_checker.hpp"
#include "latency_histogram.hpp"
#include "load_stats.hpp"
#include "load_ws.hpp"
#include "message_text.hpp"
#include "payload_mix.hpp"
#include "reconnect_logic.hpp"

#include <gtest/gtest.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <map>
#include <set>
#include <string>

namespace strix::chat {
namespace {

TEST(PayloadMix, ParsesSeedMixAndCanonicalSpelling) {
    std::string why;
    auto m = payload_mix::parse("64:80,256:18,1024-2048:2", &why);
    ASSERT_TRUE(m.has_value()) << why;
    ASSERT_EQ(m->bands().size(), 3u);
    EXPECT_EQ(m->bands()[0].lo, 64u);
    EXPECT_EQ(m->bands()[0].hi, 64u);
    EXPECT_EQ(m->bands()[0].weight, 80u);
    EXPECT_EQ(m->bands()[2].lo, 1024u);
    EXPECT_EQ(m->bands()[2].hi, 2048u);
    EXPECT_EQ(m->max_len(), 2048u);
    EXPECT_EQ(m->to_string(), "64:80,256:18,1024-2048:2");
    EXPECT_DOUBLE_EQ(m->mean_len(), (64.0 * 80 + 256.0 * 18 + 1536.0 * 2) / 100.0);
}

TEST(PayloadMix, RejectsMalformedSpecsWithAReason) {
    for (const char* bad : {"", "64", "64:", ":5", "0:10", "60001:1", "10-5:1", "64:80,", "a:1", "64:0", "1-2-3:4"}) {
        std::string why;
        EXPECT_FALSE(payload_mix::parse(bad, &why).has_value()) << bad;
        EXPECT_FALSE(why.empty()) << bad;
    }
}

TEST(PayloadMix, DrawsFollowTheWeightsAndStayInRange) {
    auto m = payload_mix::parse("64:80,256:18,1024-2048:2", nullptr);
    ASSERT_TRUE(m.has_value());
    std::map<std::uint32_t, std::uint64_t> small;
    std::uint64_t big = 0;
    std::set<std::uint32_t> big_lengths;
    constexpr std::uint64_t n = 200000;
    for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint32_t len = m->pick(mix64(i));
        if (len == 64 || len == 256) {
            ++small[len];
        } else {
            ASSERT_GE(len, 1024u);
            ASSERT_LE(len, 2048u);
            ++big;
            big_lengths.insert(len);
        }
    }
    EXPECT_NEAR(static_cast<double>(small[64]) / n, 0.80, 0.01);
    EXPECT_NEAR(static_cast<double>(small[256]) / n, 0.18, 0.01);
    EXPECT_NEAR(static_cast<double>(big) / n, 0.02, 0.005);
    // Inclusive range: both ends get drawn.
    EXPECT_TRUE(big_lengths.count(1024));
    EXPECT_TRUE(big_lengths.count(2048));
}

TEST(PayloadMix, ZeroWeightBandIsNeverDrawn) {
    auto m = payload_mix::parse("10:0,20:1", nullptr);
    ASSERT_TRUE(m.has_value());
    for (std::uint64_t i = 0; i < 1000; ++i) EXPECT_EQ(m->pick(mix64(i)), 20u);
    EXPECT_EQ(m->max_len(), 20u);
}

std::string text(const message_text& m, std::uint64_t id, std::uint64_t seq) {
    std::string t(m.max_len(), '\0');
    t.resize(m.write(id, seq, t.data()));
    return t;
}

TEST(MessageText, IsDeterministicPrintableAndDistinct) {
    message_text a(*payload_mix::parse("64:80,256:18,1024-2048:2", nullptr));
    message_text b(*payload_mix::parse("64:80,256:18,1024-2048:2", nullptr));
    std::set<std::string> seen;
    for (std::uint64_t id = 1; id <= 20; ++id) {
        for (std::uint64_t seq = 1; seq <= 50; ++seq) {
            const std::string t = text(a, id, seq);
            EXPECT_EQ(t, text(b, id, seq));  // another process derives the same text
            EXPECT_EQ(t.size(), a.length_of(id, seq));
            for (char ch : t) {
                ASSERT_GE(ch, 0x21);
                ASSERT_LE(ch, 0x7e);
            }
            EXPECT_TRUE(t.size() == 64 || t.size() == 256 || (t.size() >= 1024 && t.size() <= 2048));
            EXPECT_TRUE(a.matches(id, seq, t));
            seen.insert(t);
        }
    }
    EXPECT_EQ(seen.size(), 1000u);
    // The tag names the message: seq 0x2a of player 0x7.
    message_text m(*payload_mix::parse("20:1", nullptr));
    EXPECT_EQ(text(m, 7, 42).substr(0, 5), "2a.7|");
}

TEST(MessageText, MatchesOnlyTheExactText) {
    message_text m(*payload_mix::parse("64:100", nullptr));
    const std::string t = text(m, 7, 3);
    EXPECT_TRUE(m.matches(7, 3, t));
    EXPECT_FALSE(m.matches(7, 4, t));  // another message of the same sender
    EXPECT_FALSE(m.matches(8, 3, t));  // the same seq of another sender
    std::string flipped = t;
    flipped[40] = static_cast<char>(flipped[40] == 'a' ? 'b' : 'a');
    EXPECT_FALSE(m.matches(7, 3, flipped));
    std::string tag_flipped = t;
    tag_flipped[0] = '4';
    EXPECT_FALSE(m.matches(7, 3, tag_flipped));
    EXPECT_FALSE(m.matches(7, 3, t.substr(0, 63)));
    EXPECT_FALSE(m.matches(7, 3, t + "x"));
}

TEST(MessageText, TextsShorterThanTheTagAreItsPrefix) {
    message_text m(*payload_mix::parse("1-3:1", nullptr));
    for (std::uint64_t seq = 1; seq < 100; ++seq) {
        const std::string t = text(m, 0x123456789, seq);
        ASSERT_GE(t.size(), 1u);
        ASSERT_LE(t.size(), 3u);
        EXPECT_TRUE(m.matches(0x123456789, seq, t));
    }
}

TEST(LatencyHistogram, BucketsAreContiguousAndBounded) {
    std::size_t prev = 0;
    for (std::uint64_t v = 0; v < (1u << 20); v += 7) {
        const std::size_t i = latency_histogram::index_of(v);
        ASSERT_GE(i, prev);
        ASSERT_LE(v, latency_histogram::highest_in(i));
        if (i > 0) {
            ASSERT_GT(v, latency_histogram::highest_in(i - 1));
        }
        // Relative bucket width stays under 1/128.
        if (v >= 256) {
            ASSERT_LE(static_cast<double>(latency_histogram::highest_in(i) - v), static_cast<double>(v) / 128.0);
        }
        prev = i;
    }
    EXPECT_EQ(latency_histogram::index_of(~std::uint64_t{0}), latency_histogram::bucket_count - 1);
}

TEST(LatencyHistogram, PercentilesMeanAndBands) {
    latency_histogram h;
    EXPECT_EQ(h.percentile_ns(50), 0u);
    for (std::uint64_t us = 1; us <= 1000; ++us) h.record(us * 1000);  // 1 us .. 1 ms
    EXPECT_EQ(h.count(), 1000u);
    EXPECT_EQ(h.min_ns(), 1000u);
    EXPECT_EQ(h.max_ns(), 1'000'000u);
    EXPECT_DOUBLE_EQ(h.mean_ns(), 500.5 * 1000);
    EXPECT_NEAR(static_cast<double>(h.percentile_ns(50)), 500'000, 500'000 / 128.0);
    EXPECT_NEAR(static_cast<double>(h.percentile_ns(99)), 990'000, 990'000 / 128.0);
    EXPECT_EQ(h.percentile_ns(100), 1'000'000u);
    EXPECT_EQ(h.percentile_ns(0), 1000u);
    // Bands are exact: <=100 us holds 1..100 us, <=500 us 101..500, <=1 ms 501..1000.
    EXPECT_EQ(h.bands()[0], 100u);
    EXPECT_EQ(h.bands()[1], 400u);
    EXPECT_EQ(h.bands()[2], 500u);
    EXPECT_EQ(h.bands()[3], 0u);
    h.record(5'000'000);
    h.record(5'000'001);
    h.record(60'000'000);
    EXPECT_EQ(h.bands()[3], 1u);
    EXPECT_EQ(h.bands()[4], 1u);
    EXPECT_EQ(h.bands()[5], 1u);
}

TEST(LatencyHistogram, MergeEqualsRecordingEverythingInOne) {
    latency_histogram a, b, all;
    for (std::uint64_t v = 1; v < 100000; v += 13) {
        (v % 2 ? a : b).record(v * 37);
        all.record(v * 37);
    }
    a.merge(b);
    EXPECT_EQ(a.count(), all.count());
    EXPECT_EQ(a.min_ns(), all.min_ns());
    EXPECT_EQ(a.max_ns(), all.max_ns());
    EXPECT_DOUBLE_EQ(a.mean_ns(), all.mean_ns());
    for (double p : {10.0, 50.0, 90.0, 99.0, 99.9}) EXPECT_EQ(a.percentile_ns(p), all.percentile_ns(p)) << p;
    EXPECT_EQ(a.bands(), all.bands());
}

TEST(MessageText, TheTagOfAStoredCopyNamesItsMessage) {
    message_text m(*payload_mix::parse("64:80,256:18,1024-2048:2", nullptr));
    for (std::uint64_t id : {1ull, 0x7ull, 0xffffffffffffffffull}) {
        for (std::uint64_t seq : {1ull, 42ull, 0x123456789abcull}) {
            std::uint64_t got_seq = 0, got_id = 0;
            const std::string t = text(m, id, seq);
            ASSERT_TRUE(message_text::parse_tag(t, got_seq, got_id)) << t.substr(0, 40);
            EXPECT_EQ(got_seq, seq);
            EXPECT_EQ(got_id, id);
        }
    }
    std::uint64_t a = 0, b = 0;
    EXPECT_FALSE(message_text::parse_tag("", a, b));
    EXPECT_FALSE(message_text::parse_tag("2a.7", a, b));        // cut before the '|'
    EXPECT_FALSE(message_text::parse_tag(".7|xyz", a, b));      // no seq
    EXPECT_FALSE(message_text::parse_tag("2a.|xyz", a, b));     // no sender
    EXPECT_FALSE(message_text::parse_tag("2A.7|xyz", a, b));    // upper case is not what write() makes
    EXPECT_FALSE(message_text::parse_tag("11111111111111111.7|", a, b));  // 17 digits overflow
    EXPECT_TRUE(message_text::parse_tag("2a.7|", a, b));
    EXPECT_EQ(a, 42u);
    EXPECT_EQ(b, 7u);
}

TEST(ReconnectLogic, DropsExactlyTheShareSpreadOverClients) {
    for (double share : {0.0, 0.1, 0.25, 0.5, 1.0}) {
        std::uint32_t dropped = 0, first_half = 0;
        for (std::uint32_t i = 0; i < 1000; ++i) {
            if (!drops_client(i, share)) continue;
            ++dropped;
            if (i < 500) ++first_half;
        }
        EXPECT_EQ(dropped, static_cast<std::uint32_t>(share * 1000 + 1e-9)) << share;
        EXPECT_EQ(first_half * 2, dropped) << share;  // evenly spread, not the first ones
    }
    // 3 of 10 clients, each room of 10 (client i in room i % 10) gets its share over the rooms.
    std::uint32_t n = 0;
    for (std::uint32_t i = 0; i < 10; ++i) n += drops_client(i, 0.3) ? 1u : 0u;
    EXPECT_EQ(n, 3u);
}

TEST(ReconnectLogic, DropTimesStayInTheWindowAndSpread) {
    const std::int64_t from = 1'000'000'000, to = 9'000'000'000;
    std::int64_t lo = to, hi = from;
    for (std::uint32_t i = 0; i < 500; ++i) {
        const std::int64_t t = drop_time(i, from, to);
        ASSERT_GE(t, from);
        ASSERT_LT(t, to);
        EXPECT_EQ(t, drop_time(i, from, to));  // runs repeat
        lo = std::min(lo, t);
        hi = std::max(hi, t);
    }
    EXPECT_LT(lo, from + (to - from) / 10);
    EXPECT_GT(hi, to - (to - from) / 10);
    EXPECT_EQ(drop_time(3, from, from), from);
}

TEST(ReconnectLogic, ResumeTrackerTakesTheRangeInOrder) {
    resume_tracker r;
    r.start(37, 42);  // had 37, the re-join says 42
    EXPECT_EQ(r.remaining(), 5u);
    EXPECT_EQ(r.take(37), refill_verdict::duplicate);
    for (std::uint64_t s = 38; s <= 42; ++s) {
        EXPECT_FALSE(r.done());
        EXPECT_EQ(r.next(), s);
        EXPECT_EQ(r.take(s), refill_verdict::next);
    }
    EXPECT_TRUE(r.done());
    EXPECT_EQ(r.take(43), refill_verdict::beyond);  // live
    EXPECT_EQ(r.take(40), refill_verdict::duplicate);
    EXPECT_EQ(r.missing(), 0u);
}

TEST(ReconnectLogic, ResumeTrackerCountsWhatNeverCame) {
    resume_tracker r;
    r.start(10, 20);
    EXPECT_EQ(r.take(11), refill_verdict::next);
    EXPECT_EQ(r.take(14), refill_verdict::skipped);  // 12 and 13 are gone
    EXPECT_EQ(r.missing(), 2u);
    EXPECT_EQ(r.take(13), refill_verdict::duplicate);  // too late: behind what was taken
    EXPECT_EQ(r.next(), 15u);
    r.give_up();  // 15 .. 20 never came
    EXPECT_TRUE(r.done());
    EXPECT_EQ(r.missing(), 8u);
    // Nothing missed: the re-join's last_seq is what the client had.
    r.start(20, 20);
    EXPECT_TRUE(r.done());
    EXPECT_EQ(r.remaining(), 0u);
    EXPECT_EQ(r.take(21), refill_verdict::beyond);
}

TEST(LoadStats, ReconnectCountersMerge) {
    load_stats a, b;
    a.drops = 2;
    a.refilled = 10;
    a.dropped_owed = 30;
    a.resume_time.record(40'000'000);
    b.drops = 1;
    b.lost_connections = 4;
    b.refill_missing = 1;
    b.reclaimed_owed = 10;
    b.rejoin_as_joined = 3;
    b.resume_time.record(60'000'000);
    a.merge(b);
    EXPECT_EQ(a.drops, 3u);
    EXPECT_EQ(a.lost_connections, 4u);
    EXPECT_EQ(a.refilled, 10u);
    EXPECT_EQ(a.refill_missing, 1u);
    EXPECT_EQ(a.dropped_owed - a.reclaimed_owed, 20u);
    EXPECT_EQ(a.rejoin_as_joined, 3u);
    EXPECT_EQ(a.resume_time.count(), 2u);
}

TEST(DeliveryChecker, InOrderStreamFromSeveralSenders) {
    delivery_checker c(3);
    EXPECT_EQ(c.on_message(1, 0, 1), delivery_verdict::in_order);
    EXPECT_EQ(c.on_message(2, 1, 1), delivery_verdict::in_order);
    EXPECT_EQ(c.on_message(3, 0, 2), delivery_verdict::in_order);
    EXPECT_EQ(c.on_message(4, 2, 1), delivery_verdict::in_order);
    EXPECT_EQ(c.last_seq(), 4u);
    EXPECT_EQ(c.missing(), 0u);
    EXPECT_EQ(c.gaps(), 0u);
    EXPECT_EQ(c.sender_gaps(), 0u);
    EXPECT_EQ(c.last_client_seq(0), 2u);
}

TEST(DeliveryChecker, FirstMessageMustBeSeqOne) {
    delivery_checker c(1);
    EXPECT_EQ(c.on_message(2, 0, 1), delivery_verdict::gap);
    EXPECT_EQ(c.missing(), 1u);
}

TEST(DeliveryChecker, GapThenLateArrivalIsOutOfOrderAndFillsTheGap) {
    delivery_checker c(2);
    EXPECT_EQ(c.on_message(1, 0, 1), delivery_verdict::in_order);
    EXPECT_EQ(c.on_message(4, 1, 2), delivery_verdict::gap);  // 2, 3 missing; sender 1 skipped cs 1
    EXPECT_EQ(c.missing(), 2u);
    EXPECT_EQ(c.gaps(), 1u);
    EXPECT_EQ(c.sender_gaps(), 1u);
    EXPECT_EQ(c.on_message(3, 0, 2), delivery_verdict::out_of_order);
    EXPECT_EQ(c.missing(), 1u);
    EXPECT_EQ(c.on_message(3, 0, 2), delivery_verdict::duplicate);  // no longer missing
    EXPECT_EQ(c.on_message(2, 1, 1), delivery_verdict::out_of_order);
    EXPECT_EQ(c.missing(), 0u);
    EXPECT_EQ(c.on_message(5, 0, 3), delivery_verdict::in_order);
}

TEST(DeliveryChecker, RepeatedSeqIsDuplicate) {
    delivery_checker c(1);
    EXPECT_EQ(c.on_message(1, 0, 1), delivery_verdict::in_order);
    EXPECT_EQ(c.on_message(1, 0, 1), delivery_verdict::duplicate);
    EXPECT_EQ(c.on_message(2, 0, 2), delivery_verdict::in_order);
    EXPECT_EQ(c.on_message(1, 0, 1), delivery_verdict::duplicate);
    EXPECT_EQ(c.last_seq(), 2u);
}

TEST(DeliveryChecker, ReplayWithFreshSeqIsDuplicate) {
    // A server that re-broadcasts an old message under a new room seq.
    delivery_checker c(2);
    EXPECT_EQ(c.on_message(1, 0, 1), delivery_verdict::in_order);
    EXPECT_EQ(c.on_message(2, 0, 2), delivery_verdict::in_order);
    EXPECT_EQ(c.on_message(3, 0, 2), delivery_verdict::duplicate);
    EXPECT_EQ(c.on_message(4, 1, 1), delivery_verdict::in_order);
}

TEST(DeliveryChecker, SplitsMissingRangesWhenTheMiddleArrives) {
    delivery_checker c(1);
    EXPECT_EQ(c.on_message(10, 0, 10), delivery_verdict::gap);  // 1..9 missing
    EXPECT_EQ(c.missing(), 9u);
    EXPECT_EQ(c.on_message(5, 0, 5), delivery_verdict::out_of_order);
    EXPECT_EQ(c.on_message(1, 0, 1), delivery_verdict::out_of_order);
    EXPECT_EQ(c.on_message(9, 0, 9), delivery_verdict::out_of_order);
    EXPECT_EQ(c.on_message(5, 0, 5), delivery_verdict::duplicate);
    EXPECT_EQ(c.missing(), 6u);
    for (std::uint64_t s : {2, 3, 4, 6, 7, 8}) EXPECT_EQ(c.on_message(s, 0, s), delivery_verdict::out_of_order) << s;
    EXPECT_EQ(c.missing(), 0u);
    EXPECT_EQ(c.on_message(7, 0, 7), delivery_verdict::duplicate);
}

TEST(LoadStats, MergeSumsCountersAndKeepsTheWorstLag) {
    load_stats a, b;
    a.sent = 3;
    a.delivered = 10;
    a.errors[10] = 2;
    a.send_lag_max_ns = 50;
    a.latency.record(1000);
    b.sent = 4;
    b.delivered = 1;
    b.errors[10] = 1;
    b.errors[11] = 5;
    b.send_lag_max_ns = 70;
    b.latency.record(3000);
    a.merge(b);
    EXPECT_EQ(a.sent, 7u);
    EXPECT_EQ(a.delivered, 11u);
    EXPECT_EQ(a.errors[10], 3u);
    EXPECT_EQ(a.error_total(), 8u);
    EXPECT_EQ(a.send_lag_max_ns, 70u);
    EXPECT_EQ(a.latency.count(), 2u);
}

// The server's messages, however the reads cut them, come out as the frames' bytes in order;
// control frames are dropped, a close frame is an error naming its code.
TEST(LoadWs, UnwrapsMessagesAcrossAnyReadBoundaries) {
    std::vector<std::byte> in, want;
    auto message = [&](std::uint8_t first, std::size_t n, bool data) {
        in.push_back(std::byte{first});
        if (n < 126) {
            in.push_back(static_cast<std::byte>(n));
        } else {
            in.insert(in.end(), {std::byte{126}, static_cast<std::byte>(n >> 8), static_cast<std::byte>(n & 0xFF)});
        }
        for (std::size_t i = 0; i < n; ++i) {
            in.push_back(static_cast<std::byte>(i * 7 + n));
            if (data) want.push_back(in.back());
        }
    };
    message(0x82, 5, true);
    message(0x82, 300, true);
    message(0x89, 4, false);  // a ping between messages
    message(0x82, 0, true);
    message(0x82, 125, true);
    for (std::size_t chunk :
         {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, std::size_t{64}, in.size()}) {
        load_ws ws(1);
        std::vector<std::byte> got;
        for (std::size_t at = 0; at < in.size(); at += chunk) {
            std::vector<std::byte> buf(in.begin() + static_cast<std::ptrdiff_t>(at),
                                       in.begin() + static_cast<std::ptrdiff_t>(std::min(in.size(), at + chunk)));
            const std::size_t n = ws.unwrap(buf.data(), buf.size());
            got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
        }
        EXPECT_EQ(got, want) << "reads of " << chunk << " bytes";
        EXPECT_EQ(ws.error(), "") << chunk;
    }
    load_ws closed(2);
    std::vector<std::byte> close{std::byte{0x88}, std::byte{2}, std::byte{0x03}, std::byte{0xF1}};
    EXPECT_EQ(closed.unwrap(close.data(), close.size()), 0u);
    EXPECT_NE(closed.error().find("code 1009"), std::string::npos) << closed.error();
    load_ws masked(3);
    std::vector<std::byte> bad{std::byte{0x82}, std::byte{0x81}, std::byte{1}, std::byte{2},
                               std::byte{3},    std::byte{4},    std::byte{5}};
    masked.unwrap(bad.data(), bad.size());
    EXPECT_NE(masked.error(), "") << "a server's frame is never masked";
}

// What the tool sends: the upgrade with a key whose Accept it checks, then masked binary messages
// that unmask to the frame.
TEST(LoadWs, UpgradesAndMasksEveryFrame) {
    load_ws ws(42);
    std::vector<std::byte> out;
    ws.request(out, "127.0.0.1", 8080, "/ws");
    const std::string req(reinterpret_cast<const char*>(out.data()), out.size());
    EXPECT_EQ(req.rfind("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n", 0), 0u) << req;
    const std::string field = "Sec-WebSocket-Key: ";
    const auto at = req.find(field);
    ASSERT_NE(at, std::string::npos) << req;
    std::string keyed = req.substr(at + field.size(), 24);
    keyed.append("258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(keyed.data()), keyed.size(), digest);
    char accept[64] = {};
    EVP_EncodeBlock(reinterpret_cast<unsigned char*>(accept), digest, sizeof digest);

    const std::string wrong = "HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: xyz=\r\n\r\n";
    load_ws other(42);
    std::vector<std::byte> ignored;
    other.request(ignored, "127.0.0.1", 8080, "/ws");
    auto r = other.read_head(std::as_bytes(std::span(wrong)));
    EXPECT_FALSE(r.done);
    EXPECT_NE(other.error().find("Sec-WebSocket-Accept"), std::string::npos) << other.error();

    // The head, then the first frame's bytes in the same read: the head's length is reported.
    std::string reply = "HTTP/1.1 101 Switching Protocols\r\nsec-websocket-accept: ";
    reply.append(accept).append("\r\n\r\n");
    const std::size_t head = reply.size();
    reply.append("\x82\x01Z");
    r = ws.read_head(std::as_bytes(std::span(reply)));
    EXPECT_TRUE(r.done) << ws.error();
    EXPECT_EQ(r.used, head);

    std::vector<std::byte> frames{std::byte{9}};
    const std::size_t from = frames.size();
    for (int i = 0; i < 200; ++i) frames.push_back(static_cast<std::byte>(i));
    ws.wrap_tail(frames, from);
    ASSERT_EQ(frames.size(), 1u + 4 + 4 + 200);
    EXPECT_EQ(frames[1], std::byte{0x82});
    EXPECT_EQ(frames[2], std::byte{0x80 | 126}) << "masked, 16-bit length";
    EXPECT_EQ(frames[4], std::byte{200});
    const std::byte* key = frames.data() + 5;
    for (int i = 0; i < 200; ++i)
        ASSERT_EQ(frames[9 + static_cast<std::size_t>(i)] ^ key[i % 4], static_cast<std::byte>(i)) << i;
}

}  // namespace
}  // namespace strix::chat
