#pragma once
// Password hashing for chat accounts: argon2id (libsodium crypto_pwhash, ALG_ARGON2ID13), stored
// as the self-describing PHC string "$argon2id$v=19$m=...,t=...,p=1$salt$hash", so a hash made
// under one policy still verifies after the policy changes.
//
// Hashing is deliberately slow and memory-hungry (interactive: 64 MiB and roughly 50-100 ms of one
// core per hash or verify, so two workers manage a few dozen logins a second):
// call these on database worker threads only, never on a shard thread.

#include <cstddef>
#include <string>
#include <string_view>

namespace strix::chat {

/// Cost parameters for new hashes. Verification reads the cost from the stored hash instead.
struct password_policy {
    unsigned long long opslimit = 0;  // argon2id passes (t)
    std::size_t memlimit = 0;         // bytes of memory per hash (m)

    /// libsodium's interactive argon2id limits (2 passes, 64 MiB): for the real server.
    static password_policy interactive() noexcept;
    /// libsodium's argon2id minimums (1 pass, 8 KiB): still real argon2id hashes, but cheap
    /// enough for tests that log in hundreds of times. Never use it in production.
    static password_policy fast_for_tests() noexcept;
};

/// Returns the argon2id hash string of `password` with a fresh random salt. Throws
/// std::bad_alloc when the memory limit cannot be allocated and std::invalid_argument when the
/// policy is below libsodium's minimums. Any thread (blocking, CPU-bound).
std::string hash_password(std::string_view password, const password_policy& policy);

/// True when `password` matches the stored `hash`; false on a mismatch and on a malformed,
/// truncated or non-argon2id hash (never throws for bad input). Any thread (blocking).
bool verify_password(std::string_view hash, std::string_view password) noexcept;

/// True when `hash` was made with other cost parameters than `policy` (or is not argon2id), so a
/// caller that has just verified the password may store a fresh hash. Any thread.
bool password_needs_rehash(std::string_view hash, const password_policy& policy) noexcept;

}  // namespace strix::chat
