// Fuzz target: the CURVE handshake and MESSAGE boxes a strix::link tcp/ipc peer runs when
// socket_options::security asks for CURVE (src/link/security/curve.cpp, src/link/security/mechanism.cpp, ZAP through
// an allow_list from src/link/security/security.cpp).
//
// Input: [mode u8][step u8][bytes...]
//   An honest client and server (fixed keys) run the handshake against each other; at command
//   `step % 6` (0 HELLO, 1 WELCOME, 2 INITIATE, 3 READY, 4 a client MESSAGE, 5 a server MESSAGE)
//   the fuzzer takes over that command:
//   mode bit 0   0: the bytes replace the command's body (name length, name, data) outright
//                1: the bytes are (offset u16, xor u8) triples applied to the honest body
//   mode bit 1   ZAP allows the client's key (0) or only another key (1)
//   mode bit 2   the client uses the right server key (0) or a wrong one (1)
// Checked:
//   - nothing reads past a command (each is an exact heap copy: ASan) and nothing crashes;
//   - an untouched run completes: both sides done, each side holds the other's metadata, and
//     messages of the remaining bytes round-trip with their flags;
//   - a refused ZAP or a wrong server key never completes the handshake;
//   - a changed byte in any boxed part (HELLO's signature, WELCOME, INITIATE, READY, MESSAGE) is
//     refused: a changed command never yields a handshake with other keys or metadata, and a
//     changed MESSAGE never opens; a MESSAGE replayed (same nonce) never opens twice.
#include "fuzz_support.hpp"

#include "link/security/mechanism.hpp"

#include <strix/link/security.hpp>
#include <strix/link/zmtp.hpp>

#include <sodium.h>

#include <array>
#include <string>
#include <vector>

using namespace strix;
using namespace strix::link;
using strix::fuzz::bytes;
using strix::fuzz::exact_copy;

namespace {

struct keys {
    curve_keypair server, client, other;
    keys() {
        // Fixed keys: every run of an input is the same handshake (apart from random nonces).
        std::array<std::byte, 32> s{}, c{}, o{};
        for (std::size_t i = 0; i < 32; ++i) {
            s[i] = static_cast<std::byte>(i + 1);
            c[i] = static_cast<std::byte>(0x80 + i);
            o[i] = static_cast<std::byte>(0x40 + i);
        }
        server = curve_keypair::from_secret(s);
        client = curve_keypair::from_secret(c);
        other = curve_keypair::from_secret(o);
    }
};

std::vector<std::byte> props(std::string_view type) {
    std::vector<std::byte> m;
    detail::put_property(m, "Socket-Type", std::as_bytes(std::span(type.data(), type.size())));
    return m;
}

// The command frames in `out` (whole frames as zmtp_pipe puts them) as bodies.
std::vector<std::vector<std::byte>> bodies(const std::vector<std::byte>& out) {
    std::vector<std::vector<std::byte>> v;
    bytes rest(out);
    while (!rest.empty()) {
        const frame_cut c = zmtp::frame_framer().cut(rest, SIZE_MAX);
        STRIX_FUZZ_CHECK(!c.error && c.size >= 2 && c.size <= rest.size());
        const zmtp::frame f = zmtp::split(rest.first(c.size));
        STRIX_FUZZ_CHECK(f.command());
        v.emplace_back(f.body.begin(), f.body.end());
        rest = rest.subspan(c.size);
    }
    return v;
}

struct tamper {
    bool raw = false;
    bytes data;
    // Applies the fuzzer's bytes to body; true when the body changed.
    bool apply(std::vector<std::byte>& body) const {
        if (raw) {
            const bool changed = body.size() != data.size() || !std::equal(body.begin(), body.end(), data.begin());
            body.assign(data.begin(), data.end());
            return changed;
        }
        const std::vector<std::byte> before = body;
        for (std::size_t i = 0; i + 3 <= data.size() && !body.empty(); i += 3) {
            const std::size_t off =
                ((static_cast<std::size_t>(data[i]) << 8) | static_cast<std::size_t>(data[i + 1])) % body.size();
            body[off] ^= data[i + 2];
        }
        // Several xors may cancel out: what counts is the result.
        return body != before;
    }
};

// Feeds one command body to m (an exact copy), the way zmtp_pipe does.
detail::step feed(detail::mechanism& m, const std::vector<std::byte>& body, std::vector<std::byte>& out,
                  const zap_handler& zap) {
    const exact_copy copy{bytes(body)};
    zmtp::command cmd;
    if (!zmtp::parse_command(copy.view(), cmd)) return {detail::step::status::failed, link_errc::bad_handshake, {}};
    STRIX_FUZZ_CHECK(cmd.name.size() + cmd.data.size() + 1 == body.size());
    detail::step st = m.on_command(cmd, out);
    // A server suspends for ZAP's answer (zmtp_pipe asks the handler and resumes with it).
    if (st.st == detail::step::status::zap) {
        STRIX_FUZZ_CHECK(m.as_server() && zap);
        st = m.on_zap(zap(m.pending_zap()), out);
    }
    return st;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const keys k;
    fuzz::reader r(fuzz::as_bytes(data, size));
    const std::uint8_t mode = r.u8();
    const int step_at = r.u8() % 6;
    const tamper t{(mode & 1) == 0, r.rest()};
    const bool zap_refuses = mode & 2;
    const bool wrong_server_key = mode & 4;

    allow_list allow;
    allow.allow_key(zap_refuses ? k.other.public_z85() : k.client.public_z85());
    security_options so, co;
    so.curve_server = true;
    so.curve_secretkey = k.server.secret_z85();
    so.zap = allow.handler();
    co.curve_secretkey = k.client.secret_z85();
    co.curve_publickey = k.client.public_z85();
    co.curve_serverkey = wrong_server_key ? k.other.public_z85() : k.server.public_z85();

    detail::mechanism_context sc, cc;
    sc.opts = &so;
    sc.metadata = props("PULL");
    sc.peer_address = "tcp://127.0.0.1:5555";
    cc.opts = &co;
    cc.metadata = props("PUSH");
    auto server = detail::make_mechanism(detail::check_security(so), std::move(sc));
    auto client = detail::make_mechanism(detail::check_security(co), std::move(cc));

    std::vector<std::byte> out;
    client->start(out);
    auto in_flight = bodies(out);
    STRIX_FUZZ_CHECK(in_flight.size() == 1);
    bool touched = false;
    detail::mechanism* to = server.get();
    detail::mechanism* from = client.get();
    bool server_done = false, client_done = false;
    for (int stage = 0; stage < 4; ++stage) {
        STRIX_FUZZ_CHECK(in_flight.size() == 1);
        auto body = in_flight[0];
        if (stage == step_at) touched |= t.apply(body);
        out.clear();
        const detail::step st = feed(*to, body, out, so.zap);
        if (st.st == detail::step::status::failed) {
            // Refusals have causes: a tampered command, a refused key, or the wrong server key.
            STRIX_FUZZ_CHECK(touched || zap_refuses || wrong_server_key);
            return 0;
        }
        if (st.st == detail::step::status::done) (to == server.get() ? server_done : client_done) = true;
        in_flight = bodies(out);
        std::swap(to, from);
        if (stage == 3) break;
        if (in_flight.empty()) break;
    }
    // The handshake ended; only an honest run (or changes the boxes could not see, which
    // raw mode's identical bodies are) may complete it.
    STRIX_FUZZ_CHECK(server_done && client_done);
    STRIX_FUZZ_CHECK(!zap_refuses && !wrong_server_key);
    STRIX_FUZZ_CHECK(!touched);
    STRIX_FUZZ_CHECK(client->peer_metadata() == props("PULL"));
    STRIX_FUZZ_CHECK(server->peer_metadata() == props("PUSH"));

    // Messages: the remaining bytes as parts both ways; one of them tampered when step is 4 or 5.
    const bytes msg = t.data.subspan(0, std::min<std::size_t>(t.data.size(), 4096));
    for (int dir = 0; dir < 2; ++dir) {
        detail::mechanism& tx = dir == 0 ? *client : *server;
        detail::mechanism& rx = dir == 0 ? *server : *client;
        for (std::uint8_t flags : {std::uint8_t{0}, zmtp::flag_more, zmtp::flag_command}) {
            std::vector<std::byte> wire(msg.size() + detail::mechanism::boxed_overhead);
            const std::size_t n = tx.encode(flags, msg, wire.data());
            STRIX_FUZZ_CHECK(n <= wire.size());
            wire.resize(n);
            const frame_cut c = zmtp::frame_framer().cut(bytes(wire), SIZE_MAX);
            STRIX_FUZZ_CHECK(!c.error && c.size == wire.size());
            std::vector<std::byte> body(zmtp::split(bytes(wire)).body.begin(), zmtp::split(bytes(wire)).body.end());
            const bool tampered = step_at == 4 + dir && flags == 0 && t.apply(body);
            const exact_copy copy{bytes(body)};
            std::uint8_t got_flags = 0;
            std::vector<std::byte> plain;
            const bool opened = rx.decode(copy.view(), got_flags, plain);
            if (tampered) {
                STRIX_FUZZ_CHECK(!opened);
                continue;
            }
            STRIX_FUZZ_CHECK(opened && got_flags == flags);
            STRIX_FUZZ_CHECK(plain.size() == msg.size() + 1 && std::equal(msg.begin(), msg.end(), plain.begin() + 1));
            // The same MESSAGE again: its nonce is spent.
            STRIX_FUZZ_CHECK(!rx.decode(copy.view(), got_flags, plain));
        }
    }
    return 0;
}
