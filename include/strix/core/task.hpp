#pragma once
// task: a move-only `void()` callable with inline storage, the unit of work posted to a shard.
// Callables up to inline_size bytes (and nothrow-movable) live inside the task; larger ones are
// boxed on the heap. gcc 12 has no std::move_only_function, and std::function requires copyable
// callables and allocates for captures above 16 bytes.
//
// basic_task<N> is the same with N bytes inline: task (48) for posted work, timer callbacks (16,
// room for `this` and one more word) where the callable is embedded in many objects.

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace strix {

template <std::size_t InlineSize>
class basic_task {
public:
    static constexpr std::size_t inline_size = InlineSize;

    basic_task() noexcept = default;

    template <class F>
        requires(!std::is_same_v<std::decay_t<F>, basic_task> && std::is_invocable_r_v<void, std::decay_t<F>&>)
    basic_task(F&& f) {  // NOLINT: implicit on purpose, so post([..]{...}) reads naturally
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

    basic_task(basic_task&& o) noexcept : ops_(o.ops_) {
        if (ops_) {
            ops_->move(o.storage_, storage_);
            o.ops_ = nullptr;
        }
    }
    basic_task& operator=(basic_task&& o) noexcept {
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
    basic_task(const basic_task&) = delete;
    basic_task& operator=(const basic_task&) = delete;
    ~basic_task() { reset(); }

    /// Runs the callable (any number of times). Requires a non-empty task.
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

using task = basic_task<48>;

}  // namespace strix
