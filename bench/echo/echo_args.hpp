#pragma once
// Minimal `--name value` command-line parsing for the echo programs (no dependency needed).

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

namespace strix {

class echo_args {
 public:
  /// Parses argv as `--name value` pairs; every name must be in `known`. Prints `usage` and exits 0
  /// on --help, exits 2 with one sentence on anything malformed. Main thread only.
  echo_args(int argc, char** argv, std::initializer_list<std::string_view> known,
            std::string_view usage)
      : prog_(argc > 0 ? argv[0] : "echo") {
    for (int i = 1; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (a == "--help" || a == "-h") {
        std::fprintf(stdout, "%.*s", static_cast<int>(usage.size()), usage.data());
        std::exit(0);
      }
      bool ok = a.size() > 2 && a.substr(0, 2) == "--";
      const std::string_view name = ok ? a.substr(2) : a;
      bool is_known = false;
      for (std::string_view k : known) is_known = is_known || k == name;
      if (!ok || !is_known) fail("unknown option '" + std::string(a) + "' (see --help)");
      if (i + 1 >= argc) fail("option '" + std::string(a) + "' needs a value");
      values_[std::string(name)] = argv[++i];
    }
  }

  /// True when --name was given. Main thread only.
  bool has(std::string_view name) const { return values_.count(std::string(name)) != 0; }

  /// The value of --name, or def. Main thread only.
  std::string str(std::string_view name, std::string def) const {
    auto it = values_.find(std::string(name));
    return it == values_.end() ? def : it->second;
  }

  /// The value of --name as an integer in [lo, hi], or def; exits 2 when it is not one.
  /// Main thread only.
  long long integer(std::string_view name, long long def, long long lo, long long hi) const {
    auto it = values_.find(std::string(name));
    if (it == values_.end()) return def;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (errno != 0 || end == it->second.c_str() || *end != '\0' || v < lo || v > hi) {
      fail("--" + std::string(name) + " must be an integer in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "], got '" + it->second + "'");
    }
    return v;
  }

  /// Prints "<prog>: <why>" and exits 2. Main thread only.
  [[noreturn]] void fail(const std::string& why) const {
    std::fprintf(stderr, "%s: %s\n", prog_.c_str(), why.c_str());
    std::exit(2);
  }

 private:
  std::string prog_;
  std::map<std::string, std::string> values_;
};

}  // namespace strix
