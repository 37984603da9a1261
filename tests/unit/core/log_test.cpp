#include <strix/core/log.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <system_error>
#include <thread>

namespace {

using strix::log_level;

// Points fd 2 at a temporary file while alive; text() is what was written to it. stderr is
// unbuffered, so every log line reaches the file as it is written.
class stderr_capture {
public:
    stderr_capture() : file_(std::tmpfile()), saved_(::dup(2)) {
        std::fflush(stderr);
        ::dup2(::fileno(file_), 2);
    }
    ~stderr_capture() {
        restore();
        std::fclose(file_);
    }
    std::string text() {
        restore();
        std::string out;
        std::rewind(file_);
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) out.append(buf, n);
        return out;
    }

private:
    void restore() {
        if (saved_ < 0) return;
        std::fflush(stderr);
        ::dup2(saved_, 2);
        ::close(saved_);
        saved_ = -1;
    }
    std::FILE* file_;
    int saved_;
};

class log_test : public ::testing::Test {
protected:
    void SetUp() override { before_ = strix::get_log_level(); }
    void TearDown() override { strix::set_log_level(before_); }
    log_level before_{};
};

TEST_F(log_test, writes_one_prefixed_line_at_or_above_the_threshold) {
    strix::set_log_level(log_level::info);
    stderr_capture cap;
    strix::log(log_level::debug, "not shown {}", 1);
    strix::log(log_level::info, "shard {}: {} sessions", 2u, std::size_t{40});
    strix::log(log_level::warn, "session {}: {}; closing", std::string("10.0.0.1:5000"),
               std::make_error_code(std::errc::timed_out));
    strix::log(log_level::error, "no arguments");
    EXPECT_EQ(cap.text(), "strix info: shard 2: 40 sessions\n"
                          "strix warn: session 10.0.0.1:5000: Connection timed out; closing\n"
                          "strix error: no arguments\n");
}

TEST_F(log_test, off_writes_nothing) {
    strix::set_log_level(log_level::off);
    stderr_capture cap;
    strix::log(log_level::error, "not shown");
    strix::log_limited(log_level::error, "not shown either");
    EXPECT_EQ(cap.text(), "");
}

TEST_F(log_test, a_long_line_is_cut_at_1023_bytes) {
    strix::set_log_level(log_level::info);
    stderr_capture cap;
    strix::log(log_level::info, "{}", std::string(5000, 'x'));
    EXPECT_EQ(cap.text(), "strix info: " + std::string(1023, 'x') + "\n");
}

TEST_F(log_test, log_limited_writes_ten_lines_a_second_and_counts_the_rest) {
    strix::set_log_level(log_level::info);
    stderr_capture cap;
    // A thread of its own, so that its per-thread budget is fresh. The burst starts right after a
    // second begins (log_limited's windows are whole seconds of the steady clock), so all of it
    // falls in one window.
    std::thread([] {
        using namespace std::chrono;
        auto second = [] { return duration_cast<seconds>(steady_clock::now().time_since_epoch()).count(); };
        const auto start = second();
        while (second() == start) std::this_thread::sleep_for(milliseconds(1));
        for (int i = 0; i < 15; ++i) strix::log_limited(log_level::warn, "burst {}", i);
        const auto burst = second();
        while (second() == burst) std::this_thread::sleep_for(milliseconds(5));
        strix::log_limited(log_level::warn, "after {}", "the burst");
        strix::log_limited(log_level::warn, "and once more");
    }).join();
    std::string want;
    for (int i = 0; i < 10; ++i) want += "strix warn: burst " + std::to_string(i) + "\n";
    want += "strix warn: after the burst (5 similar lines suppressed)\n";
    want += "strix warn: and once more\n";
    EXPECT_EQ(cap.text(), want);
}

}  // namespace
