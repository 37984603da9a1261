#include "apps/chat/storage/password.hpp"

#include "apps/chat/storage/sodium_init.hpp"

#include <sodium.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace strix::chat {

namespace storage_detail {

// sodium_init() picks the fastest implementations and seeds the RNG; it must run before any
// other libsodium call. A function-local static is initialised exactly once even when several
// worker threads hash their first password at the same moment.
void ensure_sodium() {
    static const bool ready = [] {
        if (::sodium_init() < 0) {
            // Without a working RNG every salt would be predictable: refuse to continue.
            std::fprintf(stderr, "strix: sodium_init failed; cannot hash passwords or make device tokens safely\n");
            std::abort();
        }
        return true;
    }();
    (void)ready;
}

}  // namespace storage_detail

namespace {

using storage_detail::ensure_sodium;

// libsodium wants NUL-terminated hash strings of at most crypto_pwhash_STRBYTES - 1 bytes.
bool copy_hash(std::string_view hash, char (&out)[crypto_pwhash_STRBYTES]) noexcept {
    if (hash.size() >= sizeof out || hash.find('\0') != std::string_view::npos) return false;
    std::memcpy(out, hash.data(), hash.size());
    out[hash.size()] = '\0';
    return true;
}

constexpr std::string_view argon2id_prefix = "$argon2id$";

}  // namespace

password_policy password_policy::interactive() noexcept {
    return {crypto_pwhash_argon2id_OPSLIMIT_INTERACTIVE, crypto_pwhash_argon2id_MEMLIMIT_INTERACTIVE};
}

password_policy password_policy::fast_for_tests() noexcept {
    return {crypto_pwhash_argon2id_OPSLIMIT_MIN, crypto_pwhash_argon2id_MEMLIMIT_MIN};
}

std::string hash_password(std::string_view password, const password_policy& policy) {
    ensure_sodium();
    if (policy.opslimit < crypto_pwhash_argon2id_OPSLIMIT_MIN ||
        policy.memlimit < crypto_pwhash_argon2id_MEMLIMIT_MIN) {
        throw std::invalid_argument("password_policy is below libsodium's argon2id minimums");
    }
    char out[crypto_pwhash_STRBYTES];
    if (::crypto_pwhash_str_alg(out, password.data(), password.size(), policy.opslimit, policy.memlimit,
                                crypto_pwhash_ALG_ARGON2ID13) != 0) {
        // The only documented failure is that the memory limit could not be allocated.
        throw std::bad_alloc();
    }
    return std::string(out);
}

bool verify_password(std::string_view hash, std::string_view password) noexcept {
    ensure_sodium();
    // Only argon2id is accepted: an argon2i hash in the table would mean someone wrote it by hand.
    if (hash.substr(0, argon2id_prefix.size()) != argon2id_prefix) return false;
    char h[crypto_pwhash_STRBYTES];
    if (!copy_hash(hash, h)) return false;
    return ::crypto_pwhash_str_verify(h, password.data(), password.size()) == 0;
}

bool password_needs_rehash(std::string_view hash, const password_policy& policy) noexcept {
    ensure_sodium();
    if (hash.substr(0, argon2id_prefix.size()) != argon2id_prefix) return true;
    char h[crypto_pwhash_STRBYTES];
    if (!copy_hash(hash, h)) return true;
    // 0: same parameters, 1: different, -1: not a valid hash for this algorithm.
    return ::crypto_pwhash_argon2id_str_needs_rehash(h, policy.opslimit, policy.memlimit) != 0;
}

}  // namespace strix::chat
