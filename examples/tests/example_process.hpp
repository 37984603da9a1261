#pragma once
// An example program as a child process on port 0: started with its output in a log file, the
// port read back from the "listening on 127.0.0.1:<port>" line it prints, stopped with SIGTERM.

#include <support/loopback.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace strix::test {

class example_process {
public:
    example_process(const std::string& program, std::vector<std::string> args)
        : log_(::testing::TempDir() + program + "-" + std::to_string(::getpid()) + ".log"),
          child_(program, std::move(args), log_) {}
    ~example_process() { std::remove(log_.c_str()); }

    /// Everything the program wrote so far (stdout and stderr).
    std::string output() const {
        std::ifstream f(log_);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    }

    /// The port from the "listening on" line, waiting up to 10 s for it; nullopt if it never came.
    std::optional<std::uint16_t> wait_port() const {
        const std::string marker = "listening on 127.0.0.1:";
        for (int i = 0; i < 500; ++i) {
            auto out = output();
            if (auto at = out.find(marker); at != std::string::npos && out.find('\n', at) != std::string::npos)
                return static_cast<std::uint16_t>(std::stoul(out.substr(at + marker.size())));
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return std::nullopt;
    }

    /// Counts occurrences of `needle` in the output.
    std::size_t count(const std::string& needle) const {
        auto out = output();
        std::size_t n = 0;
        for (auto at = out.find(needle); at != std::string::npos; at = out.find(needle, at + needle.size())) ++n;
        return n;
    }

    /// SIGTERM, then the exit status within 10 s (-1 if it did not exit).
    int stop() {
        child_.signal(SIGTERM);
        return child_.wait_exit(std::chrono::seconds(10));
    }

    /// The exit status within `within` (-1 if still running), for a program that stops by itself.
    int wait_exit(std::chrono::milliseconds within) { return child_.wait_exit(within); }

private:
    std::string log_;
    child child_;
};

/// Reads one length-prefixed frame (header included); empty on timeout, EOF or a bad length.
inline bytes read_frame(int fd) {
    bytes hdr(4);
    if (!recv_exact(fd, hdr.data(), 4)) return {};
    std::uint32_t total = 0;
    for (int i = 0; i < 4; ++i) total |= std::to_integer<std::uint32_t>(hdr[static_cast<std::size_t>(i)]) << (8 * i);
    if (total < 4 || total > (1u << 20)) return {};
    bytes f(total);
    std::memcpy(f.data(), hdr.data(), 4);
    if (!recv_exact(fd, f.data() + 4, total - 4)) return {};
    return f;
}

/// True if nothing arrives on fd within `quiet` (the stream holds no extra bytes).
inline bool nothing_more(int fd, std::chrono::milliseconds quiet) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(quiet.count())) == 0;
}

/// Asserts a clean exit after SIGTERM.
inline void expect_clean_exit(example_process& p) {
    int status = p.stop();
    ASSERT_NE(status, -1) << "no exit within 10 s of SIGTERM";
    EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 0) << p.output();
}

}  // namespace strix::test
