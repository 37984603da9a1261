#pragma once
// How the echo programs end on a bad command line: CLI11 parses, and every usage error ends the same
// way (one sentence on stderr, exit status 2), so a script can tell bad usage from a failed run.

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace strix {

/// Prints "<program>: <why> (see --help)" and exits 2. Main thread only.
[[noreturn]] inline void echo_usage_error(const CLI::App& app, const std::string& why) {
    std::fprintf(stderr, "%s: %s (see --help)\n", app.get_name().c_str(), why.c_str());
    std::exit(2);
}

/// Parses argv into the options registered on app. Prints the help and exits 0 on --help or -h;
/// exits 2 through echo_usage_error on an unknown option, a missing or malformed value or a value
/// out of range. Main thread only.
inline void echo_parse_args(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) std::exit(app.exit(e));  // --help: prints it, status 0
        echo_usage_error(app, e.what());
    }
}

}  // namespace strix
