#pragma once
// The PostgreSQL back end's parameters (pg_chat_store.cpp): values in libpq's binary format, int8
// big endian, with the storage they point into.

#include "apps/chat/storage/pg_statements.hpp"

#include <libpq-fe.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace strix::chat::storage_detail {

// Binary int8: 8 bytes, big endian.
inline std::array<char, 8> to_be64(std::int64_t v) noexcept {
    auto u = static_cast<std::uint64_t>(v);
    std::array<char, 8> out{};
    for (int i = 7; i >= 0; --i) {
        out[static_cast<std::size_t>(i)] = static_cast<char>(u & 0xff);
        u >>= 8;
    }
    return out;
}

inline std::int64_t from_be64(const char* p) noexcept {
    std::uint64_t u = 0;
    for (int i = 0; i < 8; ++i) u = (u << 8) | static_cast<unsigned char>(p[i]);
    return static_cast<std::int64_t>(u);
}

// Parameters of one statement in binary format; values point into storage kept alive here.
class params {
public:
    explicit params(std::size_t n) {
        ints_.reserve(n);  // pointers into ints_ must stay valid: never reallocate
        values_.reserve(n);
        lengths_.reserve(n);
        types_.reserve(n);
        formats_.reserve(n);
    }
    void add(std::int64_t v) {
        ints_.push_back(to_be64(v));
        push(ints_.back().data(), 8, int8_oid);
    }
    void add(std::uint64_t v) { add(static_cast<std::int64_t>(v)); }
    void add_text(std::string_view s) { push(s.data(), s.size(), text_oid); }
    void add_bytes(std::string_view s) { push(s.data(), s.size(), bytea_oid); }

    int count() const noexcept { return static_cast<int>(values_.size()); }
    const char* const* values() const noexcept { return values_.data(); }
    const int* lengths() const noexcept { return lengths_.data(); }
    const int* formats() const noexcept { return formats_.data(); }
    const Oid* types() const noexcept { return types_.data(); }

private:
    void push(const char* p, std::size_t n, Oid t) {
        // A binary parameter of length 0 still needs a non-null pointer (null means SQL NULL).
        values_.push_back(p != nullptr ? p : "");
        lengths_.push_back(static_cast<int>(n));
        types_.push_back(t);
        formats_.push_back(1);  // binary
    }
    std::vector<std::array<char, 8>> ints_;
    std::vector<const char*> values_;
    std::vector<int> lengths_;
    std::vector<Oid> types_;
    std::vector<int> formats_;
};

}  // namespace strix::chat::storage_detail
