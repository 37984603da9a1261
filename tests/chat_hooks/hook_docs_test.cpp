// docs/webhooks.md cannot drift from the code: its Python verifier accepts a POST the webhook
// sender made and refuses it tampered or stale, and its worked example is what hook_signature
// computes.

#include "chat_hooks/hook_receiver.hpp"

#include "apps/chat/server/hooks/hook_signature.hpp"
#include "apps/chat/server/hooks/webhook_sink.hpp"

#include <support/loopback.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace strix::chat {
namespace {

using namespace std::chrono_literals;

std::string read_doc() {
    std::ifstream f(std::filesystem::path(STRIX_SOURCE_DIR) / "docs" / "webhooks.md");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// The fenced block after `<!-- verifier -->`.
std::string verifier(const std::string& doc) {
    const std::size_t marker = doc.find("<!-- verifier -->");
    if (marker == std::string::npos) return {};
    const std::size_t open = doc.find("```python\n", marker);
    const std::size_t close = doc.find("```", open + 10);
    if (open == std::string::npos || close == std::string::npos) return {};
    return doc.substr(open + 10, close - open - 10);
}

// Runs the doc's verify() on the files; its exit status: 0 accepted, 1 refused.
int run_verifier(const std::string& dir, const std::string& code, const std::string& timestamp,
                 const std::string& signature) {
    std::ofstream(dir + "/verify.py") << code << "\nimport sys\n"
                                      << "secret = open(sys.argv[1], 'rb').read().rstrip(b'\\r\\n \\t')\n"
                                      << "body = open(sys.argv[2], 'rb').read()\n"
                                      << "sys.exit(0 if verify(secret, sys.argv[3], sys.argv[4], body) else 1)\n";
    const std::string cmd =
        "python3 " + dir + "/verify.py " + dir + "/secret " + dir + "/body '" + timestamp + "' '" + signature + "'";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(HookDocs, PythonVerifierAcceptsARealPostAndRefusesTamperingAndReplays) {
    const std::string code = verifier(read_doc());
    ASSERT_NE(code.find("def verify"), std::string::npos) << "docs/webhooks.md has no <!-- verifier --> block";
    test::temp_dir dir;
    const std::string secret = "docs-secret-0123456789abcdef";
    std::ofstream(dir.path() + "/secret") << secret << "\n";
    test::hook_receiver rx([](const test::hook_request&) { return test::hook_response{}; });
    rx.start();
    webhook_sink_config c;
    c.url = rx.url();
    c.secret = secret;
    webhook_sink sink(c);
    webhook_event ev;
    ev.kind = webhook_kind::message_stored;
    ev.room = 257;
    ev.room_name = "support-1";
    ev.text = "h\xc3\xa9llo \"quoted\"";
    ASSERT_TRUE(sink.push(ev));
    EXPECT_EQ(sink.stop(), 0u);
    ASSERT_EQ(rx.requests().size(), 1u);
    const test::hook_request q = rx.requests().front();
    const std::string ts = q.headers.at("x-strix-timestamp"), sig = q.headers.at("x-strix-signature");
    std::ofstream(dir.path() + "/body", std::ios::binary) << q.body;
    EXPECT_EQ(run_verifier(dir.path(), code, ts, sig), 0);
    std::ofstream(dir.path() + "/body", std::ios::binary) << q.body << " ";
    EXPECT_EQ(run_verifier(dir.path(), code, ts, sig), 1);  // the body changed
    // Signed an hour ago: a replay, refused even with a valid signature.
    const std::string old = std::to_string(std::stoll(ts) - 3600);
    std::ofstream(dir.path() + "/body", std::ios::binary) << q.body;
    EXPECT_EQ(run_verifier(dir.path(), code, old, hook_signature(secret, std::stoll(old), q.body)), 1);
}

TEST(HookDocs, WorkedExampleIsWhatTheServerComputes) {
    const std::string doc = read_doc();
    const std::string sig = hook_signature("whsec-example-0123456789", 1700000000, R"({"id":"x","events":[]})");
    EXPECT_NE(doc.find("X-Strix-Signature: " + sig), std::string::npos) << sig;
}

}  // namespace
}  // namespace strix::chat
