#pragma once
// sharded<T>: one instance of a service per shard, and the calls that reach the right one.
//
//     struct counter { std::uint64_t n = 0; };
//     strix::sharded<counter> counters(eng, [](strix::shard&) { return std::make_unique<counter>(); });
//
//     // on any shard:
//     counters.invoke_on(3, [](counter& c) { ++c.n; });             // runs on shard 3
//     counters.invoke_on(3, [](counter& c) { return c.n; },         // ... and the result comes
//                        [](std::uint64_t n) { use(n); });         //     back on this shard
//     counters.gather([](counter& c) { return c.n; },               // every shard's answer,
//                     [](std::vector<std::uint64_t> all) { ... });  // in shard order, here
//
// An instance that calls its siblings derives from sharded_peers<T> and reaches them through
// container(), instead of being handed the sharded<T> that holds it:
//
//     struct room : strix::sharded_peers<room> {
//         void tell_all() { container().invoke_on_all([](room& r) { ... }); }
//     };
//
// invoke_on calls fn directly when the target is the calling shard and posts it through the mesh
// otherwise (FIFO per pair of shards: two calls from one shard to another run in the order made).
// A reply or a gather's completion always runs on the calling shard, so the caller's state needs
// no locks. Nothing here blocks a shard.
//
// Thread contract: build and destroy on the engine's owning thread (destruction runs each
// instance's destructor on its own shard while the engine runs). local() and the reply forms are
// for shard threads; the one-way invoke_on and invoke_on_all work from any thread.

#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace strix {

template <class T>
class sharded;

/// Base of a service T whose instances call each other: the sharded<T> that builds an instance
/// tells it where it lives, so the instance needs no reference to its own container.
template <class T>
class sharded_peers {
public:
    /// The sharded<T> holding this instance. Set once the sharded<T> constructor has built every
    /// instance, so not from T's constructor (aborts there, or for a T no sharded<T> built).
    /// Any thread; what may be called on the container says sharded<T>.
    sharded<T>& container() const noexcept {
        if (container_ == nullptr) {
            std::fprintf(stderr, "strix: sharded_peers::container() called before a sharded<T> holds the instance\n");
            std::abort();
        }
        return *container_;
    }

protected:
    sharded_peers() = default;
    ~sharded_peers() = default;
    // A copy would belong to no container (or claim the original's).
    sharded_peers(const sharded_peers&) = delete;
    sharded_peers& operator=(const sharded_peers&) = delete;

private:
    friend class sharded<T>;
    sharded<T>* container_ = nullptr;
};

template <class T>
class sharded {
public:
    /// Builds one T per shard with make(shard&) -> std::unique_ptr<T>, on the calling thread.
    /// A T derived from sharded_peers<T> can use container() once this returns.
    template <class Make>
    sharded(engine& e, Make&& make) : engine_(e) {
        instances_.reserve(e.shard_count());
        for (unsigned i = 0; i < e.shard_count(); ++i) instances_.push_back(make(e.at(i)));
        if constexpr (std::is_base_of_v<sharded_peers<T>, T>) {
            for (auto& inst : instances_) static_cast<sharded_peers<T>&>(*inst).container_ = this;
        }
    }

    /// Destroys each instance on its own shard (or here for shards not running).
    ~sharded() {
        engine_.run_on_all_shards([this](shard& sh) { instances_[sh.id()].reset(); });
    }
    sharded(const sharded&) = delete;
    sharded& operator=(const sharded&) = delete;

    unsigned size() const noexcept { return static_cast<unsigned>(instances_.size()); }
    engine& owner() const noexcept { return engine_; }

    /// The calling shard's instance. Shard threads only.
    T& local() noexcept { return *instances_[calling_shard("sharded::local").id()]; }

    /// Shard i's instance, to be used on shard i only (e.g. handed to a server as its handler).
    T& on(unsigned i) noexcept { return *instances_[i]; }

    /// Runs fn(T&) on shard `target`: now when that is the calling shard, else posted.
    template <class F>
    void invoke_on(unsigned target, F&& fn) {
        if (shard* cur = shard::current(); cur && cur->id() == target && &cur->owner() == &engine_) {
            fn(*instances_[target]);
            return;
        }
        T* inst = instances_[target].get();
        engine_.post(target, [inst, f = std::forward<F>(fn)]() mutable { f(*inst); });
    }

    /// Runs fn(T&) on shard `target`, then reply(result) on the calling shard (reply() with no
    /// argument when fn returns void). Shard threads only.
    template <class F, class R>
    void invoke_on(unsigned target, F&& fn, R&& reply) {
        shard& here = calling_shard("sharded::invoke_on with a reply");
        using result = std::invoke_result_t<F&, T&>;
        if (here.id() == target) {
            if constexpr (std::is_void_v<result>) {
                fn(*instances_[target]);
                reply();
            } else {
                reply(fn(*instances_[target]));
            }
            return;
        }
        T* inst = instances_[target].get();
        const unsigned back = here.id();
        engine_.post(target, [this, inst, back, f = std::forward<F>(fn), r = std::forward<R>(reply)]() mutable {
            if constexpr (std::is_void_v<result>) {
                f(*inst);
                engine_.post(back, [r = std::move(r)]() mutable { r(); });
            } else {
                engine_.post(back, [r = std::move(r), v = f(*inst)]() mutable { r(std::move(v)); });
            }
        });
    }

    /// Runs fn(T&) on every shard (the calling one directly), then done(std::vector<result>) on
    /// the calling shard with the results in shard order (done() when fn returns void).
    /// fn must be copyable. Shard threads only.
    template <class F, class D>
    void gather(const F& fn, D&& done) {
        shard& here = calling_shard("sharded::gather");
        using result = std::invoke_result_t<const F&, T&>;
        using slot = std::conditional_t<std::is_void_v<result>, char, std::optional<result>>;
        // Lives on the calling shard: only its thread reads or writes it.
        struct state {
            std::vector<slot> results;
            unsigned remaining;
            std::decay_t<D> done;
            void finish_one() {
                if (--remaining > 0) return;
                if constexpr (std::is_void_v<result>) {
                    done();
                } else {
                    std::vector<result> out;
                    out.reserve(results.size());
                    for (auto& r : results) out.push_back(std::move(*r));
                    done(std::move(out));
                }
                delete this;
            }
        };
        auto* st = new state{std::vector<slot>(size()), size(), std::forward<D>(done)};
        const unsigned back = here.id();
        for (unsigned i = 0; i < size(); ++i) {
            if (i == back) continue;
            T* inst = instances_[i].get();
            engine_.post(i, [this, inst, back, st, i, fn] {
                if constexpr (std::is_void_v<result>) {
                    (void)i;  // only a result needs its slot
                    fn(*inst);
                    engine_.post(back, [st] { st->finish_one(); });
                } else {
                    engine_.post(back, [st, i, v = fn(*inst)]() mutable {
                        st->results[i].emplace(std::move(v));
                        st->finish_one();
                    });
                }
            });
        }
        if constexpr (std::is_void_v<result>) {
            fn(*instances_[back]);
        } else {
            st->results[back].emplace(fn(*instances_[back]));
        }
        st->finish_one();
    }

    /// Runs fn(T&) on every shard (the calling one directly). fn must be copyable. Any thread.
    template <class F>
    void invoke_on_all(const F& fn) {
        for (unsigned i = 0; i < size(); ++i) invoke_on(i, F(fn));
    }

private:
    shard& calling_shard(const char* what) const noexcept {
        shard* cur = shard::current();
        if (!cur || &cur->owner() != &engine_) {
            std::fprintf(stderr, "strix: %s called off the engine's shards\n", what);
            std::abort();
        }
        return *cur;
    }

    engine& engine_;
    std::vector<std::unique_ptr<T>> instances_;
};

}  // namespace strix
