#include "token_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace strix::chat {
namespace {

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string sanitized(const std::string& s) {
    std::string out = s;
    for (char& c : out) {
        const bool keep =
            (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
        if (!keep) c = '_';
    }
    return out;
}

// Creates `dir` and its missing parents with mode 0700 (the token is as good as a session).
std::string make_private_dirs(const std::filesystem::path& dir) {
    std::filesystem::path sofar;
    for (const auto& part : dir) {
        sofar /= part;
        if (::mkdir(sofar.c_str(), 0700) != 0 && errno != EEXIST)
            return "cannot create " + sofar.string() + ": " + std::strerror(errno);
    }
    return {};
}

}  // namespace

std::string token_file::path_for(const std::string& state_dir, const std::string& host, std::uint16_t port,
                                 const std::string& name) {
    std::filesystem::path dir;
    if (!state_dir.empty()) {
        dir = state_dir;
    } else if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && xdg[0] == '/') {
        dir = std::filesystem::path(xdg) / "strix-chat";
    } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
        dir = std::filesystem::path(home) / ".local" / "state" / "strix-chat";
    } else {
        return {};
    }
    return (dir / "device-tokens" / (sanitized(host) + "_" + std::to_string(port) + "_" + sanitized(name))).string();
}

std::optional<token_file::token> token_file::load(const std::string& path) {
    if (path.empty()) return std::nullopt;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    char buf[80];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    token t{};
    if (n < 64) return std::nullopt;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const int hi = hex_value(buf[2 * i]), lo = hex_value(buf[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        t[i] = static_cast<std::byte>(hi << 4 | lo);
    }
    return t;
}

std::string token_file::save(const std::string& path, const token& t) {
    if (path.empty()) return "no state directory: set XDG_STATE_HOME or HOME, or pass --state-dir";
    const std::filesystem::path file(path);
    if (auto err = make_private_dirs(file.parent_path()); !err.empty()) return err;
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    for (std::byte b : t) {
        text += digits[static_cast<unsigned>(b) >> 4];
        text += digits[static_cast<unsigned>(b) & 0xf];
    }
    text += '\n';
    const std::string tmp = path + ".tmp";
    // O_EXCL after removing a leftover: the new file gets mode 0600 from the start, whatever
    // the umask, and no one else's file (or link) is written through.
    ::unlink(tmp.c_str());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return "cannot create " + tmp + ": " + std::strerror(errno);
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    const int saved = errno;
    if (::close(fd) != 0 || !written) {
        ::unlink(tmp.c_str());
        return "cannot write " + tmp + ": " + std::strerror(written ? errno : saved);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        ::unlink(tmp.c_str());
        return "cannot replace " + path + ": " + std::strerror(e);
    }
    return {};
}

}  // namespace strix::chat
