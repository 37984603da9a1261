// io_uring backend: setup (see uring_poller.hpp for the design); streams and acceptors are in
// uring_stream.cpp.
#include "core/backend/uring_poller.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

namespace strix::detail {
std::unique_ptr<poller> make_uring_poller(std::string& why, unsigned share) {
    // Several shards on one CPU share its time, so each gets a fraction of the ring and buffers.
    const unsigned cut = std::bit_ceil(std::max(1u, share));
    const unsigned entries = std::max(uring::min_ring_entries, uring::ring_entries / cut);
    const unsigned buffers = std::max(uring::min_buffer_count, uring::buffer_count / cut);
    auto* ring = new io_uring;
    // The completion queue stays 8,192 entries whatever the cut: the kernel sizes the table that
    // cancels find requests in by it (256 buckets from 8,192 entries, 32 from 1,024), and a
    // closing stream cancels its receive there: with 18,500 streams a shard, 580 entries a walk.
    const auto setup = [&](unsigned flags) {
        io_uring_params p{};
        p.flags = flags | IORING_SETUP_R_DISABLED | IORING_SETUP_CQSIZE;
        p.cq_entries = 2 * uring::ring_entries;
        return io_uring_queue_init_params(entries, ring, &p);
    };
    // Cooperative task work: completions are posted when the shard's thread next returns from the
    // kernel (a system call, a tick), without an interrupt of its own. Not deferred task work
    // (completions only inside io_uring_enter when it waits): with it, the chat's p99 next to a
    // million idle TCP connections pinging was 12-17 ms against 1.1 ms alone, and 1.7 ms with
    // this setup (docs/benchmarks.md, "A million on an Intel Xeon host").
    int rc = setup(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN);
    if (rc == -EINVAL) rc = setup(IORING_SETUP_COOP_TASKRUN);  // before 6.0: no single issuer
    if (rc < 0) {
        why = std::string("io_uring_setup: ") + std::strerror(-rc);
        delete ring;
        return nullptr;
    }
    try {
        return std::make_unique<uring::uring_poller>(*ring, buffers);
    } catch (const std::system_error& e) {
        why = e.what();
        io_uring_queue_exit(ring);
        delete ring;
        return nullptr;
    }
}

}  // namespace strix::detail
