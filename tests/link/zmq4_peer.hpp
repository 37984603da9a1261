#pragma once
// The go-zeromq/zmq4 side of zmq4_interop_test.cpp: zmq4-peer (tests/link/zmq4-peer/main.go, one
// zmq4 socket in a child process) built on first use by zmq4-peer/build.sh, and driven over its
// stdin/stdout one command line at a time. Used from the test thread only.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace strix::test::zmq4 {

/// Builds zmq4-peer once per process (or reuses a binary newer than its sources). Returns its
/// path, or nullopt with `why` set (no Go toolchain, no module proxy: the test skips).
inline std::optional<std::string> peer_binary(std::string& why) {
    static std::optional<std::string> path;
    static std::string reason;
    static bool tried = false;
    if (!tried) {
        tried = true;
        const std::string src = std::string(STRIX_SOURCE_DIR) + "/tests/link/zmq4-peer";
        const std::string out = std::string(STRIX_BIN_DIR) + "/../peers/zmq4";
        const std::string bin = out + "/zmq4-peer";
        auto mtime = [](const std::string& p) -> long long {
            struct stat st {};
            return ::stat(p.c_str(), &st) == 0 ? static_cast<long long>(st.st_mtime) : -1;
        };
        const long long built = mtime(bin);
        bool fresh = built >= 0;
        for (const char* f : {"/main.go", "/go.mod", "/go.sum"}) fresh = fresh && mtime(src + f) <= built;
        if (!fresh) {
            const std::string cmd = "'" + src + "/build.sh' '" + out + "' 2>&1";
            FILE* p = ::popen(cmd.c_str(), "r");
            std::string text;
            char buf[512];
            while (p && std::fgets(buf, sizeof buf, p)) text += buf;
            const int st = p ? ::pclose(p) : -1;
            if (st != 0 || mtime(bin) < 0) {
                while (!text.empty() && text.back() == '\n') text.pop_back();
                reason = "zmq4-peer not built: " + (text.empty() ? std::string("build.sh failed") : text);
            }
        }
        if (reason.empty()) path = bin;
    }
    why = reason;
    return path;
}

/// One zmq4-peer process: `zmq4-peer <type> <bind|connect> <endpoint>`, killed at scope end if
/// "quit" did not end it.
class peer {
public:
    peer(const std::string& bin, const std::string& type, bool bind, const std::string& endpoint) {
        int in[2], out[2];
        if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork");
        if (pid_ == 0) {
            ::dup2(in[0], 0);
            ::dup2(out[1], 1);
            const char* mode = bind ? "bind" : "connect";
            ::execl(bin.c_str(), bin.c_str(), type.c_str(), mode, endpoint.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        to_ = in[1];
        from_ = out[0];
        ::signal(SIGPIPE, SIG_IGN);  // a dead peer shows up as a failed command, not a dead test
    }
    ~peer() {
        if (to_ >= 0) {
            static const char quit[] = "quit\n";
            [[maybe_unused]] auto n = ::write(to_, quit, sizeof quit - 1);
            ::close(to_);
        }
        if (from_ >= 0) ::close(from_);
        for (int i = 0; i < 100; ++i) {
            if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
            ::usleep(10000);
        }
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    peer(const peer&) = delete;
    peer& operator=(const peer&) = delete;

    /// Sends one command line and returns the peer's one-line answer ("" if none within `within`).
    std::string command(const std::string& line, std::chrono::milliseconds within = std::chrono::seconds(15)) {
        const std::string l = line + "\n";
        std::size_t off = 0;
        while (off < l.size()) {
            const ssize_t n = ::write(to_, l.data() + off, l.size() - off);
            if (n <= 0) return "";
            off += static_cast<std::size_t>(n);
        }
        return read_line(within);
    }

    /// The first line the peer prints ("ready").
    std::string read_line(std::chrono::milliseconds within = std::chrono::seconds(15)) {
        const auto deadline = std::chrono::steady_clock::now() + within;
        for (;;) {
            if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
                std::string line = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                return line;
            }
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return "";
            pollfd p{from_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
            char b[65536];
            const ssize_t n = ::read(from_, b, sizeof b);
            if (n <= 0) return "";
            buf_.append(b, static_cast<std::size_t>(n));
        }
    }

    /// Sends one message; true on "sent".
    bool send(const std::vector<std::string>& parts) { return command("send" + encode(parts)) == "sent"; }

    /// Receives one message, or nullopt (timeout, error: `last` holds the answer).
    std::optional<std::vector<std::string>> recv() {
        last = command("recv");
        if (last.rfind("msg", 0) != 0) return std::nullopt;
        std::vector<std::string> parts;
        std::size_t i = 3;
        while (i < last.size()) {
            if (last[i] == ' ') {
                ++i;
                continue;
            }
            if (last[i] != 'x') return std::nullopt;
            std::size_t j = i + 1;
            std::string part;
            while (j + 1 < last.size() && last[j] != ' ') {
                part.push_back(static_cast<char>(std::stoi(last.substr(j, 2), nullptr, 16)));
                j += 2;
            }
            parts.push_back(std::move(part));
            i = j;
        }
        return parts;
    }

    bool subscribe(const std::string& topic) { return command("sub" + encode({topic})) == "ok"; }

    std::string last;  // the last answer to recv (for failure messages)

private:
    static std::string encode(const std::vector<std::string>& parts) {
        static const char hexd[] = "0123456789abcdef";
        std::string s;
        for (const auto& p : parts) {
            s += " x";
            for (unsigned char c : p) {
                s.push_back(hexd[c >> 4]);
                s.push_back(hexd[c & 15]);
            }
        }
        return s;
    }

    pid_t pid_ = -1;
    int to_ = -1;
    int from_ = -1;
    std::string buf_;
};

}  // namespace strix::test::zmq4
