// Fuzz target: the ZMTP 3.1 codec a strix::link tcp/ipc peer reads with (include/strix/link/zmtp.hpp):
// greeting_framer + parse_greeting, frame_framer + split, parse_command, for_each_property, and
// the encoders (ready_frame, error_frame, ping_frame, pong_frame, command_frame, write_header).
//
// Input: [mode u8][max_msg u16][bytes from the peer...]
//   mode bit 0   strix's own greeting goes first (so mutations reach the frames quickly)
//   mode bit 1   then a READY from a DEALER
//   max_msg      the socket's max message size (0 = 1 MiB, the default)
//
// The bytes go through the same phases as a pipe in src/link/zmtp/zmtp_pipe.cpp: greeting, handshake
// (READY or ERROR), then commands and messages. Every frame is cut from an exact heap copy of
// what is left (ASan: no read past it) and refused, as the session does, when its header
// announces more than the limit: nothing is buffered for it. Checked:
//   - greeting_framer refuses exactly what parse_greeting refuses, with the same error; a
//     mechanism name is at most 20 bytes;
//   - split() gives the flags and a body that ends where the frame ends; parse_command's name
//     and data lie inside the body; for_each_property only hands out names and values inside
//     the data, and stops with false on a malformed list;
//   - what the peer sent, re-encoded by strix (READY with its Socket-Type and Identity, ERROR
//     with its reason, PONG for its PING, a message frame's header), parses back to the same.
#include "fuzz_support.hpp"

#include <strix/link/zmtp.hpp>

#include <array>
#include <string>
#include <vector>

using namespace strix;
using namespace strix::link;
using strix::fuzz::bytes;
using strix::fuzz::exact_copy;

namespace {

bool inside(bytes outer, bytes inner) {
    return inner.empty() ||
           (inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size());
}

bool inside(bytes outer, std::string_view inner) {
    return inside(outer, bytes(reinterpret_cast<const std::byte*>(inner.data()), inner.size()));
}

bytes view_of(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }
bytes view_of(std::string_view s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }

bool same(bytes a, bytes b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

// A whole frame strix encoded, parsed back: cut to its full size, command name and data (views
// into `frame`, hence no temporaries).
zmtp::command reparse_command(std::vector<std::byte>&&, std::string_view) = delete;
zmtp::command reparse_command(const std::vector<std::byte>& frame, std::string_view expect_name) {
    const frame_cut c = zmtp::frame_framer().cut(view_of(frame), SIZE_MAX);
    STRIX_FUZZ_CHECK(!c.error && c.size == frame.size());
    const zmtp::frame f = zmtp::split(view_of(frame));
    STRIX_FUZZ_CHECK(f.command() && !f.more());
    zmtp::command cmd;
    STRIX_FUZZ_CHECK(zmtp::parse_command(f.body, cmd));
    STRIX_FUZZ_CHECK(cmd.name == expect_name);
    return cmd;
}

// Properties, checked to lie inside `data`; false when the list is malformed.
bool read_properties(bytes data, std::vector<std::pair<std::string_view, bytes>>& out) {
    return zmtp::for_each_property(data, [&](std::string_view name, bytes value) {
        STRIX_FUZZ_CHECK(!name.empty() && name.size() <= 255);
        STRIX_FUZZ_CHECK(inside(data, name) && inside(data, value));
        out.emplace_back(name, value);
    });
}

// The reason a peer's ERROR gives, as zmtp_pipe.cpp reads it.
std::string error_reason(bytes data) {
    if (data.empty()) return {};
    const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(data[0]), data.size() - 1);
    return std::string(fuzz::as_text(data.subspan(1, n)));
}

void check_ready(bytes data) {
    std::vector<std::pair<std::string_view, bytes>> props;
    if (!read_properties(data, props)) return;
    std::string_view type;
    bytes identity;
    bool has_identity = false;
    for (const auto& [name, value] : props) {
        if (zmtp::iequals(name, "Socket-Type")) type = fuzz::as_text(value);
        if (zmtp::iequals(name, "identity")) {
            identity = value;
            has_identity = true;
        }
    }
    // What strix would send with the peer's values parses back to them.
    const std::vector<std::byte> ready = zmtp::ready_frame(type, has_identity ? &identity : nullptr);
    const zmtp::command cmd = reparse_command(ready, "READY");
    std::vector<std::pair<std::string_view, bytes>> back;
    STRIX_FUZZ_CHECK(read_properties(cmd.data, back));
    STRIX_FUZZ_CHECK(back.size() == (has_identity ? 2u : 1u));
    STRIX_FUZZ_CHECK(back[0].first == "Socket-Type" && same(back[0].second, view_of(type)));
    if (has_identity) STRIX_FUZZ_CHECK(back[1].first == "Identity" && same(back[1].second, identity));
}

void check_error(bytes data) {
    const std::string reason = error_reason(data);
    STRIX_FUZZ_CHECK(reason.size() <= 255 && reason.size() < std::max<std::size_t>(data.size(), 1));
    const std::vector<std::byte> frame = zmtp::error_frame(reason);
    const zmtp::command cmd = reparse_command(frame, "ERROR");
    STRIX_FUZZ_CHECK(error_reason(cmd.data) == reason);
}

void check_ping(bytes data) {
    if (data.size() < 2) return;  // zmtp_pipe.cpp ignores a PING without its TTL
    const bytes context = data.subspan(2);
    const std::vector<std::byte> pong_bytes = zmtp::pong_frame(context);
    const zmtp::command pong = reparse_command(pong_bytes, "PONG");
    STRIX_FUZZ_CHECK(same(pong.data, context.first(std::min<std::size_t>(context.size(), 16))));
    const std::uint16_t ttl =
        static_cast<std::uint16_t>((static_cast<unsigned>(data[0]) << 8) | static_cast<unsigned>(data[1]));
    const std::vector<std::byte> ping_bytes = zmtp::ping_frame(ttl, context);
    const zmtp::command ping = reparse_command(ping_bytes, "PING");
    STRIX_FUZZ_CHECK(ping.data.size() >= 2 && same(ping.data.first(2), data.first(2)));
}

void check_command(bytes body, bool handshake) {
    zmtp::command cmd;
    if (!zmtp::parse_command(body, cmd)) return;
    STRIX_FUZZ_CHECK(!cmd.name.empty() && inside(body, cmd.name) && inside(body, cmd.data));
    STRIX_FUZZ_CHECK(1 + cmd.name.size() + cmd.data.size() == body.size());
    // Any command's data through the property reader: it must stay inside, whatever it holds.
    std::vector<std::pair<std::string_view, bytes>> ignored;
    (void)read_properties(cmd.data, ignored);
    const std::vector<std::byte> again_bytes = zmtp::command_frame(cmd.name, cmd.data);
    const zmtp::command again = reparse_command(again_bytes, cmd.name);
    STRIX_FUZZ_CHECK(same(again.data, cmd.data));
    if (cmd.name == "READY") check_ready(cmd.data);
    if (cmd.name == "ERROR") check_error(cmd.data);
    if (!handshake && cmd.name == "PING") check_ping(cmd.data);
}

void check_message_header(const zmtp::frame& f) {
    std::array<std::byte, zmtp::max_header> hdr{};
    const std::size_t n = zmtp::write_header(hdr.data(), f.flags & zmtp::flag_more, f.body.size());
    STRIX_FUZZ_CHECK(n == (f.body.size() <= 255 ? 2u : 9u));
    const frame_cut c = zmtp::frame_framer().cut(bytes(hdr.data(), n), SIZE_MAX);
    STRIX_FUZZ_CHECK(!c.error && c.size == n + f.body.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::reader in(fuzz::as_bytes(data, size));
    const std::uint8_t mode = in.u8();
    const std::uint16_t m = in.u16();
    const std::size_t max_frame = (m == 0 ? 1024 * 1024 : m) + zmtp::max_header;  // as zmtp_pipe.cpp sets it

    std::vector<std::byte> stream;
    if (mode & 1) {
        std::array<std::byte, zmtp::greeting_size> g{};
        zmtp::write_greeting(g);
        stream.insert(stream.end(), g.begin(), g.end());
        if (mode & 2) {
            const std::vector<std::byte> ready = zmtp::ready_frame("DEALER", nullptr);
            stream.insert(stream.end(), ready.begin(), ready.end());
        }
    }
    stream.insert(stream.end(), in.rest().begin(), in.rest().end());

    enum class phase { greeting, handshake, ready } ph = phase::greeting;
    std::size_t pos = 0, parts = 0;
    while (pos < stream.size()) {
        const exact_copy rest(bytes(stream).subspan(pos));
        const bytes b = rest.view();
        if (ph == phase::greeting) {
            const frame_cut c = zmtp::greeting_framer().cut(b, max_frame);
            if (b.size() >= zmtp::greeting_size) {
                // The framer's early refusal is parse_greeting's verdict, from the first bytes.
                zmtp::greeting g;
                const std::error_code ec = zmtp::parse_greeting(b.first<zmtp::greeting_size>(), g);
                STRIX_FUZZ_CHECK(ec == c.error);
                if (!ec) {
                    STRIX_FUZZ_CHECK(c.size == zmtp::greeting_size && g.major >= 3 && g.mechanism.size() <= 20);
                    if (g.mechanism != "NULL") {
                        const std::string why = "unsupported security mechanism " + g.mechanism;
                        const std::vector<std::byte> err_bytes = zmtp::error_frame(why);
                        const zmtp::command err = reparse_command(err_bytes, "ERROR");
                        STRIX_FUZZ_CHECK(error_reason(err.data) == why);
                        break;  // the pipe sends ERROR and closes
                    }
                }
            }
            if (c.error) {
                const std::error_code e = c.error;
                STRIX_FUZZ_CHECK(e.category() == link_category() && !e.message().empty());
                break;
            }
            if (c.size > b.size()) break;
            ph = phase::handshake;
            pos += c.size;
            continue;
        }
        const frame_cut c = zmtp::frame_framer().cut(b, max_frame);
        if (c.error) STRIX_FUZZ_CHECK(c.error == link_errc::bad_frame && !std::error_code(c.error).message().empty());
        if (c.error || c.size == 0 || c.size > max_frame || c.size > b.size()) break;  // refused or incomplete
        const exact_copy whole(b.first(c.size));
        const zmtp::frame f = zmtp::split(whole.view());
        STRIX_FUZZ_CHECK(inside(whole.view(), f.body) && f.body.data() + f.body.size() == whole.view().data() + c.size);
        pos += c.size;
        if (ph == phase::handshake) {
            zmtp::command cmd;
            if (!f.command() || !zmtp::parse_command(f.body, cmd) || cmd.name != "READY") {
                if (f.command()) check_command(f.body, true);
                break;  // bad handshake, or the peer's ERROR: closed
            }
            check_command(f.body, true);
            std::vector<std::pair<std::string_view, bytes>> props;
            if (!read_properties(cmd.data, props)) break;
            ph = phase::ready;
            continue;
        }
        if (f.command()) {
            zmtp::command cmd;
            if (!zmtp::parse_command(f.body, cmd)) break;  // bad_frame: dropped
            check_command(f.body, false);
            if (cmd.name == "ERROR") break;
            continue;
        }
        check_message_header(f);
        parts = f.more() ? parts + 1 : 0;
        if (parts >= 1024) break;  // zmtp_pipe.cpp's max_parts
    }
    return 0;
}
