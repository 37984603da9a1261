// Z85 (RFC 32), CURVE key pairs and the ZAP allow list (include/strix/link/security.hpp).
#include <strix/link/security.hpp>

#include <sodium.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <stdexcept>

namespace strix::link {
namespace {

constexpr char z85_chars[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

// Character -> digit, 0xFF for characters outside the alphabet.
struct z85_table {
    std::array<std::uint8_t, 256> v{};
    constexpr z85_table() {
        for (auto& x : v) x = 0xFF;
        for (std::uint8_t i = 0; i < 85; ++i) v[static_cast<unsigned char>(z85_chars[i])] = i;
    }
};
constexpr z85_table z85_digits;

void sodium_ready() {
    // sodium_init is idempotent and thread-safe; it seeds the random source crypto_box_keypair uses.
    if (sodium_init() < 0) throw std::runtime_error("strix::link: libsodium failed to initialise");
}

}  // namespace

std::string z85_encode(std::span<const std::byte> data) {
    if (data.size() % 4 != 0) return {};
    std::string out;
    out.reserve(data.size() / 4 * 5);
    for (std::size_t i = 0; i < data.size(); i += 4) {
        std::uint32_t v = 0;
        for (std::size_t k = 0; k < 4; ++k) v = (v << 8) | static_cast<std::uint32_t>(data[i + k]);
        char group[5];
        for (int k = 4; k >= 0; --k) {
            group[k] = z85_chars[v % 85];
            v /= 85;
        }
        out.append(group, 5);
    }
    return out;
}

std::optional<std::vector<std::byte>> z85_decode(std::string_view text) {
    if (text.size() % 5 != 0) return std::nullopt;
    std::vector<std::byte> out;
    out.reserve(text.size() / 5 * 4);
    for (std::size_t i = 0; i < text.size(); i += 5) {
        std::uint64_t v = 0;
        for (std::size_t k = 0; k < 5; ++k) {
            const std::uint8_t d = z85_digits.v[static_cast<unsigned char>(text[i + k])];
            if (d == 0xFF) return std::nullopt;
            v = v * 85 + d;
        }
        if (v > UINT32_MAX) return std::nullopt;
        for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::byte>((v >> s) & 0xFF));
    }
    return out;
}

curve_keypair curve_keypair::generate() {
    sodium_ready();
    curve_keypair k;
    crypto_box_keypair(reinterpret_cast<unsigned char*>(k.public_key.data()),
                       reinterpret_cast<unsigned char*>(k.secret_key.data()));
    return k;
}

curve_keypair curve_keypair::from_secret(const std::array<std::byte, 32>& secret) {
    sodium_ready();
    curve_keypair k;
    k.secret_key = secret;
    crypto_scalarmult_base(reinterpret_cast<unsigned char*>(k.public_key.data()),
                           reinterpret_cast<const unsigned char*>(secret.data()));
    return k;
}

std::optional<std::array<std::byte, 32>> parse_curve_key(std::string_view key) {
    std::array<std::byte, 32> out{};
    if (key.size() == 32) {
        std::memcpy(out.data(), key.data(), 32);
        return out;
    }
    if (key.size() != 40) return std::nullopt;
    const auto raw = z85_decode(key);
    if (!raw) return std::nullopt;
    std::memcpy(out.data(), raw->data(), 32);
    return out;
}

struct allow_list::state {
    std::set<std::string> keys;  // raw 32 bytes
    std::set<std::pair<std::string, std::string>> users;
    std::set<std::string> addresses;
    std::set<std::string> denied;
    std::atomic<std::uint64_t> refused{0};
};

allow_list::allow_list() : s_(std::make_shared<state>()) {}

void allow_list::allow_key(std::string_view key) {
    const auto k = parse_curve_key(key);
    if (!k) throw std::invalid_argument("strix::link::allow_list: a CURVE key is 32 bytes or 40 Z85 characters");
    s_->keys.emplace(reinterpret_cast<const char*>(k->data()), 32);
}

void allow_list::allow_user(std::string username, std::string password) {
    s_->users.emplace(std::move(username), std::move(password));
}

void allow_list::allow_address(std::string address) { s_->addresses.insert(std::move(address)); }
void allow_list::deny_address(std::string address) { s_->denied.insert(std::move(address)); }
std::uint64_t allow_list::refused() const noexcept { return s_->refused.load(std::memory_order_relaxed); }

zap_handler allow_list::handler() const {
    return [s = s_](const zap_request& r) {
        zap_reply rep;
        auto refuse = [&](const char* why) {
            s->refused.fetch_add(1, std::memory_order_relaxed);
            rep.status_code = "400";
            rep.status_text = why;
            return rep;
        };
        if (s->denied.count(r.address)) return refuse("address denied");
        if (!s->addresses.empty() && !s->addresses.count(r.address)) return refuse("address not allowed");
        if (r.mechanism == "CURVE" && !s->keys.empty()) {
            if (r.credentials.empty() || !s->keys.count(r.credentials[0])) return refuse("client key not allowed");
            rep.user_id = z85_encode(std::as_bytes(std::span(r.credentials[0])));
        } else if (r.mechanism == "PLAIN" && !s->users.empty()) {
            if (r.credentials.size() != 2 || !s->users.count({r.credentials[0], r.credentials[1]}))
                return refuse("invalid username or password");
            rep.user_id = r.credentials[0];
        }
        rep.status_text = "OK";
        return rep;
    };
}

}  // namespace strix::link
