#pragma once
// login_throttle: failed logins per account name and per source address, shared by every shard
// and the database workers. After `free` failures each further failure makes the key wait before
// its next attempt: backoff, 2 x backoff, 4 x backoff, ... and from `lockout_after` failures on,
// `lockout`. An attempt during the wait is refused on the shard, before any password is hashed
// (the client gets rate_limited with the time left).
//
//   failures:   1 .. free-1   free     free+1    ...   lockout_after-1          lockout_after ..
//   next wait:  none          backoff  2 backoff ...   2^(lockout_after-1-free)  lockout
//                                                       x backoff
//
// An admitted attempt counts as a failure of its account from the moment it is admitted until it
// is proven right: a burst of concurrent guesses at one name hashes `free` times at most, then one
// at a time (each admission already sets the wait its failure would earn). An address counts only
// real failures: many users behind one address (a NAT, the load tool's 500 clients) logging in at
// once must not trip its backoff, so a burst of guesses at many names from one address hashes at
// most the login queue's bound (--login-queue) before its failures start to count. A success
// clears the account (not the address's real failures); a key is
// forgotten once its wait has been over for `lockout` (so a failure soon after a lockout ends
// locks out again, instead of starting with free failures). Each table holds at most
// `max_tracked` keys: when full, forgotten keys and keys below `free` go first; if that frees
// nothing the new key is not tracked (counted in untracked()), so memory stays bounded.
//
// Device tokens (docs/protocol.md, "Device tokens"): a login that presents one is checked with
// the token's key in place of the account name: device_key() ('#' and hex digits, which no player
// name can contain), with the account's limits. So a token holder is not held up by guesses at its
// name, while its own wrong passwords earn its token the same waits. When the database then finds
// the token unusable, fall_back() turns the attempt into an ordinary login of the name.
//
// Thread safety: every function may be called from any thread (one mutex; logins are rare next
// to chat, and the critical section is a hash-map update).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace strix::chat {

struct login_throttle_config {
    unsigned account_free = 3;        // failures of one account name before backoff
    unsigned account_lockout = 10;    // ... before lockout
    unsigned address_free = 20;       // failures from one source address before backoff
    unsigned address_lockout = 100;   // ... before lockout
    std::chrono::milliseconds backoff{1000};   // first wait; doubles per failure
    std::chrono::milliseconds lockout{300000}; // the lockout, and how long a quiet key is remembered
    std::size_t max_tracked = 65536;  // keys per table
};

class login_throttle {
public:
    using clock = std::chrono::steady_clock;

    struct verdict {
        bool allowed = true;
        bool by_account = false;                  // refused: the account's wait (else the address's)
        std::chrono::milliseconds retry_after{0};  // refused: time left
    };

    explicit login_throttle(login_throttle_config cfg) : cfg_(cfg) {}

    /// May `account` log in from `address` (empty: no address, e.g. a Unix socket) now? An
    /// allowed attempt counts as a failure of both keys until failed/succeeded/abandoned reports
    /// its verdict; exactly one of them must follow. Any thread.
    verdict check(std::string_view account, std::string_view address, clock::time_point now = clock::now());
    /// The attempt's password did not verify (or the account does not exist). Any thread.
    void failed(std::string_view account, std::string_view address, clock::time_point now = clock::now());
    /// The attempt logged in. Any thread.
    void succeeded(std::string_view account, std::string_view address, clock::time_point now = clock::now());
    /// The attempt never reached a verdict (queue full, database error): takes its provisional
    /// failure back. Any thread.
    void abandoned(std::string_view account, std::string_view address, clock::time_point now = clock::now());

    /// An attempt admitted by check(token_key, address) whose device token did not hold (unknown
    /// to the database, expired, or another account's) goes on as an ordinary login of
    /// `account`: the token key's hold is dropped; a `forged` token (unknown) is a failure of
    /// the address; then the account's and the address's waits are checked as check() does.
    /// Refused: the attempt holds nothing any more, and nothing may follow. Allowed: it holds
    /// `account` and `address`, and exactly one of failed/succeeded/abandoned(account, address)
    /// must follow. Any thread.
    verdict fall_back(std::string_view token_key, std::string_view account, std::string_view address, bool forged,
                      clock::time_point now = clock::now());

    /// The key a device token is throttled under: '#' and the first 16 bytes of its hash in hex.
    /// Any thread.
    static std::string device_key(std::span<const std::byte> token_hash);

    /// Keys tracked now (accounts + addresses); keys refused tracking because a table was full.
    std::size_t tracked() const;
    std::uint64_t untracked() const;

    const login_throttle_config& config() const noexcept { return cfg_; }

private:
    struct entry {
        unsigned failures = 0;     // real failures plus provisional ones
        unsigned pending = 0;      // admitted attempts without a verdict
        unsigned provisional = 0;  // ... of which counted in failures (account keys)
        clock::time_point blocked_until{};
        clock::time_point last_failure{};  // of the last real failure
    };
    using table = std::unordered_map<std::string, entry>;

    clock::duration wait_after(unsigned failures, unsigned free, unsigned lockout_after) const noexcept;
    bool blocked(table& t, std::string_view key, clock::time_point now, clock::duration& left);
    void admit(table& t, std::string_view key, unsigned free, unsigned lockout_after, bool provisional,
               clock::time_point now);
    void fail(table& t, std::string_view key, unsigned free, unsigned lockout_after, clock::time_point now);
    void take_back(table& t, std::string_view key, unsigned free, unsigned lockout_after);
    entry* make_room_for(table& t, std::string_view key, unsigned free, clock::time_point now);

    const login_throttle_config cfg_;
    mutable std::mutex mu_;
    table accounts_, addresses_;
    std::uint64_t untracked_ = 0;
};

}  // namespace strix::chat
