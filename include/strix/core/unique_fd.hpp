#pragma once
// unique_fd: owns one file descriptor and closes it once, like unique_ptr owns memory.
//
//     unique_fd fd{::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)};
//     if (!fd) throw std::system_error(errno, std::generic_category(), "socket");
//     ::connect(fd.get(), ...);
//     session = adopt(std::move(fd));   // ownership moves; the moved-from object holds -1

#include <unistd.h>

#include <utility>

namespace strix {

class unique_fd {
public:
    unique_fd() noexcept = default;
    /// Takes ownership of fd (-1: owns nothing).
    explicit unique_fd(int fd) noexcept : fd_(fd) {}
    unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    unique_fd& operator=(unique_fd&& o) noexcept {
        if (this != &o) reset(std::exchange(o.fd_, -1));
        return *this;
    }
    unique_fd(const unique_fd&) = delete;
    unique_fd& operator=(const unique_fd&) = delete;
    ~unique_fd() { reset(); }

    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }

    /// Gives up ownership without closing; returns the descriptor.
    int release() noexcept { return std::exchange(fd_, -1); }

    /// Closes the current descriptor (if any) and owns fd instead.
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

}  // namespace strix
