#pragma once
// set_thread_name: names the calling thread as top -H, ps -L and perf show it ("strix-shard-3",
// "strix-database-0"). Linux keeps 15 bytes of it; a longer name is cut there.

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace strix {

inline void set_thread_name(std::string_view name) noexcept {
    char buf[16];
    const std::size_t n = std::min(name.size(), sizeof buf - 1);
    std::memcpy(buf, name.data(), n);
    buf[n] = '\0';
    ::pthread_setname_np(::pthread_self(), buf);
}

}  // namespace strix
