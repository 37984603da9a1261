// io_uring backend: setup (see uring_poller.hpp for the design); streams and acceptors are in
// uring_stream.cpp.
#include "core/backend/uring_poller.hpp"

#include <cerrno>
#include <cstring>

namespace strix::detail {
std::unique_ptr<poller> make_uring_poller(std::string& why) {
    auto* ring = new io_uring;
    io_uring_params p{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED;
    int rc = io_uring_queue_init_params(uring::ring_entries, ring, &p);
    bool defer = true;
    if (rc == -EINVAL) {
        // Older kernels: no single issuer / deferred task work; cooperative task work instead.
        p = io_uring_params{};
        p.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_R_DISABLED;
        rc = io_uring_queue_init_params(uring::ring_entries, ring, &p);
        defer = false;
    }
    if (rc < 0) {
        why = std::string("io_uring_setup: ") + std::strerror(-rc);
        delete ring;
        return nullptr;
    }
    try {
        return std::make_unique<uring::uring_poller>(*ring, defer);
    } catch (const std::system_error& e) {
        why = e.what();
        io_uring_queue_exit(ring);
        delete ring;
        return nullptr;
    }
}

}  // namespace strix::detail
