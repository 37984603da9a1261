#include "login_throttle.hpp"

#include <algorithm>
#include <iterator>

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

// Allowed when the key is unknown or its wait is over; an allowed attempt that could earn a wait
// by failing takes that wait now (one attempt at a time while in backoff).
bool login_throttle::admit(table& t, std::string_view key, clock::time_point now, clock::duration& left) {
    auto it = t.find(std::string(key));
    if (it == t.end()) return true;
    entry& e = it->second;
    if (e.blocked_until > now) {
        left = e.blocked_until - now;
        return false;
    }
    if (now >= e.blocked_until + cfg_.lockout) t.erase(it);  // quiet for a lockout's length after its wait: forgotten
    return true;
}

void login_throttle::fail(table& t, std::string_view key, unsigned free, unsigned lockout_after, clock::time_point now) {
    entry* e = nullptr;
    if (auto it = t.find(std::string(key)); it != t.end())
        e = &it->second;
    else
        e = make_room_for(t, key, free, now);
    if (!e) return;
    ++e->failures;
    e->last_failure = now;
    e->blocked_until = now + wait_after(e->failures, free, lockout_after);
}

// Back to the wait the key's own failures earned (dropping an admitted attempt's hold).
void login_throttle::release(table& t, std::string_view key, clock::time_point) {
    auto it = t.find(std::string(key));
    if (it == t.end()) return;
    entry& e = it->second;
    const bool is_account = &t == &accounts_;
    e.blocked_until = e.last_failure + wait_after(e.failures, is_account ? cfg_.account_free : cfg_.address_free,
                                                  is_account ? cfg_.account_lockout : cfg_.address_lockout);
}

login_throttle::entry* login_throttle::make_room_for(table& t, std::string_view key, unsigned free, clock::time_point now) {
    if (t.size() >= cfg_.max_tracked) {
        // Forgotten keys first, then keys that are not waiting yet; the throttled ones stay.
        std::erase_if(t, [&](const auto& kv) { return now >= kv.second.blocked_until + cfg_.lockout; });
        if (t.size() >= cfg_.max_tracked) std::erase_if(t, [&](const auto& kv) { return kv.second.failures < free; });
        if (t.size() >= cfg_.max_tracked) {
            ++untracked_;
            return nullptr;
        }
    }
    return &t.try_emplace(std::string(key)).first->second;
}

login_throttle::verdict login_throttle::check(std::string_view account, std::string_view address, clock::time_point now) {
    std::lock_guard lock(mu_);
    clock::duration left{};
    verdict v;
    if (!admit(accounts_, account, now, left)) {
        v.allowed = false;
        v.by_account = true;
    } else if (!address.empty() && !admit(addresses_, address, now, left)) {
        v.allowed = false;
    }
    if (!v.allowed) {
        v.retry_after = std::max(std::chrono::milliseconds(1), std::chrono::ceil<std::chrono::milliseconds>(left));
        return v;
    }
    // Both allow: hold each key that this attempt could push into a wait, until its verdict.
    auto hold = [&](table& t, std::string_view key, unsigned free, unsigned lockout_after) {
        auto it = t.find(std::string(key));
        if (it == t.end()) return;
        if (auto w = wait_after(it->second.failures + 1, free, lockout_after); w > clock::duration::zero())
            it->second.blocked_until = now + w;
    };
    hold(accounts_, account, cfg_.account_free, cfg_.account_lockout);
    if (!address.empty()) hold(addresses_, address, cfg_.address_free, cfg_.address_lockout);
    return v;
}

void login_throttle::failed(std::string_view account, std::string_view address, clock::time_point now) {
    std::lock_guard lock(mu_);
    fail(accounts_, account, cfg_.account_free, cfg_.account_lockout, now);
    if (!address.empty()) fail(addresses_, address, cfg_.address_free, cfg_.address_lockout, now);
}

void login_throttle::succeeded(std::string_view account, std::string_view address, clock::time_point now) {
    std::lock_guard lock(mu_);
    accounts_.erase(std::string(account));
    // An address's failures stay: one good account must not launder an address's guesses.
    if (!address.empty()) release(addresses_, address, now);
}

void login_throttle::abandoned(std::string_view account, std::string_view address, clock::time_point now) {
    std::lock_guard lock(mu_);
    release(accounts_, account, now);
    if (!address.empty()) release(addresses_, address, now);
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
