#pragma once
// intrusive_ptr: a smart pointer whose reference count lives inside the object.
//
// Two count policies, chosen by the base class the object derives from:
//   ref_counted<T>         plain integer count. For shard-local objects (sessions, rooms):
//                          every copy, move and release must happen on the owning shard.
//   atomic_ref_counted<T>  std::atomic count. For objects shared across shards
//                          (immutable broadcast buffers): any thread may copy or release.
//
// The pointer finds the policy through two ADL hooks, intrusive_add_ref(T*) and
// intrusive_release(T*), so a type may also provide its own (e.g. to return itself to a pool).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

namespace strix {

/// CRTP base with a non-atomic count. Not thread-safe: one shard owns every reference.
template <class T>
class ref_counted {
public:
    /// Current count; for tests and assertions.
    std::uint32_t use_count() const noexcept { return refs_; }

protected:
    ref_counted() noexcept = default;
    ref_counted(const ref_counted&) noexcept {}  // a copy is a new object with its own count
    ref_counted& operator=(const ref_counted&) noexcept { return *this; }
    ~ref_counted() = default;

private:
    friend void intrusive_add_ref(const ref_counted* p) noexcept { ++p->refs_; }
    friend void intrusive_release(const ref_counted* p) noexcept {
        if (--p->refs_ == 0) delete static_cast<const T*>(p);
    }
    mutable std::uint32_t refs_ = 0;
};

/// CRTP base with an atomic count. Copy and release are safe from any thread.
template <class T>
class atomic_ref_counted {
public:
    /// Current count (a snapshot when other threads hold references).
    std::uint32_t use_count() const noexcept { return refs_.load(std::memory_order_relaxed); }

protected:
    atomic_ref_counted() noexcept = default;
    atomic_ref_counted(const atomic_ref_counted&) noexcept {}
    atomic_ref_counted& operator=(const atomic_ref_counted&) noexcept { return *this; }
    ~atomic_ref_counted() = default;

private:
    friend void intrusive_add_ref(const atomic_ref_counted* p) noexcept {
        p->refs_.fetch_add(1, std::memory_order_relaxed);
    }
    friend void intrusive_release(const atomic_ref_counted* p) noexcept {
        // acq_rel: the thread that frees must see every write made by the other holders.
        if (p->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete static_cast<const T*>(p);
    }
    mutable std::atomic<std::uint32_t> refs_{0};
};

/// Owning pointer to an object carrying its own count. Same thread contract as the object's policy.
template <class T>
class intrusive_ptr {
public:
    using element_type = T;

    constexpr intrusive_ptr() noexcept = default;
    constexpr intrusive_ptr(std::nullptr_t) noexcept {}
    /// Takes a reference (add_ref = true) or adopts one already counted (add_ref = false).
    explicit intrusive_ptr(T* p, bool add_ref = true) noexcept : p_(p) {
        if (p_ && add_ref) intrusive_add_ref(p_);
    }
    intrusive_ptr(const intrusive_ptr& o) noexcept : p_(o.p_) {
        if (p_) intrusive_add_ref(p_);
    }
    intrusive_ptr(intrusive_ptr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    template <class U>
        requires std::is_convertible_v<U*, T*>
    intrusive_ptr(const intrusive_ptr<U>& o) noexcept : p_(o.get()) {
        if (p_) intrusive_add_ref(p_);
    }
    template <class U>
        requires std::is_convertible_v<U*, T*>
    intrusive_ptr(intrusive_ptr<U>&& o) noexcept : p_(o.detach()) {}
    ~intrusive_ptr() {
        if (p_) intrusive_release(p_);
    }

    intrusive_ptr& operator=(const intrusive_ptr& o) noexcept {
        intrusive_ptr(o).swap(*this);
        return *this;
    }
    intrusive_ptr& operator=(intrusive_ptr&& o) noexcept {
        intrusive_ptr(std::move(o)).swap(*this);
        return *this;
    }
    intrusive_ptr& operator=(std::nullptr_t) noexcept {
        reset();
        return *this;
    }

    void reset() noexcept { intrusive_ptr().swap(*this); }
    void reset(T* p) noexcept { intrusive_ptr(p).swap(*this); }
    void swap(intrusive_ptr& o) noexcept { std::swap(p_, o.p_); }
    /// Gives up ownership without releasing; the caller now holds the reference.
    T* detach() noexcept { return std::exchange(p_, nullptr); }

    T* get() const noexcept { return p_; }
    T& operator*() const noexcept { return *p_; }
    T* operator->() const noexcept { return p_; }
    explicit operator bool() const noexcept { return p_ != nullptr; }

    friend bool operator==(const intrusive_ptr& a, const intrusive_ptr& b) noexcept { return a.p_ == b.p_; }
    friend bool operator==(const intrusive_ptr& a, std::nullptr_t) noexcept { return a.p_ == nullptr; }

private:
    T* p_ = nullptr;
};

/// Allocates a T and returns the first reference to it.
template <class T, class... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
    return intrusive_ptr<T>(new T(std::forward<Args>(args)...));
}

}  // namespace strix

template <class T>
struct std::hash<strix::intrusive_ptr<T>> {
    std::size_t operator()(const strix::intrusive_ptr<T>& p) const noexcept { return std::hash<T*>()(p.get()); }
};
