#pragma once
// api_keys: the server API's bearer keys (--api-keys FILE) and a token bucket per key.
//
//   file:   one key per line, optionally followed by whitespace and a name ("k3y... backend");
//           blank lines and lines starting with # are skipped; a key has 16 characters or more
//   check:  Authorization: Bearer <key> is compared with EVERY key's SHA-256 digest in constant
//           time (CRYPTO_memcmp, no early exit), so neither a key's bytes nor its length nor
//           which key matched leaks through the answer's timing
//   limit:  each key has one bucket of --api-burst tokens refilled at --api-rate per second,
//           shared by every shard (a short lock per request), so the limit holds however the
//           key's connections are spread over shards

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

class api_keys {
public:
    using clock = std::chrono::steady_clock;
    using digest = std::array<unsigned char, 32>;

    /// Reads `path`. Throws std::runtime_error with one sentence (unreadable file, no key, a key
    /// too short). Main thread, before serving (blocking file read).
    static api_keys load(const std::string& path, double rate, double burst);
    /// From text in the file's format (tests). Throws like load().
    static api_keys parse(std::string_view text, double rate, double burst, const std::string& what = "--api-keys");

    /// The index of the key `presented` is, or nullopt; constant time in the key. Any thread.
    std::optional<std::size_t> find(std::string_view presented) const;
    /// The index of the key named in an Authorization header value ("Bearer <key>"), or nullopt.
    std::optional<std::size_t> authorize(std::string_view authorization) const;

    /// Takes one request token of key i: 0 when granted, else the whole seconds until one is
    /// there (Retry-After). Any thread.
    std::uint32_t take(std::size_t i, clock::time_point now = clock::now());

    /// The name of key i ("key1", "key2", ... for keys given without one). Any thread.
    const std::string& name(std::size_t i) const { return keys_[i]->name; }
    std::size_t size() const noexcept { return keys_.size(); }

    api_keys(api_keys&&) noexcept = default;
    api_keys& operator=(api_keys&&) noexcept = default;

private:
    struct key {
        digest hash{};
        std::string name;
        std::mutex mu;  // guards the bucket
        double tokens = 0;
        clock::time_point last{};
    };
    api_keys() = default;
    std::vector<std::unique_ptr<key>> keys_;
    double rate_ = 1;
    double burst_ = 1;
};

}  // namespace strix::chat
