// Fuzz target: strix-chat-server's configuration parser (apps/chat/server/options/chat_options.cpp),
// parse_options() with `--config FILE`, the input being the file's contents (CLI11's TOML reader
// and chat_options' own checks on top of it). The file is a fixed temporary path rewritten per
// input; nothing in chat_options.cpp had to change.
//
// Checked: parse_options returns (no exception escapes, no ASan/UBSan report); it either gives
// options that validate() accepts, with status 0, or no options and status 2 after its one
// sentence on stderr.
//
// parse_options prints that sentence for every rejected input: run with -close_fd_mask=2
// (scripts/fuzz.sh does) to keep the output readable; sanitizer reports still get through.
#include "fuzz_support.hpp"

#include "apps/chat/server/options/chat_options.hpp"

#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

std::string config_path;
int config_fd = -1;

void remove_config() {
    if (!config_path.empty()) ::unlink(config_path.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const char* dir =
        ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    std::string path = std::string(dir) + "/strix-config-fuzz-XXXXXX";
    config_fd = ::mkstemp(path.data());
    if (config_fd < 0) {
        std::perror("strix fuzz: mkstemp");
        std::abort();
    }
    config_path = path;
    std::atexit(remove_config);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (::ftruncate(config_fd, 0) != 0) std::abort();
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::pwrite(config_fd, data + done, size - done, static_cast<off_t>(done));
        if (n <= 0) std::abort();
        done += static_cast<std::size_t>(n);
    }

    std::string arg0 = "strix-chat-server", arg1 = "--config", arg2 = config_path;
    char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
    const strix::chat::parse_result r = strix::chat::parse_options(3, argv);
    if (r.options) {
        STRIX_FUZZ_CHECK(r.exit_code == 0);
        STRIX_FUZZ_CHECK(strix::chat::validate(*r.options).empty());
    } else {
        STRIX_FUZZ_CHECK(r.exit_code == 2);
    }
    return 0;
}
