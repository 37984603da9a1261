#pragma once
// task: a move-only `void()` callable with inline storage, the unit of work posted to a shard.
// Callables up to inline_size bytes (and nothrow-movable) live inside the task; larger ones are
// boxed on the heap. gcc 12 has no std::move_only_function, and std::function requires copyable
// callables and allocates for captures above 16 bytes.

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace strix {

class task {
public:
    static constexpr std::size_t inline_size = 48;

    task() noexcept = default;

    template <class F>
        requires(!std::is_same_v<std::decay_t<F>, task> && std::is_invocable_r_v<void, std::decay_t<F>&>)
    task(F&& f) {  // NOLINT: implicit on purpose, so post([..]{...}) reads naturally
        using fn = std::decay_t<F>;
        if constexpr (sizeof(fn) <= inline_size && alignof(fn) <= alignof(std::max_align_t) &&
                      std::is_nothrow_move_constructible_v<fn>) {
            ::new (static_cast<void*>(storage_)) fn(std::forward<F>(f));
            ops_ = &inline_ops<fn>;
        } else {
            ::new (static_cast<void*>(storage_)) fn*(new fn(std::forward<F>(f)));
            ops_ = &boxed_ops<fn>;
        }
    }

    task(task&& o) noexcept : ops_(o.ops_) {
        if (ops_) {
            ops_->move(o.storage_, storage_);
            o.ops_ = nullptr;
        }
    }
    task& operator=(task&& o) noexcept {
        if (this != &o) {
            reset();
            ops_ = o.ops_;
            if (ops_) {
                ops_->move(o.storage_, storage_);
                o.ops_ = nullptr;
            }
        }
        return *this;
    }
    task(const task&) = delete;
    task& operator=(const task&) = delete;
    ~task() { reset(); }

    /// Runs the callable. Requires a non-empty task.
    void operator()() { ops_->call(storage_); }
    explicit operator bool() const noexcept { return ops_ != nullptr; }
    void reset() noexcept {
        if (ops_) {
            ops_->destroy(storage_);
            ops_ = nullptr;
        }
    }

private:
    struct ops {
        void (*call)(void*);
        void (*move)(void* from, void* to) noexcept;  // move-constructs into `to`, destroys `from`
        void (*destroy)(void*) noexcept;
    };

    template <class F>
    static constexpr ops inline_ops{
        [](void* p) { (*static_cast<F*>(p))(); },
        [](void* from, void* to) noexcept {
            ::new (to) F(std::move(*static_cast<F*>(from)));
            static_cast<F*>(from)->~F();
        },
        [](void* p) noexcept { static_cast<F*>(p)->~F(); },
    };
    template <class F>
    static constexpr ops boxed_ops{
        [](void* p) { (**static_cast<F**>(p))(); },
        [](void* from, void* to) noexcept { ::new (to) F*(*static_cast<F**>(from)); },
        [](void* p) noexcept { delete *static_cast<F**>(p); },
    };

    alignas(std::max_align_t) std::byte storage_[inline_size];
    const ops* ops_ = nullptr;
};

}  // namespace strix
