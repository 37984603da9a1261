#include "login_throttle.hpp"

#include <algorithm>

namespace strix::chat {

login_throttle::clock::duration login_throttle::wait_after(unsigned failures, unsigned free,
                                                           unsigned lockout_after) const noexcept {
    if (failures < free) return clock::duration::zero();
    if (failures >= lockout_after) return cfg_.lockout;
    // backoff x 2^(failures - free), never above the lockout (and no shift past the word).
    const unsigned doublings = failures - free;
    const auto lock = std::chrono::duration_cast<clock::duration>(cfg_.lockout);
    auto wait = std::chrono::duration_cast<clock::duration>(cfg_.backoff);
    for (unsigned i = 0; i < doublings && wait < lock; ++i) wait *= 2;
    return std::min(wait, lock);
}

// Refused while the key's wait runs; a key quiet for a lockout's length after its wait is forgotten.
bool login_throttle::blocked(table& t, std::string_view key, clock::time_point now, clock::duration& left) {
    auto it = t.find(std::string(key));
    if (it == t.end()) return false;
    entry& e = it->second;
    if (e.blocked_until > now) {
        left = e.blocked_until - now;
        return true;
    }
    if (e.pending == 0 && now >= e.blocked_until + cfg_.lockout) t.erase(it);
    return false;
}

// provisional: the attempt counts as a failure until its verdict, so the next one waits as if it
// had failed (accounts). Otherwise it is only remembered as pending (addresses).
void login_throttle::admit(table& t, std::string_view key, unsigned free, unsigned lockout_after, bool provisional,
                           clock::time_point now) {
    entry* e = nullptr;
    if (auto it = t.find(std::string(key)); it != t.end())
        e = &it->second;
    else
        e = make_room_for(t, key, free, now);
    if (!e) return;
    ++e->pending;
    if (!provisional) return;
    ++e->failures;
    ++e->provisional;
    e->blocked_until = std::max(e->blocked_until, now + wait_after(e->failures, free, lockout_after));
}

// The provisional failure stands; its wait runs from now.
void login_throttle::fail(table& t, std::string_view key, unsigned free, unsigned lockout_after,
                          clock::time_point now) {
    entry* e = nullptr;
    if (auto it = t.find(std::string(key)); it != t.end()) {
        e = &it->second;
        if (e->pending) --e->pending;
        if (e->provisional)
            --e->provisional;  // its provisional failure stands
        else
            ++e->failures;  // not provisional, admitted untracked, or cleared by a success meanwhile
    } else {
        e = make_room_for(t, key, free, now);
        if (!e) return;
        e->failures = 1;
    }
    e->last_failure = now;
    e->blocked_until = now + wait_after(e->failures, free, lockout_after);
}

// Undoes admit(): back to the wait the real failures earned.
void login_throttle::take_back(table& t, std::string_view key, unsigned free, unsigned lockout_after) {
    auto it = t.find(std::string(key));
    if (it == t.end()) return;
    entry& e = it->second;
    if (e.pending == 0) return;
    --e.pending;
    if (e.provisional) {
        --e.provisional;
        --e.failures;
    }
    if (e.failures == 0 && e.pending == 0) {
        t.erase(it);
        return;
    }
    e.blocked_until = e.last_failure + wait_after(e.failures, free, lockout_after);
}

login_throttle::entry* login_throttle::make_room_for(table& t, std::string_view key, unsigned free,
                                                     clock::time_point now) {
    if (t.size() >= cfg_.max_tracked) {
        // Forgotten keys first, then keys that are not waiting yet; the throttled ones stay.
        std::erase_if(t, [&](const auto& kv) {
            return kv.second.pending == 0 && now >= kv.second.blocked_until + cfg_.lockout;
        });
        if (t.size() >= cfg_.max_tracked)
            std::erase_if(t, [&](const auto& kv) { return kv.second.pending == 0 && kv.second.failures < free; });
        if (t.size() >= cfg_.max_tracked) {
            ++untracked_;
            return nullptr;
        }
    }
    return &t.try_emplace(std::string(key)).first->second;
}

login_throttle::verdict login_throttle::check(std::string_view account, std::string_view address,
                                              clock::time_point now) {
    std::lock_guard lock(mu_);
    clock::duration left{};
    verdict v;
    if (blocked(accounts_, account, now, left)) {
        v.allowed = false;
        v.by_account = true;
    } else if (!address.empty() && blocked(addresses_, address, now, left)) {
        v.allowed = false;
    }
    if (!v.allowed) {
        v.retry_after = std::max(std::chrono::milliseconds(1), std::chrono::ceil<std::chrono::milliseconds>(left));
        return v;
    }
    admit(accounts_, account, cfg_.account_free, cfg_.account_lockout, true, now);
    // An address's attempts wait for their verdicts: many users behind one address (a NAT, a load
    // tool) log in at once without tripping its backoff; the hash queue bounds the burst.
    if (!address.empty()) admit(addresses_, address, cfg_.address_free, cfg_.address_lockout, false, now);
    return v;
}

login_throttle::verdict login_throttle::fall_back(std::string_view token_key, std::string_view account,
                                                  std::string_view address, bool forged, clock::time_point now) {
    std::lock_guard lock(mu_);
    take_back(accounts_, token_key, cfg_.account_free, cfg_.account_lockout);
    if (forged && !address.empty()) {
        // A made-up token is a guess like a wrong password: the address pays for it (its own
        // key is new every time, so only the address can hold such guesses back). The attempt
        // goes on, so it is pending again.
        fail(addresses_, address, cfg_.address_free, cfg_.address_lockout, now);
        admit(addresses_, address, cfg_.address_free, cfg_.address_lockout, false, now);
    }
    clock::duration left{};
    verdict v;
    if (blocked(accounts_, account, now, left)) {
        v.allowed = false;
        v.by_account = true;
    } else if (!address.empty() && blocked(addresses_, address, now, left)) {
        v.allowed = false;
    }
    if (!v.allowed) {
        if (!address.empty()) take_back(addresses_, address, cfg_.address_free, cfg_.address_lockout);
        v.retry_after = std::max(std::chrono::milliseconds(1), std::chrono::ceil<std::chrono::milliseconds>(left));
        return v;
    }
    admit(accounts_, account, cfg_.account_free, cfg_.account_lockout, true, now);
    return v;
}

void login_throttle::failed(std::string_view account, std::string_view address, clock::time_point now) {
    std::lock_guard lock(mu_);
    fail(accounts_, account, cfg_.account_free, cfg_.account_lockout, now);
    if (!address.empty()) fail(addresses_, address, cfg_.address_free, cfg_.address_lockout, now);
}

void login_throttle::succeeded(std::string_view account, std::string_view address, clock::time_point) {
    std::lock_guard lock(mu_);
    accounts_.erase(std::string(account));
    // An address keeps its real failures: one good account must not launder an address's guesses.
    // (Its attempt was pending, never a failure: take_back only drops the pending mark.)
    if (!address.empty()) take_back(addresses_, address, cfg_.address_free, cfg_.address_lockout);
}

void login_throttle::abandoned(std::string_view account, std::string_view address, clock::time_point) {
    std::lock_guard lock(mu_);
    take_back(accounts_, account, cfg_.account_free, cfg_.account_lockout);
    if (!address.empty()) take_back(addresses_, address, cfg_.address_free, cfg_.address_lockout);
}

std::string login_throttle::device_key(std::span<const std::byte> token_hash) {
    static constexpr char digits[] = "0123456789abcdef";
    // 128 bits tell tokens apart as well as the whole hash would, in half the memory.
    const std::size_t n = std::min<std::size_t>(token_hash.size(), 16);
    std::string key(1 + 2 * n, '#');
    for (std::size_t i = 0; i < n; ++i) {
        const auto v = static_cast<unsigned>(token_hash[i]);
        key[1 + 2 * i] = digits[v >> 4];
        key[2 + 2 * i] = digits[v & 0xf];
    }
    return key;
}

std::size_t login_throttle::tracked() const {
    std::lock_guard lock(mu_);
    return accounts_.size() + addresses_.size();
}

std::uint64_t login_throttle::untracked() const {
    std::lock_guard lock(mu_);
    return untracked_;
}

}  // namespace strix::chat
