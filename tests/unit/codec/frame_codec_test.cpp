#include <strix/codec/crc32c.hpp>
#include <strix/codec/frame_codec.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

using strix::codec_limits;
using strix::decode_frame;
using strix::frame_errc;
using strix::frame_header;
using strix::frame_header_size;
using bytes = std::vector<std::byte>;

}  // namespace

namespace strix {
// gtest prints enum values through this when an assertion fails.
void PrintTo(frame_errc e, std::ostream* os) { *os << to_string(e); }
}  // namespace strix

namespace {

bytes from_hex(std::string_view hex) {
    bytes out;
    for (std::size_t i = 0; i < hex.size();) {
        if (hex[i] == ' ') {
            ++i;
            continue;
        }
        out.push_back(static_cast<std::byte>(std::stoul(std::string(hex.substr(i, 2)), nullptr, 16)));
        i += 2;
    }
    return out;
}

std::span<const std::byte> as_bytes(std::string_view s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

bytes random_bytes(std::size_t n, std::mt19937_64& rng) {
    bytes b(n);
    for (auto& x : b) x = static_cast<std::byte>(rng() & 0xFFu);
    return b;
}

bytes encode(std::uint16_t type, std::span<const std::byte> body, bool crc) {
    bytes out(frame_header_size + body.size());
    EXPECT_EQ(strix::encode_frame(out, type, body, crc), out.size());
    return out;
}

bytes header_bytes(const frame_header& h) {
    bytes out(frame_header_size);
    strix::encode_header(out.data(), h);
    return out;
}

// ---- byte layout ------------------------------------------------------------------------

// These are the two examples printed in docs/wire_format.md; if this test changes, so must the doc.
TEST(frame_codec, wire_format_doc_examples_are_exact) {
    const bytes plain = encode(0x0102, as_bytes("hello"), false);
    EXPECT_EQ(plain, from_hex("11 00 00 00 02 01 00 00 00 00 00 00 68 65 6c 6c 6f"));

    const bytes with_crc = encode(0x0102, as_bytes("hello"), true);
    EXPECT_EQ(with_crc, from_hex("11 00 00 00 02 01 01 00 4c bb 71 9a 68 65 6c 6c 6f"));
    EXPECT_EQ(strix::crc32c(as_bytes("hello")), 0x9A71BB4Cu);

    const bytes empty = encode(0x0000, {}, false);
    EXPECT_EQ(empty, from_hex("0c 00 00 00 00 00 00 00 00 00 00 00"));
}

TEST(frame_codec, header_fields_are_little_endian_at_fixed_offsets) {
    const frame_header h{0x04030201u, 0x0605, 0x0001, 0x0C0B0A09u};
    EXPECT_EQ(header_bytes(h), from_hex("01 02 03 04 05 06 01 00 09 0a 0b 0c"));
    const bytes raw = header_bytes(h);
    EXPECT_EQ(strix::parse_header(raw.data()), h);
}

TEST(frame_codec, make_header_fills_length_type_flags_and_crc) {
    const frame_header plain = strix::make_header(7, as_bytes("abc"), false);
    EXPECT_EQ(plain, (frame_header{15, 7, 0, 0}));
    const frame_header crc = strix::make_header(7, as_bytes("abc"), true);
    EXPECT_EQ(crc, (frame_header{15, 7, strix::frame_flag_crc, strix::crc32c(as_bytes("abc"))}));
}

// ---- encode/decode round trips -------------------------------------------------------------

TEST(frame_codec, round_trips_every_size_up_to_70k) {
    std::mt19937_64 rng(1);
    const codec_limits limits{80 * 1024};
    const bytes pool = random_bytes(70000, rng);
    std::vector<std::size_t> sizes;
    for (std::size_t n = 0; n <= 300; ++n) sizes.push_back(n);
    for (std::size_t n = 301; n <= 70000; n = n * 9 / 8 + 1) sizes.push_back(n);
    sizes.push_back(65536 - 12);
    sizes.push_back(65536);
    sizes.push_back(70000);

    bytes out(frame_header_size + 70000);
    for (const std::size_t n : sizes) {
        for (const bool crc : {false, true}) {
            const std::span<const std::byte> body = std::span<const std::byte>(pool).first(n);
            const auto type = static_cast<std::uint16_t>(n * 31 + (crc ? 1 : 0));
            const std::size_t written = strix::encode_frame(out, type, body, crc);
            ASSERT_EQ(written, frame_header_size + n);

            const auto r = decode_frame(std::span<const std::byte>(out).first(written), limits);
            ASSERT_EQ(r.error, frame_errc::ok) << "size " << n;
            EXPECT_EQ(r.consumed, written);
            EXPECT_EQ(r.needed, written);
            EXPECT_EQ(r.frame.header.length, written);
            EXPECT_EQ(r.frame.header.type, type);
            EXPECT_EQ(r.frame.header.flags, crc ? strix::frame_flag_crc : 0);
            EXPECT_EQ(r.frame.header.crc, crc ? strix::crc32c(body) : 0u);
            ASSERT_EQ(r.frame.body.size(), n);
            EXPECT_EQ(r.frame.body.data(), out.data() + frame_header_size) << "decode must not copy";
            EXPECT_TRUE(std::equal(body.begin(), body.end(), r.frame.body.begin()));
        }
    }
}

TEST(frame_codec, decode_takes_only_the_first_frame_of_a_longer_input) {
    bytes stream = encode(1, as_bytes("first"), true);
    const bytes second = encode(2, as_bytes("second!"), false);
    stream.insert(stream.end(), second.begin(), second.end());

    auto r = decode_frame(stream, {});
    ASSERT_EQ(r.error, frame_errc::ok);
    EXPECT_EQ(r.consumed, 17u);
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(r.frame.body.data()), r.frame.body.size()), "first");
    r = decode_frame(std::span<const std::byte>(stream).subspan(r.consumed), {});
    ASSERT_EQ(r.error, frame_errc::ok);
    EXPECT_EQ(r.frame.header.type, 2);
    EXPECT_EQ(r.consumed, 19u);
}

TEST(frame_codec, encode_refuses_a_too_small_buffer_and_writes_nothing) {
    const auto body = as_bytes("0123456789");
    bytes out(frame_header_size + body.size() - 1, std::byte{0xEE});
    EXPECT_EQ(strix::encode_frame(out, 9, body, true), 0u);
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::byte b) { return b == std::byte{0xEE}; }));

    bytes tiny(5, std::byte{0xEE});
    EXPECT_EQ(strix::encode_frame(tiny, 9, {}, false), 0u);
    EXPECT_TRUE(std::all_of(tiny.begin(), tiny.end(), [](std::byte b) { return b == std::byte{0xEE}; }));

    out.push_back(std::byte{0xEE});  // now exactly big enough
    EXPECT_EQ(strix::encode_frame(out, 9, body, true), out.size());
}

// ---- every error, in its documented order ------------------------------------------------

TEST(frame_codec, need_more_before_12_bytes_asks_for_the_header) {
    const bytes frame = encode(3, as_bytes("payload"), true);
    for (std::size_t n = 0; n < frame_header_size; ++n) {
        const auto r = decode_frame(std::span<const std::byte>(frame).first(n), {});
        EXPECT_EQ(r.error, frame_errc::need_more) << n;
        EXPECT_EQ(r.needed, frame_header_size) << n;
        EXPECT_EQ(r.consumed, 0u) << n;
    }
}

TEST(frame_codec, need_more_after_a_valid_header_asks_for_the_whole_frame) {
    const bytes frame = encode(3, as_bytes("payload"), true);
    for (std::size_t n = frame_header_size; n < frame.size(); ++n) {
        const auto r = decode_frame(std::span<const std::byte>(frame).first(n), {});
        EXPECT_EQ(r.error, frame_errc::need_more) << n;
        EXPECT_EQ(r.needed, frame.size()) << n;
        EXPECT_EQ(r.consumed, 0u) << n;
        EXPECT_EQ(r.frame.header.type, 3) << n;
        EXPECT_TRUE(r.frame.body.empty()) << n;
    }
}

TEST(frame_codec, length_below_header_size_is_length_too_small) {
    for (const std::uint32_t len : {0u, 1u, 11u}) {
        const auto r = decode_frame(header_bytes({len, 1, 0, 0}), {});
        EXPECT_EQ(r.error, frame_errc::length_too_small) << len;
        EXPECT_EQ(r.consumed, 0u);
        EXPECT_EQ(r.needed, 0u);
        EXPECT_EQ(r.frame.header.length, len);
    }
    // 12 is the smallest legal length: a frame with an empty body.
    const auto r = decode_frame(header_bytes({12, 1, 0, 0}), {});
    EXPECT_EQ(r.error, frame_errc::ok);
    EXPECT_EQ(r.consumed, 12u);
    EXPECT_TRUE(r.frame.body.empty());
}

TEST(frame_codec, oversize_length_is_rejected_from_the_12_header_bytes_alone) {
    const codec_limits limits{1000};
    // Only the header is present: the body of a 1001-byte frame never arrives, yet it is refused.
    auto r = decode_frame(header_bytes({1001, 1, 0, 0}), limits);
    EXPECT_EQ(r.error, frame_errc::length_too_large);
    EXPECT_EQ(r.needed, 0u);
    EXPECT_EQ(r.consumed, 0u);
    EXPECT_EQ(r.frame.header.length, 1001u);

    r = decode_frame(header_bytes({0xFFFFFFFFu, 1, strix::frame_flag_crc, 5}), limits);
    EXPECT_EQ(r.error, frame_errc::length_too_large);

    // Exactly max_frame is allowed; with only the header present it is need_more for 1000 bytes.
    r = decode_frame(header_bytes({1000, 1, 0, 0}), limits);
    EXPECT_EQ(r.error, frame_errc::need_more);
    EXPECT_EQ(r.needed, 1000u);

    // The default limit is 64 KiB, header included.
    EXPECT_EQ(decode_frame(header_bytes({65536, 1, 0, 0}), {}).error, frame_errc::need_more);
    EXPECT_EQ(decode_frame(header_bytes({65537, 1, 0, 0}), {}).error, frame_errc::length_too_large);
}

TEST(frame_codec, every_unknown_flag_bit_is_rejected) {
    int rejected = 0;
    for (unsigned bit = 1; bit < 16; ++bit) {
        const auto flags = static_cast<std::uint16_t>(1u << bit);
        EXPECT_EQ(decode_frame(header_bytes({12, 1, flags, 0}), {}).error, frame_errc::unknown_flags) << bit;
        const auto with_crc = static_cast<std::uint16_t>(flags | strix::frame_flag_crc);
        EXPECT_EQ(decode_frame(header_bytes({12, 1, with_crc, 0}), {}).error, frame_errc::unknown_flags) << bit;
        ++rejected;
    }
    EXPECT_EQ(rejected, 15);
}

TEST(frame_codec, nonzero_crc_without_the_flag_is_rejected) {
    bytes frame = encode(4, as_bytes("xyz"), false);
    frame[8] = std::byte{1};
    const auto r = decode_frame(frame, {});
    EXPECT_EQ(r.error, frame_errc::crc_without_flag);
    EXPECT_EQ(r.consumed, 0u);
    // It is a header check: detected before the body is present.
    EXPECT_EQ(decode_frame(std::span<const std::byte>(frame).first(12), {}).error, frame_errc::crc_without_flag);
}

TEST(frame_codec, corrupted_body_or_crc_field_is_crc_mismatch) {
    const bytes good = encode(5, as_bytes("the quick brown fox"), true);
    ASSERT_EQ(decode_frame(good, {}).error, frame_errc::ok);
    int mismatches = 0;
    for (std::size_t i = frame_header_size; i < good.size(); ++i) {
        bytes bad = good;
        bad[i] ^= std::byte{0x20};
        const auto r = decode_frame(bad, {});
        EXPECT_EQ(r.error, frame_errc::crc_mismatch) << i;
        EXPECT_EQ(r.consumed, 0u);
        EXPECT_EQ(r.needed, good.size());
        mismatches += r.error == frame_errc::crc_mismatch;
    }
    EXPECT_EQ(mismatches, 19);
    bytes bad_field = good;
    bad_field[11] ^= std::byte{0x80};
    EXPECT_EQ(decode_frame(bad_field, {}).error, frame_errc::crc_mismatch);
    // Only checked once the whole frame is there.
    EXPECT_EQ(decode_frame(std::span<const std::byte>(bad_field).first(good.size() - 1), {}).error,
              frame_errc::need_more);
}

TEST(frame_codec, checks_run_in_the_documented_order) {
    const codec_limits limits{100};
    const std::uint16_t bad_flags = 0x8001;
    // length_too_small beats everything after it.
    EXPECT_EQ(decode_frame(header_bytes({3, 0, bad_flags, 9}), limits).error, frame_errc::length_too_small);
    // length_too_large beats the flag checks.
    EXPECT_EQ(decode_frame(header_bytes({101, 0, bad_flags, 9}), limits).error, frame_errc::length_too_large);
    // unknown_flags beats crc_without_flag.
    EXPECT_EQ(decode_frame(header_bytes({20, 0, 0x0002, 9}), limits).error, frame_errc::unknown_flags);
    // Header checks beat need_more.
    EXPECT_EQ(decode_frame(header_bytes({20, 0, 0, 9}), limits).error, frame_errc::crc_without_flag);
    EXPECT_EQ(decode_frame(header_bytes({20, 0, 0, 0}), limits).error, frame_errc::need_more);
}

TEST(frame_codec, errors_are_std_error_codes_with_distinct_messages) {
    std::error_code ec = frame_errc::crc_mismatch;
    EXPECT_EQ(std::string(ec.category().name()), "strix.frame");
    EXPECT_EQ(ec, frame_errc::crc_mismatch);
    EXPECT_NE(ec, frame_errc::unknown_flags);
    EXPECT_TRUE(static_cast<bool>(ec));
    EXPECT_EQ(ec.message(), "The CRC32C of the frame body does not match the header's crc field.");
    EXPECT_FALSE(static_cast<bool>(std::error_code(frame_errc::ok))) << "ok must mean no error";

    const frame_errc all[] = {frame_errc::ok,
                              frame_errc::need_more,
                              frame_errc::length_too_small,
                              frame_errc::length_too_large,
                              frame_errc::unknown_flags,
                              frame_errc::crc_mismatch,
                              frame_errc::crc_without_flag,
                              frame_errc::buffer_too_small};
    std::set<int> values;
    std::set<std::string> messages;
    std::set<std::string> names;
    for (const frame_errc e : all) {
        const std::error_code code = make_error_code(e);
        values.insert(code.value());
        messages.insert(code.message());
        names.insert(strix::to_string(e));
        EXPECT_EQ(&code.category(), &strix::frame_category());
    }
    EXPECT_EQ(values.size(), 8u);
    EXPECT_EQ(messages.size(), 8u);
    EXPECT_EQ(names.size(), 8u);
    EXPECT_EQ(*values.begin(), 0);
    EXPECT_EQ(*values.rbegin(), 7);
}

// ---- streaming decoder ---------------------------------------------------------------------

struct seen_frame {
    frame_header header;
    bytes body;
    friend bool operator==(const seen_frame&, const seen_frame&) = default;
};

// ~1000 random frames: random types, sizes from 0 up to ~20k (mostly small), CRC on or off.
bytes random_stream(std::mt19937_64& rng, std::size_t count, std::vector<seen_frame>* expect) {
    bytes stream;
    for (std::size_t i = 0; i < count; ++i) {
        const std::size_t kind = rng() % 10;
        const std::size_t n = kind < 6 ? rng() % 64 : kind < 9 ? rng() % 2048 : rng() % 20000;
        const bytes body = random_bytes(n, rng);
        const auto type = static_cast<std::uint16_t>(rng());
        const bool crc = (rng() & 1) != 0;
        const bytes frame = encode(type, body, crc);
        stream.insert(stream.end(), frame.begin(), frame.end());
        expect->push_back({strix::make_header(type, body, crc), body});
    }
    return stream;
}

std::vector<seen_frame> decode_all_in_one_shot(std::span<const std::byte> stream) {
    std::vector<seen_frame> out;
    while (!stream.empty()) {
        const auto r = decode_frame(stream, {});
        EXPECT_EQ(r.error, frame_errc::ok);
        if (r.error != frame_errc::ok) break;
        out.push_back({r.frame.header, bytes(r.frame.body.begin(), r.frame.body.end())});
        stream = stream.subspan(r.consumed);
    }
    return out;
}

TEST(frame_decoder, byte_at_a_time_and_random_splits_match_one_shot) {
    std::mt19937_64 rng(99);
    std::vector<seen_frame> expect;
    const bytes stream = random_stream(rng, 1000, &expect);
    ASSERT_EQ(expect.size(), 1000u);

    const std::vector<seen_frame> one_shot = decode_all_in_one_shot(stream);
    ASSERT_EQ(one_shot, expect);

    auto collect = [](std::vector<seen_frame>& into) {
        return [&into](const strix::frame_view& f) { into.push_back({f.header, bytes(f.body.begin(), f.body.end())}); };
    };

    {  // one byte at a time
        strix::frame_decoder dec;
        std::vector<seen_frame> got;
        std::size_t ok_results = 0;
        for (std::size_t i = 0; i < stream.size(); ++i) {
            const frame_errc e = dec.feed(std::span<const std::byte>(stream).subspan(i, 1), collect(got));
            ASSERT_TRUE(e == frame_errc::ok || e == frame_errc::need_more) << strix::to_string(e);
            ok_results += e == frame_errc::ok;
            ASSERT_LE(dec.buffer_capacity(), std::size_t{20000 + 12});
        }
        EXPECT_EQ(ok_results, 1000u) << "ok exactly when a frame boundary was reached";
        EXPECT_EQ(dec.buffered(), 0u);
        EXPECT_EQ(got, expect);
    }
    for (int trial = 0; trial < 5; ++trial) {  // random splits, from tiny to several frames long
        strix::frame_decoder dec;
        std::vector<seen_frame> got;
        std::size_t pos = 0;
        frame_errc last = frame_errc::ok;
        while (pos < stream.size()) {
            const std::size_t cap = trial < 2 ? 16 : trial < 4 ? 3000 : 70000;
            const std::size_t n = std::min(stream.size() - pos, 1 + rng() % cap);
            last = dec.feed(std::span<const std::byte>(stream).subspan(pos, n), collect(got));
            ASSERT_TRUE(last == frame_errc::ok || last == frame_errc::need_more);
            pos += n;
        }
        EXPECT_EQ(last, frame_errc::ok);
        EXPECT_EQ(got, expect) << "trial " << trial;
    }
}

TEST(frame_decoder, whole_frames_in_one_piece_are_delivered_without_copy) {
    bytes stream = encode(1, as_bytes("alpha"), true);
    const bytes b = encode(2, as_bytes("beta"), false);
    stream.insert(stream.end(), b.begin(), b.end());

    strix::frame_decoder dec;
    std::vector<const std::byte*> bodies;
    EXPECT_EQ(dec.feed(stream, [&](const strix::frame_view& f) { bodies.push_back(f.body.data()); }), frame_errc::ok);
    ASSERT_EQ(bodies.size(), 2u);
    EXPECT_EQ(bodies[0], stream.data() + 12);
    EXPECT_EQ(bodies[1], stream.data() + 17 + 12);
    EXPECT_EQ(dec.buffer_capacity(), 0u) << "nothing was buffered, so nothing was allocated";
}

TEST(frame_decoder, buffers_no_more_than_the_declared_length) {
    const codec_limits limits{64 * 1024};
    std::mt19937_64 rng(5);
    const bytes body = random_bytes(5000, rng);
    const bytes frame = encode(8, body, true);

    strix::frame_decoder dec(limits);
    int frames = 0;
    auto on = [&](const strix::frame_view& f) {
        ++frames;
        EXPECT_TRUE(std::equal(f.body.begin(), f.body.end(), body.begin(), body.end()));
    };
    EXPECT_EQ(dec.feed(std::span<const std::byte>(frame).first(7), on), frame_errc::need_more);
    EXPECT_EQ(dec.buffered(), 7u);
    EXPECT_LE(dec.buffer_capacity(), frame_header_size);
    EXPECT_EQ(dec.feed(std::span<const std::byte>(frame).subspan(7, 100), on), frame_errc::need_more);
    EXPECT_EQ(dec.buffered(), 107u);
    EXPECT_EQ(dec.buffer_capacity(), frame.size()) << "reserves exactly the validated length";
    EXPECT_EQ(dec.feed(std::span<const std::byte>(frame).subspan(107), on), frame_errc::ok);
    EXPECT_EQ(frames, 1);
    EXPECT_EQ(dec.buffered(), 0u);
    EXPECT_EQ(dec.buffer_capacity(), frame.size());
}

TEST(frame_decoder, oversize_header_fails_once_its_12th_byte_arrives) {
    strix::frame_decoder dec(codec_limits{1024});
    const bytes hdr = header_bytes({1025, 1, 0, 0});
    int frames = 0;
    auto on = [&](const strix::frame_view&) { ++frames; };
    for (std::size_t i = 0; i < 11; ++i) {
        EXPECT_EQ(dec.feed(std::span<const std::byte>(hdr).subspan(i, 1), on), frame_errc::need_more);
    }
    EXPECT_EQ(dec.feed(std::span<const std::byte>(hdr).subspan(11, 1), on), frame_errc::length_too_large);
    EXPECT_LE(dec.buffer_capacity(), frame_header_size);
    EXPECT_EQ(dec.error(), frame_errc::length_too_large);
    EXPECT_EQ(frames, 0);
}

TEST(frame_decoder, errors_are_sticky_and_earlier_frames_still_arrive) {
    bytes stream = encode(1, as_bytes("one"), true);
    const bytes two = encode(2, as_bytes("two"), false);
    bytes bad = encode(3, as_bytes("three"), true);
    bad.back() ^= std::byte{1};
    const bytes four = encode(4, as_bytes("four"), false);
    stream.insert(stream.end(), two.begin(), two.end());
    stream.insert(stream.end(), bad.begin(), bad.end());
    stream.insert(stream.end(), four.begin(), four.end());

    for (const std::size_t piece : {stream.size(), std::size_t{1}, std::size_t{5}}) {
        strix::frame_decoder dec;
        std::vector<std::uint16_t> types;
        auto on = [&](const strix::frame_view& f) { types.push_back(f.header.type); };
        frame_errc result = frame_errc::ok;
        for (std::size_t pos = 0; pos < stream.size(); pos += piece) {
            const auto n = std::min(piece, stream.size() - pos);
            result = dec.feed(std::span<const std::byte>(stream).subspan(pos, n), on);
            if (result != frame_errc::ok && result != frame_errc::need_more) break;
        }
        EXPECT_EQ(result, frame_errc::crc_mismatch) << piece;
        EXPECT_EQ(types, (std::vector<std::uint16_t>{1, 2})) << piece;
        // Sticky: a perfectly good frame afterwards is not looked at.
        EXPECT_EQ(dec.feed(four, on), frame_errc::crc_mismatch);
        EXPECT_EQ(types.size(), 2u);
        EXPECT_EQ(dec.buffered(), 0u);

        dec.reset();
        EXPECT_EQ(dec.error(), frame_errc::ok);
        EXPECT_EQ(dec.feed(four, on), frame_errc::ok);
        EXPECT_EQ(types, (std::vector<std::uint16_t>{1, 2, 4})) << piece;
    }
}

TEST(frame_decoder, header_errors_surface_through_the_buffered_path_too) {
    struct bad_case {
        frame_header h;
        frame_errc expect;
    };
    const bad_case cases[] = {
        {{5, 0, 0, 0}, frame_errc::length_too_small},
        {{70000, 0, 0, 0}, frame_errc::length_too_large},
        {{20, 0, 0x0004, 0}, frame_errc::unknown_flags},
        {{20, 0, 0, 77}, frame_errc::crc_without_flag},
    };
    for (const auto& c : cases) {
        const bytes hdr = header_bytes(c.h);
        strix::frame_decoder dec;
        auto on = [](const strix::frame_view&) { ADD_FAILURE() << "no frame expected"; };
        EXPECT_EQ(dec.feed(std::span<const std::byte>(hdr).first(6), on), frame_errc::need_more);
        EXPECT_EQ(dec.feed(std::span<const std::byte>(hdr).subspan(6), on), c.expect);
        EXPECT_EQ(dec.error(), c.expect);
    }
}

TEST(frame_decoder, empty_feed_is_ok_and_changes_nothing) {
    strix::frame_decoder dec;
    int frames = 0;
    EXPECT_EQ(dec.feed({}, [&](const strix::frame_view&) { ++frames; }), frame_errc::ok);
    EXPECT_EQ(frames, 0);
    EXPECT_EQ(dec.buffered(), 0u);
}

}  // namespace
