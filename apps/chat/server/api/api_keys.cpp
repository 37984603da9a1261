#include "api_keys.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace strix::chat {
namespace {

constexpr std::size_t min_key_length = 16;

api_keys::digest sha256(std::string_view s) {
    api_keys::digest d{};
    SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d.data());
    return d;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

}  // namespace

api_keys api_keys::load(const std::string& path, double rate, double burst) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read --api-keys " + path + " (check the path and its permissions)");
    std::ostringstream text;
    text << in.rdbuf();
    return parse(text.str(), rate, burst, "--api-keys " + path);
}

api_keys api_keys::parse(std::string_view text, double rate, double burst, const std::string& what) {
    api_keys out;
    out.rate_ = rate;
    out.burst_ = burst;
    std::size_t line_no = 0;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        const std::string_view line = trim(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        ++line_no;
        if (line.empty() || line.front() == '#') continue;
        const std::size_t space = line.find_first_of(" \t");
        const std::string_view secret = line.substr(0, space);
        const std::string_view name = space == std::string_view::npos ? std::string_view() : trim(line.substr(space));
        if (secret.size() < min_key_length)
            throw std::runtime_error(what + " line " + std::to_string(line_no) +
                                     ": a key needs at least 16 characters " + "(e.g. openssl rand -hex 32)");
        auto k = std::make_unique<key>();
        k->hash = sha256(secret);
        k->name = name.empty() ? "key" + std::to_string(out.keys_.size() + 1) : std::string(name);
        k->tokens = burst;
        out.keys_.push_back(std::move(k));
    }
    if (out.keys_.empty()) throw std::runtime_error(what + " holds no key: write one per line (docs/api.md)");
    return out;
}

std::optional<std::size_t> api_keys::find(std::string_view presented) const {
    const digest d = sha256(presented);
    std::size_t found = keys_.size();
    for (std::size_t i = 0; i < keys_.size(); ++i) {
        // Every key is compared, and the match is recorded without a branch on secret data.
        const bool same = CRYPTO_memcmp(d.data(), keys_[i]->hash.data(), d.size()) == 0;
        found = same ? i : found;
    }
    if (found == keys_.size()) return std::nullopt;
    return found;
}

std::optional<std::size_t> api_keys::authorize(std::string_view authorization) const {
    constexpr std::string_view scheme = "Bearer ";
    if (authorization.size() <= scheme.size()) return std::nullopt;
    for (std::size_t i = 0; i < scheme.size(); ++i) {  // the scheme is case-insensitive (RFC 9110)
        const auto c = static_cast<unsigned char>(authorization[i]);
        if (std::tolower(c) != std::tolower(static_cast<unsigned char>(scheme[i]))) return std::nullopt;
    }
    return find(trim(authorization.substr(scheme.size())));
}

std::uint32_t api_keys::take(std::size_t i, clock::time_point now) {
    key& k = *keys_[i];
    std::lock_guard lk(k.mu);
    if (k.last == clock::time_point{}) k.last = now;
    const std::chrono::duration<double> dt = now - k.last;
    k.last = std::max(k.last, now);
    k.tokens = std::min(burst_, k.tokens + std::max(0.0, dt.count()) * rate_);
    if (k.tokens >= 1.0) {
        k.tokens -= 1.0;
        return 0;
    }
    return static_cast<std::uint32_t>(std::max(1.0, std::ceil((1.0 - k.tokens) / rate_)));
}

}  // namespace strix::chat
