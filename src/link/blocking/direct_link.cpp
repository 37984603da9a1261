// direct_link: the blocking REQ/REP inproc fast path (the picture is in direct_link.hpp).
#include "link/blocking/direct_link.hpp"

#include "link/blocking/blocking_bridge.hpp"

#include <map>
#include <mutex>
#include <string>

namespace strix::link::detail {

namespace {

// Which inproc names blocking REPs bound, and the link each REP has. Touched only at bind,
// connect and close, never per message.
struct direct_registry {
    std::mutex mu;
    std::map<std::string, std::shared_ptr<blocking_shared>, std::less<>> offered;
    std::map<const blocking_shared*, std::shared_ptr<direct_link>> links;  // by REP
};

direct_registry& registry() {
    static direct_registry r;
    return r;
}

}  // namespace

void direct_offer(std::string_view name, const std::shared_ptr<blocking_shared>& rep) {
    auto& r = registry();
    std::lock_guard lk(r.mu);
    r.offered.insert_or_assign(std::string(name), rep);
}

void direct_unoffer(std::string_view name, const blocking_shared* rep) {
    auto& r = registry();
    std::lock_guard lk(r.mu);
    if (const auto it = r.offered.find(name); it != r.offered.end() && it->second.get() == rep) r.offered.erase(it);
}

void direct_withdraw(const blocking_shared* rep) noexcept {
    auto& r = registry();
    std::lock_guard lk(r.mu);
    std::erase_if(r.offered, [&](const auto& kv) { return kv.second.get() == rep; });
    if (const auto it = r.links.find(rep); it != r.links.end()) {
        // The REQ may be sending at this moment: a request that lands after this store is
        // dropped with the REP, as one arriving through the shard for a closed socket is.
        it->second->rep_closed.store(true, std::memory_order_release);
        r.links.erase(it);
    }
}

std::shared_ptr<direct_link> direct_connect(std::string_view name, const std::shared_ptr<blocking_shared>& req) {
    auto& r = registry();
    std::lock_guard lk(r.mu);
    const auto it = r.offered.find(name);
    if (it == r.offered.end()) return nullptr;
    const std::shared_ptr<blocking_shared>& rep = it->second;
    // One link per REP: it reads one direct pipe besides its own; other REQs take the shard.
    if (r.links.contains(rep.get())) return nullptr;
    auto link = std::make_shared<direct_link>(req, rep);
    r.links.emplace(rep.get(), link);
    // Release: the REP's thread sees a constructed link when it loads the pointer.
    rep->direct.store(link.get(), std::memory_order_release);
    return link;
}

void direct_put(msg_pipe& p, const message& m) {
    if (m.empty()) p.put_empty();
    for (std::size_t i = 0; i < m.size(); ++i) {
        const bool more = i + 1 < m.size();
        const part& pt = m[i];
        if (pt.size() <= msg_pipe::inline_max && !pt.by_reference_only())
            p.put(pt.bytes(), more);
        else
            p.put(pt, more);  // a reference: message parts are immutable
    }
    p.end_message();
    p.publish();
}

void direct_put(msg_pipe& p, bytes_view one_part) {
    if (one_part.size() <= msg_pipe::inline_max)
        p.put(one_part, false);
    else
        p.put(part::copy(one_part), false);
    p.end_message();
    p.publish();
}

void direct_wake(blocking_shared& to) noexcept {
    // Dekker with the reader's sleep (wait_until, poll): it stores `waiting`, fences, looks at
    // the pipes; we published, fence, and read `waiting`. A busy reader costs no system call.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const app_wait w = to.waiting.load(std::memory_order_relaxed);
    if (w != app_wait::recv && w != app_wait::any) return;
    to.wake_seq.fetch_add(1, std::memory_order_release);
    futex_wake_all(to.wake_seq);
}

}  // namespace strix::link::detail
