// CURVE (RFC 25 ZMTP-CURVE over RFC 26 CurveZMQ) with libsodium: the handshake of both sides and
// the MESSAGE boxes after it. Boxes are crypto_box's "easy" form (16-byte MAC, then ciphertext),
// which is the RFC's Box[] without NaCl's zero padding.
//
//   MESSAGE boxes skip a step of crypto_box_easy_afternm with the same result: XSalsa20 derives
//   a subkey from the key and the nonce's first 16 bytes (HSalsa20), and a MESSAGE nonce's first
//   16 bytes are a constant prefix per direction, so each direction's subkey is computed once per
//   connection and each box is Salsa20 under it (block 0's first 32 bytes the Poly1305 key, the
//   rest the stream) plus Poly1305, as crypto_secretbox builds it. HSalsa20 was a fifth of the
//   CPU time of a 64-byte CURVE stream; libzmq's peers open these boxes (tests/link/security_test).
//
//   24-byte nonces: a 16-byte prefix + an 8-byte short nonce (big-endian counter, from 1, one
//   per command and message each way; a peer's must only go up), or an 8-byte prefix + 16
//   random bytes (long nonces: WELCOME, cookie, vouch).
#include "link/security/mechanism.hpp"

#include <sodium.h>

#include <cstring>
#include <stdexcept>

namespace strix::link::detail {
namespace {

using uc = unsigned char;
constexpr std::size_t key_bytes = crypto_box_PUBLICKEYBYTES;  // 32
constexpr std::size_t mac_bytes = crypto_box_MACBYTES;        // 16
static_assert(key_bytes == 32 && mac_bytes == 16 && crypto_box_NONCEBYTES == 24);
static_assert(crypto_secretbox_KEYBYTES == 32 && crypto_secretbox_MACBYTES == 16);

using key = std::array<uc, key_bytes>;
using nonce = std::array<uc, 24>;

constexpr std::size_t hello_size = 2 + 72 + 32 + 8 + 80;      // after the name
constexpr std::size_t welcome_size = 16 + 144;
constexpr std::size_t cookie_size = 16 + 80;
constexpr std::size_t initiate_min = cookie_size + 8 + 144;
constexpr std::size_t vouch_size = 16 + 80;

nonce short_nonce(const char (&prefix)[17], std::uint64_t n) {
    nonce v;
    std::memcpy(v.data(), prefix, 16);
    for (int i = 0; i < 8; ++i) v[16 + static_cast<std::size_t>(i)] = static_cast<uc>(n >> (56 - 8 * i));
    return v;
}

nonce long_nonce(const char (&prefix)[9], const uc* random16) {
    nonce v;
    std::memcpy(v.data(), prefix, 8);
    std::memcpy(v.data() + 8, random16, 16);
    return v;
}

std::uint64_t load_be64(const std::byte* p) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<std::uint64_t>(p[i]);
    return v;
}

void put_be64(uc* p, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<uc>(v >> (56 - 8 * i));
}

key to_key(const std::array<std::byte, 32>& k) {
    key v;
    std::memcpy(v.data(), k.data(), 32);
    return v;
}

const uc* u(const std::byte* p) { return reinterpret_cast<const uc*>(p); }
uc* u(std::byte* p) { return reinterpret_cast<uc*>(p); }
bytes_view bv(const uc* p, std::size_t n) { return {reinterpret_cast<const std::byte*>(p), n}; }

class curve_mechanism final : public mechanism {
public:
    explicit curve_mechanism(mechanism_context ctx) : ctx_(std::move(ctx)) {
        if (sodium_init() < 0) throw std::runtime_error("strix::link: libsodium failed to initialise");
        const auto& o = *ctx_.opts;
        const auto kp = curve_keypair::from_secret(*parse_curve_key(o.curve_secretkey));
        secret_ = to_key(kp.secret_key);
        public_ = to_key(kp.public_key);
        server_ = o.curve_server;
        if (!server_) server_public_ = to_key(*parse_curve_key(o.curve_serverkey));
        crypto_box_keypair(tpub_.data(), tsec_.data());  // this connection's transient pair
    }
    ~curve_mechanism() override {
        sodium_memzero(tsec_.data(), tsec_.size());
        sodium_memzero(precomputed_.data(), precomputed_.size());
        sodium_memzero(cookie_key_.data(), cookie_key_.size());
        sodium_memzero(tx_subkey_.data(), tx_subkey_.size());
        sodium_memzero(rx_subkey_.data(), rx_subkey_.size());
    }

    const char* name() const noexcept override { return "CURVE"; }
    bool as_server() const noexcept override { return server_; }
    bool boxes() const noexcept override { return true; }

    void start(std::vector<std::byte>& out) override {
        if (server_) {
            state_ = state::expect_hello;
            return;
        }
        // HELLO: version 1.0, 72 zeros, C', short nonce, Box[64 zeros](C'->S).
        std::array<uc, hello_size> d{};
        d[0] = 1;
        std::memcpy(d.data() + 74, tpub_.data(), 32);
        const std::uint64_t n = next_nonce_++;
        put_be64(d.data() + 106, n);
        const std::array<uc, 64> zeros{};
        const nonce nn = short_nonce("CurveZMQHELLO---", n);
        // A server key libsodium refuses (a low-order point) leaves the box zero: the server refuses it.
        if (crypto_box_easy(d.data() + 114, zeros.data(), zeros.size(), nn.data(), server_public_.data(), tsec_.data()))
            std::memset(d.data() + 114, 0, 80);
        append(out, zmtp::command_frame("HELLO", bv(d.data(), d.size())));
        state_ = state::expect_welcome;
    }

    step on_command(const zmtp::command& cmd, std::vector<std::byte>& out) override {
        switch (state_) {
            case state::expect_hello: return on_hello(cmd, out);
            case state::expect_initiate: return on_initiate(cmd);
            case state::expect_welcome: return on_welcome(cmd, out);
            case state::expect_ready: return on_ready(cmd);
            case state::expect_zap:
            case state::finished: break;
        }
        return fail(link_errc::bad_handshake, "command after the handshake");
    }

    step on_zap(const zap_reply& r, std::vector<std::byte>& out) override {
        if (state_ != state::expect_zap) return fail(link_errc::bad_handshake, "ZAP answer out of turn");
        if (!r.accepted()) {
            // ZMTP-CURVE lets the server answer INITIATE with ERROR; libzmq reports the status.
            state_ = state::finished;
            return zap_refusal(r, out);
        }
        user_id_ = r.user_id;
        // READY: short nonce, Box[metadata](S'->C').
        const std::uint64_t rn = next_nonce_++;
        std::vector<uc> ready(8 + mac_bytes + ctx_.metadata.size());
        put_be64(ready.data(), rn);
        const nonce rnn = short_nonce("CurveZMQREADY---", rn);
        crypto_box_easy_afternm(ready.data() + 8, u(ctx_.metadata.data()), ctx_.metadata.size(), rnn.data(),
                                precomputed_.data());
        append(out, zmtp::command_frame("READY", bv(ready.data(), ready.size())));
        derive_message_keys();
        state_ = state::finished;
        return {step::status::done, {}, {}};
    }

    std::size_t encode(std::uint8_t flags, bytes_view body, std::byte* out) override {
        // Header, "\x07MESSAGE", short nonce, Box[flags + body]. The outer frame is a plain
        // (non-command) frame, as libzmq 4.3 writes it; the inner flags say MORE and COMMAND.
        const std::size_t box = mac_bytes + 1 + body.size();
        const std::size_t h = zmtp::write_header(out, 0, 8 + 8 + box);
        std::memcpy(out + h, "\x07MESSAGE", 8);
        scratch_.resize(1 + body.size());
        scratch_[0] = static_cast<uc>((flags & zmtp::flag_more ? 1 : 0) | (flags & zmtp::flag_command ? 2 : 0));
        if (!body.empty()) std::memcpy(scratch_.data() + 1, body.data(), body.size());
        const std::uint64_t n = next_nonce_++;
        put_be64(u(out + h + 8), n);
        seal(u(out + h + 16), scratch_.data(), scratch_.size(), u(out + h + 8));
        return h + 16 + box;
    }

    bool decode(bytes_view body, std::uint8_t& flags, std::vector<std::byte>& plain) override {
        if (body.size() < 8 + 8 + mac_bytes + 1 || std::memcmp(body.data(), "\x07MESSAGE", 8) != 0) return false;
        const std::uint64_t n = load_be64(body.data() + 8);
        if (n <= peer_nonce_) return false;  // replayed or reordered
        const std::size_t box = body.size() - 16;
        plain.resize(box - mac_bytes);
        if (!open(u(plain.data()), u(body.data() + 16), box, u(body.data() + 8))) return false;
        peer_nonce_ = n;
        const auto f = static_cast<unsigned>(plain[0]);
        if (f & ~3u) return false;
        flags = static_cast<std::uint8_t>(((f & 1u) ? zmtp::flag_more : 0) | ((f & 2u) ? zmtp::flag_command : 0));
        return true;
    }

private:
    enum class state : std::uint8_t {
        expect_hello,
        expect_welcome,
        expect_initiate,
        expect_zap,
        expect_ready,
        finished
    };

    // Each direction's XSalsa20 subkey for MESSAGE boxes (see the top of the file).
    void derive_message_keys() {
        static const char c_prefix[] = "CurveZMQMESSAGEC";
        static const char s_prefix[] = "CurveZMQMESSAGES";
        crypto_core_hsalsa20(tx_subkey_.data(), reinterpret_cast<const uc*>(server_ ? s_prefix : c_prefix),
                             precomputed_.data(), nullptr);
        crypto_core_hsalsa20(rx_subkey_.data(), reinterpret_cast<const uc*>(server_ ? c_prefix : s_prefix),
                             precomputed_.data(), nullptr);
    }

    // out = MAC (16) + m XOR stream[32..]; n8 is the short nonce (Salsa20's nonce).
    void seal(uc* out, const uc* m, std::size_t mlen, const uc* n8) {
        std::array<uc, 64> block0;
        crypto_stream_salsa20(block0.data(), block0.size(), n8, tx_subkey_.data());
        uc* c = out + mac_bytes;
        const std::size_t first = std::min<std::size_t>(mlen, 32);
        for (std::size_t i = 0; i < first; ++i) c[i] = static_cast<uc>(m[i] ^ block0[32 + i]);
        if (mlen > 32) crypto_stream_salsa20_xor_ic(c + 32, m + 32, mlen - 32, n8, 1, tx_subkey_.data());
        crypto_onetimeauth_poly1305(out, c, mlen, block0.data());
        sodium_memzero(block0.data(), block0.size());
    }

    // The reverse of seal: false (nothing written) when the MAC does not verify.
    bool open(uc* m, const uc* box, std::size_t boxlen, const uc* n8) {
        std::array<uc, 64> block0;
        crypto_stream_salsa20(block0.data(), block0.size(), n8, rx_subkey_.data());
        const uc* c = box + mac_bytes;
        const std::size_t mlen = boxlen - mac_bytes;
        if (crypto_onetimeauth_poly1305_verify(box, c, mlen, block0.data()) != 0) {
            sodium_memzero(block0.data(), block0.size());
            return false;
        }
        const std::size_t first = std::min<std::size_t>(mlen, 32);
        for (std::size_t i = 0; i < first; ++i) m[i] = static_cast<uc>(c[i] ^ block0[32 + i]);
        if (mlen > 32) crypto_stream_salsa20_xor_ic(m + 32, c + 32, mlen - 32, n8, 1, rx_subkey_.data());
        sodium_memzero(block0.data(), block0.size());
        return true;
    }

    static void append(std::vector<std::byte>& v, bytes_view b) { v.insert(v.end(), b.begin(), b.end()); }
    step fail(link_errc e, std::string d) {
        state_ = state::finished;
        return {step::status::failed, e, std::move(d)};
    }

    // --- server ------------------------------------------------------------------------------
    step on_hello(const zmtp::command& cmd, std::vector<std::byte>& out) {
        if (cmd.name != "HELLO" || cmd.data.size() != hello_size)
            return fail(link_errc::bad_handshake, "malformed HELLO");
        const std::byte* d = cmd.data.data();
        if (d[0] != std::byte{1} || d[1] != std::byte{0})
            return fail(link_errc::bad_handshake, "CurveZMQ version not 1.0");
        for (std::size_t i = 2; i < 74; ++i)
            if (d[i] != std::byte{0}) return fail(link_errc::bad_handshake, "HELLO's padding is not zero");
        std::memcpy(peer_transient_.data(), d + 74, 32);
        const std::uint64_t n = load_be64(d + 106);
        const nonce nn = short_nonce("CurveZMQHELLO---", n);
        std::array<uc, 64> sig;
        if (crypto_box_open_easy(sig.data(), u(d + 114), 80, nn.data(), peer_transient_.data(), secret_.data()) != 0)
            return fail(link_errc::bad_crypto, "HELLO's signature box does not open (wrong server key?)");
        peer_nonce_ = n;
        // WELCOME: Box[S' + cookie](S->C'); cookie = nonce + Box[C' + s'](K). The transient pair
        // made at construction is S'/s'.
        crypto_secretbox_keygen(cookie_key_.data());
        std::array<uc, 64> cookie_plain;
        std::memcpy(cookie_plain.data(), peer_transient_.data(), 32);
        std::memcpy(cookie_plain.data() + 32, tsec_.data(), 32);
        std::array<uc, 32 + cookie_size> welcome_plain;
        std::memcpy(welcome_plain.data(), tpub_.data(), 32);
        uc* cookie = welcome_plain.data() + 32;
        randombytes_buf(cookie, 16);
        const nonce cn = long_nonce("COOKIE--", cookie);
        crypto_secretbox_easy(cookie + 16, cookie_plain.data(), cookie_plain.size(), cn.data(), cookie_key_.data());
        sodium_memzero(cookie_plain.data(), cookie_plain.size());
        std::array<uc, welcome_size> w;
        randombytes_buf(w.data(), 16);
        const nonce wn = long_nonce("WELCOME-", w.data());
        if (crypto_box_easy(w.data() + 16, welcome_plain.data(), welcome_plain.size(), wn.data(),
                            peer_transient_.data(), secret_.data()) != 0)
            return fail(link_errc::bad_crypto, "HELLO's transient key is refused");
        append(out, zmtp::command_frame("WELCOME", bv(w.data(), w.size())));
        state_ = state::expect_initiate;
        return {};
    }

    step on_initiate(const zmtp::command& cmd) {
        if (cmd.name != "INITIATE" || cmd.data.size() < initiate_min)
            return fail(link_errc::bad_handshake, "malformed INITIATE");
        const std::byte* d = cmd.data.data();
        // The cookie must be ours and name the C' of this connection's HELLO.
        std::array<uc, 64> cookie_plain;
        const nonce cn = long_nonce("COOKIE--", u(d));
        if (crypto_secretbox_open_easy(cookie_plain.data(), u(d + 16), 80, cn.data(), cookie_key_.data()) != 0 ||
            sodium_memcmp(cookie_plain.data(), peer_transient_.data(), 32) != 0 ||
            sodium_memcmp(cookie_plain.data() + 32, tsec_.data(), 32) != 0)
            return fail(link_errc::bad_crypto, "INITIATE's cookie is not this server's");
        sodium_memzero(cookie_key_.data(), cookie_key_.size());
        const std::uint64_t n = load_be64(d + cookie_size);
        if (n <= peer_nonce_) return fail(link_errc::bad_crypto, "INITIATE's nonce does not go up");
        if (crypto_box_beforenm(precomputed_.data(), peer_transient_.data(), tsec_.data()) != 0)
            return fail(link_errc::bad_crypto, "HELLO's transient key is refused");
        const std::size_t box = cmd.data.size() - cookie_size - 8;
        std::vector<uc> plain(box - mac_bytes);
        const nonce in = short_nonce("CurveZMQINITIATE", n);
        if (crypto_box_open_easy_afternm(plain.data(), u(d + cookie_size + 8), box, in.data(), precomputed_.data()) !=
            0)
            return fail(link_errc::bad_crypto, "INITIATE's box does not open");
        peer_nonce_ = n;
        // Vouch: Box[C' + S](C->S') proves the client holds C's secret for this connection.
        key client;
        std::memcpy(client.data(), plain.data(), 32);
        const uc* vouch = plain.data() + 32;
        std::array<uc, 64> vouch_plain;
        const nonce vn = long_nonce("VOUCH---", vouch);
        if (crypto_box_open_easy(vouch_plain.data(), vouch + 16, 80, vn.data(), client.data(), tsec_.data()) != 0)
            return fail(link_errc::bad_crypto, "INITIATE's vouch does not open");
        if (sodium_memcmp(vouch_plain.data(), peer_transient_.data(), 32) != 0 ||
            sodium_memcmp(vouch_plain.data() + 32, public_.data(), 32) != 0)
            return fail(link_errc::bad_crypto, "INITIATE's vouch names other keys");
        peer_meta_.assign(reinterpret_cast<const std::byte*>(plain.data() + 32 + vouch_size),
                          reinterpret_cast<const std::byte*>(plain.data() + plain.size()));
        zap_ = make_zap_request(ctx_, "CURVE", {std::string(reinterpret_cast<const char*>(client.data()), 32)},
                                bytes_view(peer_meta_));
        state_ = state::expect_zap;
        return {step::status::zap, {}, {}};
    }

    // --- client ------------------------------------------------------------------------------
    step on_welcome(const zmtp::command& cmd, std::vector<std::byte>& out) {
        if (cmd.name != "WELCOME" || cmd.data.size() != welcome_size)
            return fail(link_errc::bad_handshake, "malformed WELCOME");
        const std::byte* d = cmd.data.data();
        std::array<uc, 32 + cookie_size> plain;
        const nonce wn = long_nonce("WELCOME-", u(d));
        if (crypto_box_open_easy(plain.data(), u(d + 16), 144, wn.data(), server_public_.data(), tsec_.data()) != 0)
            return fail(link_errc::bad_crypto, "WELCOME's box does not open (wrong server key?)");
        key server_transient;
        std::memcpy(server_transient.data(), plain.data(), 32);
        if (crypto_box_beforenm(precomputed_.data(), server_transient.data(), tsec_.data()) != 0)
            return fail(link_errc::bad_crypto, "WELCOME's transient key is refused");
        // INITIATE: cookie, short nonce, Box[C + vouch + metadata](C'->S').
        std::vector<uc> iplain(32 + vouch_size + ctx_.metadata.size());
        std::memcpy(iplain.data(), public_.data(), 32);
        uc* vouch = iplain.data() + 32;
        randombytes_buf(vouch, 16);
        std::array<uc, 64> vouch_plain;
        std::memcpy(vouch_plain.data(), tpub_.data(), 32);
        std::memcpy(vouch_plain.data() + 32, server_public_.data(), 32);
        const nonce vn = long_nonce("VOUCH---", vouch);
        if (crypto_box_easy(vouch + 16, vouch_plain.data(), 64, vn.data(), server_transient.data(), secret_.data()) !=
            0)
            return fail(link_errc::bad_crypto, "WELCOME's transient key is refused");
        if (!ctx_.metadata.empty()) std::memcpy(vouch + vouch_size, ctx_.metadata.data(), ctx_.metadata.size());
        std::vector<uc> init(cookie_size + 8 + mac_bytes + iplain.size());
        std::memcpy(init.data(), plain.data() + 32, cookie_size);
        const std::uint64_t n = next_nonce_++;
        put_be64(init.data() + cookie_size, n);
        const nonce in = short_nonce("CurveZMQINITIATE", n);
        crypto_box_easy_afternm(init.data() + cookie_size + 8, iplain.data(), iplain.size(), in.data(),
                                precomputed_.data());
        append(out, zmtp::command_frame("INITIATE", bv(init.data(), init.size())));
        state_ = state::expect_ready;
        return {};
    }

    step on_ready(const zmtp::command& cmd) {
        if (cmd.name != "READY" || cmd.data.size() < 8 + mac_bytes)
            return fail(link_errc::bad_handshake, "malformed READY");
        const std::uint64_t n = load_be64(cmd.data.data());
        const nonce rn = short_nonce("CurveZMQREADY---", n);
        peer_meta_.resize(cmd.data.size() - 8 - mac_bytes);
        if (crypto_box_open_easy_afternm(u(peer_meta_.data()), u(cmd.data.data() + 8), cmd.data.size() - 8, rn.data(),
                                         precomputed_.data()) != 0)
            return fail(link_errc::bad_crypto, "READY's box does not open");
        peer_nonce_ = n;
        derive_message_keys();
        state_ = state::finished;
        return {step::status::done, {}, {}};
    }

    mechanism_context ctx_;
    key secret_{}, public_{}, server_public_{};
    key tpub_{}, tsec_{};            // this connection's transient pair (C'/c' or S'/s')
    key peer_transient_{};           // server: C'
    key precomputed_{};              // crypto_box_beforenm of the transient keys
    std::array<uc, 32> cookie_key_{};
    key tx_subkey_{}, rx_subkey_{};  // MESSAGE boxes' XSalsa20 subkeys, each direction
    std::uint64_t next_nonce_ = 1;
    std::uint64_t peer_nonce_ = 0;
    std::vector<uc> scratch_;
    bool server_ = false;
    state state_ = state::expect_hello;
};

}  // namespace

std::unique_ptr<mechanism> make_curve(mechanism_context ctx) {
    return std::make_unique<curve_mechanism>(std::move(ctx));
}

}  // namespace strix::link::detail
