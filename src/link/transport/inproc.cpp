// inproc://: sockets of one process connected without a socket or a copy of the payload.
//
//   socket A (shard a)                                   socket B (shard b)
//   inproc_pipe side 0 ──batch of messages (one task per loop turn)──> inproc_pipe side 1
//                      <──acks (credit for the high-water mark)───────
//
// A message's parts are copied once into a shared buffer when sent; the peer's handler reads the
// same bytes. On one shard the batch is handed over in the end-of-turn flush (a direct call, no
// queue); across shards it travels the mesh. The two sides of a pipe share an inproc_link (atomic
// count) whose side pointers are each read and written only on their own shard.
//
// Names are scoped per engine, as libzmq scopes them per context (a blocking API context is one
// engine): sockets on one engine find each other's names, another engine's are unseen. A connect
// may come before the bind: it waits in the registry and completes when the name is bound, as
// with libzmq 4.
#include "link/transport/inproc.hpp"

#include "link/pattern/pattern.hpp"
#include "link/socket_core.hpp"
#include "link/transport/transport.hpp"

#include <strix/core/engine.hpp>
#include <strix/core/intrusive_ptr.hpp>
#include <strix/core/shard.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <system_error>

namespace strix::link::detail {

class inproc_pipe;
class inproc_transport;

namespace {
constexpr std::string_view scheme = "inproc://";
}  // namespace

std::optional<std::string_view> inproc_name(std::string_view address) noexcept {
    if (!address.starts_with(scheme)) return std::nullopt;
    return address.substr(scheme.size());
}

std::string inproc_key(const engine& e, std::string_view name) {
    // The engine's address tells engines apart: its sockets (and so their names) go before it.
    std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(&e));
    key += '/';
    key += name;
    return key;
}

/// What one side of an inproc pipe knows of the other.
struct inproc_peer_info {
    std::string name;
    socket_type type = socket_type::pair;
    std::string identity;
    std::uint32_t sndhwm = 0, rcvhwm = 0;
};

/// One socket's end of an inproc name: the binder's, or a connect waiting for a bind.
struct inproc_binding : atomic_ref_counted<inproc_binding> {
    inproc_transport* owner = nullptr;  // set to null on the owner's shard when it goes (read only there)
    shard* home = nullptr;
    std::string key;  // the registry's: inproc_key(engine, name)
    inproc_peer_info info;
};

namespace {

struct inproc_link : atomic_ref_counted<inproc_link> {
    inproc_pipe* side[2] = {nullptr, nullptr};  // side[i] is touched only on home[i]
    shard* home[2] = {nullptr, nullptr};
};

struct registry {
    std::mutex mu;
    std::map<std::string, intrusive_ptr<inproc_binding>, std::less<>> bound;
    std::multimap<std::string, intrusive_ptr<inproc_binding>, std::less<>> waiting;
};

registry& names() {
    static registry r;
    return r;
}

intrusive_ptr<inproc_binding> make_binding(inproc_transport& t, socket_core& c, std::string_view name) {
    intrusive_ptr<inproc_binding> b(new inproc_binding);
    b->owner = &t;
    b->home = &c.owner;
    b->key = inproc_key(c.owner.owner(), name);
    b->info = inproc_peer_info{std::string(name), c.type, c.opts.routing_id, c.opts.sndhwm, c.opts.rcvhwm};
    return b;
}

// Runs t on shard `to`: directly when it is the calling shard, or when its thread is not running
// (sockets connected before engine::start: both halves are built now, so no batch can reach a
// half that does not exist yet; a posted task would travel the outside queue, which the shard
// drains after the mesh the first batch takes).
void run_on(shard* to, task t) {
    if (shard::current() == to || !to->running()) {
        t();
        return;
    }
    to->owner().post(to->id(), std::move(t));
}

std::uint32_t pair_hwm(std::uint32_t a, std::uint32_t b) { return a == 0 || b == 0 ? 0 : a + b; }

}  // namespace

/// A socket's inproc side: its pipes, the names it bound and its connects waiting for a bind.
class inproc_transport final : public transport_state {
public:
    explicit inproc_transport(socket_core& c) noexcept : core_(c) {}
    ~inproc_transport() override;

    std::string bind(std::string_view address) override;
    void connect(std::string_view address) override;
    /// The name goes; pipes made through it stay (libzmq's inproc unbind only unregisters).
    void unbind(std::string_view address) override;
    /// This socket's pipes to the name (after the turn: prune), and a connect still waiting
    /// for its bind (now).
    void disconnect(std::string_view address) override;
    bool prune() override;
    /// Names go, and every pipe hands its peer what was sent, then the close.
    void close() override;
    void abort() override {}  // close() left nothing behind: inproc has no queue of its own
    std::size_t flushing() const noexcept override { return 0; }
    void pause(bool on) override;

    socket_core& core() const noexcept { return core_; }
    void add(intrusive_ptr<inproc_pipe> p);
    void remove(inproc_pipe* p);
    void stop_waiting(const intrusive_ptr<inproc_binding>& w) { std::erase(waiting_, w); }

private:
    socket_core& core_;
    std::vector<intrusive_ptr<inproc_pipe>> pipes_;
    std::vector<intrusive_ptr<inproc_binding>> bound_;    // names this socket bound
    std::vector<intrusive_ptr<inproc_binding>> unbound_;  // unbound, still held by a connect in flight
    std::vector<intrusive_ptr<inproc_binding>> waiting_;  // connects waiting for a bind
    std::vector<intrusive_ptr<inproc_pipe>> ending_;      // disconnected, closed at the next prune
};

/// What a pipe hands its peer in one go (once per loop turn, or sooner across shards when it
/// grows): message parts flattened into `parts`, control entries, and references to the buffers
/// that hold the bytes. Small parts are copied into the sender's current 64 KiB chunk, so a
/// stream of small messages costs no allocation per message and no reference count per message.
struct inproc_batch {
    enum class kind : std::uint8_t { msg, subscribe, cancel, ack, close, done };
    struct entry {
        kind what = kind::msg;
        std::uint32_t first = 0;  // index into parts
        std::uint32_t count = 0;  // parts of a message; 1 for a topic
        std::uint64_t acked = 0;  // ack: messages the peer consumed
    };
    std::vector<entry> entries;
    std::vector<bytes_view> parts;
    std::vector<shared_buffer_ptr> buffers;
    bool empty() const noexcept { return entries.empty(); }
};

class inproc_pipe final : public pipe, public reactor_object {
public:
    using kind = inproc_batch::kind;

    inproc_pipe(inproc_transport& t, intrusive_ptr<inproc_link> l, int side, const inproc_peer_info& peer,
                std::string addr)
        : core_(t.core()),
          transport_(t),
          link_(std::move(l)),
          side_(side),
          addr_(std::move(addr)),
          hwm_(pair_hwm(core_.opts.sndhwm, peer.rcvhwm)) {
        id = core_.next_pipe_id();
        peer_type = peer.type;
        peer_identity = peer.identity;
        link_->side[side_] = this;
    }

    // --- pipe --------------------------------------------------------------------------------
    bool full() noexcept override { return hwm_ && in_flight_ >= hwm_; }
    void write(outgoing& m) override {
        ++in_flight_;
        if (out_.entries.capacity() == 0) reserve_batch();
        inproc_batch::entry e;
        e.first = static_cast<std::uint32_t>(out_.parts.size());
        e.count = static_cast<std::uint32_t>(m.parts().size());
        if (m.shared) {
            // Fan-out: every peer references one copy of the parts.
            const auto& owned = m.owned();
            for (auto& p : owned) out_.parts.push_back(p.bytes());
            if (!owned.empty() && owned[0].buffer()) out_.buffers.push_back(owned[0].buffer());
        } else {
            const auto parts = m.parts();
            for (std::size_t i = 0; i < parts.size(); ++i) {
                const part* src = m.source(i);
                if (src && src->size() >= by_reference_min) {
                    // The application's buffer, by reference: no copy of the payload.
                    out_.buffers.push_back(src->buffer());
                    out_.parts.push_back(src->bytes());
                } else {
                    out_.parts.push_back(copy_in(parts[i]));
                }
            }
        }
        out_.entries.push_back(e);
        queued();
    }
    void send_subscription(bool on, bytes_view topic) override {
        inproc_batch::entry e;
        e.what = on ? kind::subscribe : kind::cancel;
        e.first = static_cast<std::uint32_t>(out_.parts.size());
        e.count = 1;
        out_.parts.push_back(copy_in(topic));
        out_.entries.push_back(e);
        queued();
    }
    void terminate(std::error_code) override { close(true); }
    const std::string& address() const noexcept override { return addr_; }
    /// Made by this socket's connect (side 0), not by a bind's peer.
    bool connected_here() const noexcept { return side_ == 0; }
    bool is_closed() const noexcept { return closed_; }
    void watch_writable() noexcept override { watching_ = true; }

    /// Detaches, tells the peer (after what is queued), and leaves the socket's list.
    void close(bool tell_peer) {
        if (closed_) return;
        closed_ = true;
        core_.detach(*this);
        if (tell_peer) {
            inproc_batch::entry e;
            e.what = kind::close;
            out_.entries.push_back(e);
            flush_out();
        }
        link_->side[side_] = nullptr;
        out_ = {};
        consumed_ = 0;
        transport_.remove(this);
    }

    /// A batch from the peer. While the socket is paused, acknowledgements (for what this side
    /// sent) are taken at once and the rest waits, unacknowledged, so the sender stops at its mark.
    void receive(inproc_batch& b) {
        if (closed_) return;
        if (core_.paused || !held_.empty()) {
            for (auto& e : b.entries)
                if (e.what == kind::ack) {
                    take_ack(e.acked);
                    e.what = kind::done;
                }
            held_.push_back(std::move(b));
            return;
        }
        // Paused midway (the application's receive queue filled up): the rest waits, in order.
        if (!process(b)) held_.push_back(std::move(b));
        if (consumed_) core_.owner.mark_dirty(*this);  // the ack goes out with the next flush
    }

    /// Delivers what was held while the socket was paused (until it pauses again).
    void resume() {
        while (!held_.empty() && !core_.paused && !closed_) {
            if (!process(held_.front())) break;
            held_.pop_front();
        }
        if (consumed_) core_.owner.mark_dirty(*this);
    }

    /// The peer's half never came (its socket was gone): as if it closed.
    void peer_gone() {
        core_.event(socket_event::kind::disconnected, addr_, link_errc::closed);
        close(false);
    }

private:
    static constexpr std::size_t chunk_size = 64 * 1024;
    // A part the application gave as a shared buffer goes by reference from this size on (one
    // reference count taken here and dropped on the receiving shard); below it, copying it into
    // the chunk is cheaper than the two atomic operations. Not chunk_size / 4: copying 8 KB parts
    // cost inproc 8 KB most of its rate (docs/link.md, "inproc: large messages", has the figures).
    static constexpr std::size_t by_reference_min = 1024;

    // Handles b's entries from the first not yet done; false if the socket paused midway (the
    // batch keeps its place, the entries done so far marked).
    bool process(inproc_batch& b) {
        for (auto& e : b.entries) {
            if (closed_) return true;
            switch (e.what) {
                case kind::msg:
                    if (core_.paused) return false;
                    ++core_.stats.messages_in;
                    ++consumed_;
                    e.what = kind::done;
                    core_.pat->receive(*this, std::span(b.parts.data() + e.first, e.count));
                    break;
                case kind::subscribe:
                case kind::cancel: {
                    const bool on = e.what == kind::subscribe;
                    e.what = kind::done;
                    core_.pat->subscription(*this, on, b.parts[e.first]);
                    break;
                }
                case kind::ack:
                    e.what = kind::done;
                    take_ack(e.acked);
                    break;
                case kind::close:
                    e.what = kind::done;
                    peer_gone();
                    return true;
                case kind::done: break;
            }
        }
        return true;
    }

    void take_ack(std::uint64_t n) {
        in_flight_ -= std::min(in_flight_, n);
        if (watching_ && !full()) {
            watching_ = false;
            core_.pipe_writable(*this);
        }
    }

    // A new batch starts with room for as many messages as the last one held (at least 16), so
    // it does not grow by doubling from nothing once per batch (the batch's vectors move to the
    // peer with it).
    void reserve_batch() {
        const std::size_t n = std::clamp<std::size_t>(last_batch_, 16, 1024);
        out_.entries.reserve(n);
        out_.parts.reserve(n);
        out_.buffers.reserve(n / 4 + 1);
    }

    // Copies b into the current chunk (or a buffer of its own when large) and returns the copy.
    bytes_view copy_in(bytes_view b) {
        if (b.empty()) return {};
        if (b.size() > chunk_size / 4) {
            auto own = shared_buffer::create(b.size());
            std::memcpy(own->data(), b.data(), b.size());
            out_.buffers.push_back(own);
            return bytes_view(own->data(), b.size());
        }
        if (!chunk_ || chunk_used_ + b.size() > chunk_size) {
            chunk_ = shared_buffer::create(chunk_size);
            chunk_used_ = 0;
            chunk_in_batch_ = false;
        }
        if (!chunk_in_batch_) {
            out_.buffers.push_back(chunk_);  // the batch keeps the chunk alive
            chunk_in_batch_ = true;
        }
        // Bytes past chunk_used_ were never handed out: the peer reads only earlier ones.
        std::byte* at = chunk_->data() + chunk_used_;
        std::memcpy(at, b.data(), b.size());
        chunk_used_ += b.size();
        return bytes_view(at, b.size());
    }

    void queued() {
        if (out_.entries.size() == 1) core_.owner.mark_dirty(*this);
        // Across shards a long batch goes before the turn ends, so the peer works while this
        // side is still sending (on one shard it waits for the flush: never re-enter from send).
        else if (out_.entries.size() >= 512 && link_->home[1 - side_] != &core_.owner)
            flush_out();
    }

    void on_io(std::uint32_t) override {}
    // A pipe closed this turn (its socket may be gone already) was maybe still marked for a
    // flush by a receive before: nothing of it may go out any more.
    void on_flush() override {
        if (!closed_) flush_out();
    }

    void flush_out() {
        if (consumed_) {
            inproc_batch::entry a;
            a.what = kind::ack;
            a.acked = consumed_;
            consumed_ = 0;
            out_.entries.push_back(a);
        }
        if (out_.empty()) return;
        last_batch_ = out_.entries.size();
        inproc_batch batch = std::move(out_);
        out_ = {};
        chunk_in_batch_ = false;
        const int other = 1 - side_;
        shard* to = link_->home[other];
        if (to == &core_.owner) {
            // Same shard: hand over now, from the flush (never from inside the sender's send()).
            if (inproc_pipe* peer = link_->side[other]) peer->receive(batch);
            return;
        }
        to->owner().post(to->id(), [l = link_, other, b = std::move(batch)]() mutable {
            if (inproc_pipe* peer = l->side[other]) peer->receive(b);
        });
    }

    socket_core& core_;
    inproc_transport& transport_;
    intrusive_ptr<inproc_link> link_;
    const int side_;
    std::string addr_;
    const std::uint64_t hwm_;
    std::uint64_t in_flight_ = 0;  // sent and not yet acknowledged by the peer
    std::uint64_t consumed_ = 0;   // delivered here, not yet acknowledged to the peer
    inproc_batch out_;
    std::size_t last_batch_ = 0;   // entries in the last batch handed over
    shared_buffer_ptr chunk_;      // where small parts are copied
    std::size_t chunk_used_ = 0;
    bool chunk_in_batch_ = false;  // out_ holds a reference to chunk_
    std::deque<inproc_batch> held_;  // what arrived while the socket was paused
    bool watching_ = false;
    bool closed_ = false;
};

inproc_transport::~inproc_transport() { close(); }

void inproc_transport::add(intrusive_ptr<inproc_pipe> p) { pipes_.push_back(std::move(p)); }

void inproc_transport::remove(inproc_pipe* p) {
    for (std::size_t i = 0; i < pipes_.size(); ++i)
        if (pipes_[i].get() == p) {
            core_.owner.retire(pipes_[i]);  // alive until the end of the turn
            pipes_.erase(pipes_.begin() + static_cast<std::ptrdiff_t>(i));
            return;
        }
}

namespace {

// Builds the pipe between `near` (the calling shard's socket, alive) and `far` (maybe on
// another shard, maybe gone by the time its half is built).
void make_pair(const intrusive_ptr<inproc_binding>& near, const intrusive_ptr<inproc_binding>& far) {
    inproc_transport& t = *near->owner;
    socket_core& c = t.core();
    const std::string addr = std::string(scheme) + far->info.name;
    if (!compatible(near->info.type, far->info.type)) {
        c.event(socket_event::kind::handshake_failed, addr, link_errc::socket_type_mismatch, to_string(far->info.type));
        ++c.stats.handshake_failures;
        return;
    }
    intrusive_ptr<inproc_link> link(new inproc_link);
    link->home[0] = near->home;
    link->home[1] = far->home;
    intrusive_ptr<inproc_pipe> p(new inproc_pipe(t, link, 0, far->info, addr));
    t.add(p);
    // The far half first (posted before any batch of ours, so it exists when they arrive).
    run_on(far->home, [link, far, near_info = near->info, addr] {
        inproc_transport* ft = far->owner;
        if (!ft || ft->core().closing) {
            // Nobody there any more: the near half hears that its peer closed.
            run_on(link->home[0], [link] {
                if (inproc_pipe* np = link->side[0]) np->peer_gone();
            });
            return;
        }
        socket_core& fc = ft->core();
        intrusive_ptr<inproc_pipe> fp(new inproc_pipe(*ft, link, 1, near_info, addr));
        ft->add(fp);
        fc.event(socket_event::kind::accepted, addr);
        fc.event(socket_event::kind::handshake_succeeded, addr, {}, to_string(near_info.type));
        fc.attach(*fp);
    });
    c.event(socket_event::kind::connected, addr);
    c.event(socket_event::kind::handshake_succeeded, addr, {}, to_string(far->info.type));
    c.attach(*p);
}

}  // namespace

std::string inproc_transport::bind(std::string_view address) {
    const std::string_view name = address.substr(scheme.size());
    if (name.empty()) throw std::invalid_argument("inproc:// needs a name");
    auto me = make_binding(*this, core_, name);
    std::vector<intrusive_ptr<inproc_binding>> waiters;
    {
        auto& r = names();
        std::lock_guard lk(r.mu);
        if (r.bound.count(me->key))
            throw std::system_error(make_error_code(link_errc::address_in_use),
                                    "cannot bind inproc://" + std::string(name));
        r.bound.emplace(me->key, me);
        auto [lo, hi] = r.waiting.equal_range(me->key);
        for (auto it = lo; it != hi; ++it) waiters.push_back(it->second);
        r.waiting.erase(lo, hi);
    }
    bound_.push_back(me);
    const std::string bound = std::string(scheme) + std::string(name);
    core_.event(socket_event::kind::listening, bound);
    // Connects that came first complete now, each on its own socket's shard.
    for (auto& w : waiters) {
        run_on(w->home, [w, me] {
            if (!w->owner || w->owner->core().closing) return;
            w->owner->stop_waiting(w);
            make_pair(w, me);
        });
    }
    return bound;
}

void inproc_transport::connect(std::string_view address) {
    const std::string_view name = address.substr(scheme.size());
    if (name.empty()) throw std::invalid_argument("inproc:// needs a name");
    auto me = make_binding(*this, core_, name);
    intrusive_ptr<inproc_binding> target;
    {
        auto& r = names();
        std::lock_guard lk(r.mu);
        auto it = r.bound.find(me->key);
        if (it == r.bound.end()) {
            r.waiting.emplace(me->key, me);
        } else {
            target = it->second;
        }
    }
    if (!target) {
        waiting_.push_back(me);
        return;
    }
    make_pair(me, target);
}

namespace {

std::string_view checked_name(std::string_view address) {
    const std::string_view name = address.substr(scheme.size());
    if (name.empty()) throw std::invalid_argument("inproc:// needs a name");
    return name;
}

[[noreturn]] void no_such(const char* what, std::string_view address) {
    throw std::system_error(std::make_error_code(std::errc::no_such_file_or_directory),
                            std::string(what) + " " + std::string(address));
}

}  // namespace

void inproc_transport::unbind(std::string_view address) {
    const std::string_view name = checked_name(address);
    const auto it = std::find_if(bound_.begin(), bound_.end(), [&](const auto& b) { return b->info.name == name; });
    if (it == bound_.end()) no_such("unbind", address);
    {
        auto& r = names();
        std::lock_guard lk(r.mu);
        auto at = r.bound.find((*it)->key);
        if (at != r.bound.end() && at->second == *it) r.bound.erase(at);
    }
    const std::string ep = std::string(scheme) + std::string(name);
    // A connect that found the name just before still completes (its half here is on its way,
    // holding the binding): the binding keeps its owner until close(), or until nobody else
    // holds it.
    std::erase_if(unbound_, [](const auto& b) { return b->use_count() == 1; });
    unbound_.push_back(std::move(*it));
    bound_.erase(it);
    core_.event(socket_event::kind::closed, ep);
}

void inproc_transport::disconnect(std::string_view address) {
    const std::string_view name = checked_name(address);
    bool found = false;
    {
        auto& r = names();
        std::lock_guard lk(r.mu);
        for (auto& w : waiting_) {
            if (w->info.name != name) continue;
            found = true;
            auto [lo, hi] = r.waiting.equal_range(w->key);
            for (auto it = lo; it != hi;) it = it->second == w ? r.waiting.erase(it) : std::next(it);
            w->owner = nullptr;
        }
    }
    std::erase_if(waiting_, [](const auto& w) { return w->owner == nullptr; });
    const std::string ep = std::string(scheme) + std::string(name);
    for (auto& p : pipes_) {
        if (!p->connected_here() || p->address() != ep) continue;
        if (std::find(ending_.begin(), ending_.end(), p) != ending_.end()) continue;  // disconnected already
        found = true;
        ending_.push_back(p);
    }
    if (!found) no_such("disconnect", address);
}

// The pipes disconnect() named close after the turn (disconnect may run inside one of their
// callbacks): the peer gets what was sent, then the close.
bool inproc_transport::prune() {
    auto ending = std::move(ending_);
    ending_.clear();
    for (auto& p : ending) {
        if (p->is_closed()) continue;
        core_.event(socket_event::kind::disconnected, p->address(), link_errc::closed);
        p->close(true);
    }
    return false;
}

// Delivers what inproc peers sent while the socket was paused.
void inproc_transport::pause(bool on) {
    if (on) return;  // a pipe holds what arrives while core_.paused
    auto pipes = pipes_;  // resume() may close pipes (a close item is never held, though)
    for (auto& p : pipes) p->resume();
}

void inproc_transport::close() {
    {
        auto& r = names();
        std::lock_guard lk(r.mu);
        for (auto& b : bound_) {
            auto it = r.bound.find(b->key);
            if (it != r.bound.end() && it->second == b) r.bound.erase(it);
        }
        for (auto& w : waiting_) {
            auto [lo, hi] = r.waiting.equal_range(w->key);
            for (auto it = lo; it != hi;) it = it->second == w ? r.waiting.erase(it) : std::next(it);
        }
    }
    // Only this shard reads owner: tasks arriving later see the socket is gone.
    for (auto& b : bound_) b->owner = nullptr;
    for (auto& b : unbound_) b->owner = nullptr;
    for (auto& w : waiting_) w->owner = nullptr;
    bound_.clear();
    unbound_.clear();
    waiting_.clear();
    ending_.clear();
    while (!pipes_.empty()) pipes_.back()->close(true);
}

bool inproc_bound(const engine& e, std::string_view name) {
    const std::string key = inproc_key(e, name);
    auto& r = names();
    std::lock_guard lk(r.mu);
    return r.bound.count(key) != 0;
}

std::unique_ptr<transport_state> make_inproc_transport(socket_core& c) { return std::make_unique<inproc_transport>(c); }

}  // namespace strix::link::detail
