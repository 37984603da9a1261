#include <strix/net/admission.hpp>

namespace strix {

std::string_view admission::address_of(std::string_view peer) noexcept {
    // describe_peer writes "a.b.c.d:port" and "[v6]:port"; anything else (a Unix peer) has none.
    const auto colon = peer.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return {};
    return peer.substr(0, colon);
}

admission::verdict admission::try_admit(std::string_view peer) {
    if (limits_.max_sessions) {
        // Optimistic add, undone when over: never counts more than the cap for longer than this.
        if (total_.fetch_add(1, std::memory_order_relaxed) >= limits_.max_sessions) {
            total_.fetch_sub(1, std::memory_order_relaxed);
            return verdict::over_total;
        }
    } else {
        total_.fetch_add(1, std::memory_order_relaxed);
    }
    const std::string_view addr = address_of(peer);
    if (limits_.max_sessions_per_address && !addr.empty()) {
        std::lock_guard lock(mu_);
        auto [it, inserted] = per_address_.try_emplace(std::string(addr), 0);
        if (it->second >= limits_.max_sessions_per_address) {
            total_.fetch_sub(1, std::memory_order_relaxed);
            return verdict::over_address;
        }
        ++it->second;
    }
    return verdict::admitted;
}

void admission::release(std::string_view peer) noexcept {
    total_.fetch_sub(1, std::memory_order_relaxed);
    const std::string_view addr = address_of(peer);
    if (!limits_.max_sessions_per_address || addr.empty()) return;
    std::lock_guard lock(mu_);
    auto it = per_address_.find(std::string(addr));
    if (it == per_address_.end()) return;
    if (--it->second == 0) per_address_.erase(it);  // the table holds only addresses with sessions
}

std::size_t admission::sessions_from(std::string_view peer) const {
    const std::string_view addr = address_of(peer);
    std::lock_guard lock(mu_);
    auto it = per_address_.find(std::string(addr));
    return it == per_address_.end() ? 0 : it->second;
}

}  // namespace strix
