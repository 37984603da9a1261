#pragma once
// The I/O backends a shard can run on (engine_config::io).

#include <cstdint>

namespace strix {

/// How shards wait for and perform I/O.
enum class io_backend : std::uint8_t {
    automatic,  // STRIX_IO=epoll|uring from the environment, else the default: io_uring where the
                // kernel allows it, epoll elsewhere
    epoll,      // readiness: epoll, then read/write system calls per connection
    uring,      // completions: io_uring with multishot receive into provided buffers, batched sends;
                // falls back to epoll (logged once) where the kernel or a sandbox refuses io_uring
};

}  // namespace strix
