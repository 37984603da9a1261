// Fuzz target: HTTP on a metrics port (src/net/metrics_endpoint.cpp, the chat server's /metrics):
// http_head_framer() cuts the request head out of the received bytes, http_response_for()
// chooses the answer from it.
//
// Input: [max_head u16][bytes from the scraper...]   (max_head 0 = 8 KiB, the endpoint's limit)
//
// Checked, for prefixes of the bytes (exact heap copies: ASan sees a read past them):
//   - the head ends at the first empty line ("\r\n\r\n", or "\n\n" from a lenient client), as a
//     byte-by-byte reference scan finds it; no end yet gives 0 below the limit and limit + 1 at
//     or above it (refused as too large); a found head stays the same as more bytes arrive;
//   - the response is a well-formed HTTP/1.0 answer: 200 (and exactly one render() call) for
//     GET /metrics, 404 for another GET, 400 otherwise, with a Content-Length that matches.
#include "fuzz_support.hpp"

#include <strix/net/metrics_endpoint.hpp>

#include <string>
#include <vector>

using namespace strix;
using strix::fuzz::bytes;
using strix::fuzz::exact_copy;

namespace {

// The end of the first empty line, or 0.
std::size_t reference_end(std::string_view t) {
    for (std::size_t e = 2; e <= t.size(); ++e) {
        if (t.substr(e - 2, 2) == "\n\n") return e;
        if (e >= 4 && t.substr(e - 4, 4) == "\r\n\r\n") return e;
    }
    return 0;
}

void check_response(std::string_view head) {
    int renders = 0;
    const std::string body = "strix_up 1\n";
    const std::string out = http_response_for(head, [&] {
        ++renders;
        return body;
    });
    const bool metrics =
        head.starts_with("GET /metrics ") || head.starts_with("GET /metrics?") || head.starts_with("GET /metrics\r");
    const char* status = metrics ? "HTTP/1.0 200 OK\r\n" : head.starts_with("GET ") ? "HTTP/1.0 404 " : "HTTP/1.0 400 ";
    STRIX_FUZZ_CHECK(out.starts_with(status));
    STRIX_FUZZ_CHECK(renders == (metrics ? 1 : 0));
    const std::size_t split = out.find("\r\n\r\n");
    STRIX_FUZZ_CHECK(split != std::string::npos);
    const std::string headers = out.substr(0, split + 2);
    const std::string content = out.substr(split + 4);
    STRIX_FUZZ_CHECK(headers.find("\r\nContent-Length: " + std::to_string(content.size()) + "\r\n") !=
                     std::string::npos);
    STRIX_FUZZ_CHECK(headers.find("\r\nConnection: close\r\n") != std::string::npos);
    if (metrics) STRIX_FUZZ_CHECK(content == body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::reader in(fuzz::as_bytes(data, size));
    const std::uint16_t m = in.u16();
    const std::size_t max_head = m == 0 ? 8 * 1024 : m;
    const bytes stream = in.rest();
    if (stream.empty()) return 0;
    const std::string_view text = fuzz::as_text(stream);
    const framer& f = http_head_framer();

    // The prefixes a session could hold: the first 64 lengths, both sides of the limit and of
    // the head's end, and everything.
    const std::size_t end = reference_end(text);
    std::vector<std::size_t> ks;
    for (std::size_t k = 1; k <= std::min<std::size_t>(stream.size(), 64); ++k) ks.push_back(k);
    for (std::size_t k : {max_head - 1, max_head, max_head + 1, end - 1, end, end + 1, stream.size()})
        if (k >= 1 && k <= stream.size()) ks.push_back(k);

    std::size_t found = 0;
    for (std::size_t k : ks) {
        const exact_copy prefix(stream.first(k));
        const frame_cut c = f.cut(prefix.view(), max_head);
        STRIX_FUZZ_CHECK(!c.error);
        const std::size_t want = reference_end(text.substr(0, k));
        if (want != 0) {
            STRIX_FUZZ_CHECK(c.size == want);
            STRIX_FUZZ_CHECK(found == 0 || found == want);
            found = want;
        } else {
            STRIX_FUZZ_CHECK(c.size == (k >= max_head ? max_head + 1 : 0));
        }
    }

    // The session hands over a head within the limit; the endpoint answers it and closes.
    if (end != 0 && end <= max_head) check_response(text.substr(0, end));
    // Any text as a head, to reach every answer.
    check_response(text);
    return 0;
}
