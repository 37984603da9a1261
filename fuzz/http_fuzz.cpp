// Fuzz target: strix::http's parser layer (src/net/http/http_request_parser.cpp over nodejs's
// http_parser) and what a handler does first with a request: route it, parse its query.
//
// Input: [max_head u16][max_body u16][piece seed u8][bytes from the client...]
//        (max_head 0 = 16 KiB, max_body 0 = 64 KiB; the seed picks the sizes the bytes arrive in)
//
// Checked:
//   - every feed uses at most what it was given, and nothing after an error;
//   - every request within the limits: body <= max_body, target and headers <= max_head;
//   - an error is one of the statuses the protocol answers (400, 413, 414, 431, 501, 505);
//   - the same bytes in one piece and in the seed's pieces give the same requests (method,
//     target, headers, body, keep-alive) and both end in an error or neither;
//   - routing and query parsing of each request's target never fail but by returning nothing;
//   - each body as the server API reads JSON (apps/chat/server/api/api_json.hpp): refused with
//     400 or 415 and a reason, or an object whose dump parses back to the same dump, whose string
//     fields read within their limits.
#include "fuzz_support.hpp"

#include "apps/chat/server/api/api_json.hpp"
#include "net/http/http_request_parser.hpp"

#include <strix/net/http_router.hpp>

#include <string>
#include <vector>

using namespace strix;
using strix::fuzz::bytes;

namespace {

struct outcome {
    std::vector<http::request> requests;
    int error = 0;
};

// Feeds text in pieces whose sizes come from the seed (0: all at once).
outcome run(std::string_view text, http::detail::parser_limits lim, std::uint8_t seed) {
    outcome out;
    http::detail::request_parser p(lim);
    std::size_t off = 0;
    std::uint32_t state = seed;
    while (off < text.size()) {
        std::size_t piece = text.size() - off;
        if (seed != 0) {
            state = state * 1103515245u + 12345u;
            piece = std::min<std::size_t>(piece, 1 + (state >> 16) % 97);
        }
        const std::string chunk(text.substr(off, piece));  // exact heap copy: ASan sees a read past it
        std::size_t used = 0;
        for (;;) {
            const auto r = p.feed(std::span<const char>(chunk.data() + used, chunk.size() - used));
            STRIX_FUZZ_CHECK(r.used <= chunk.size() - used);
            used += r.used;
            if (r.event == http::detail::parse_event::error) {
                out.error = p.error_status();
                const int e = out.error;
                STRIX_FUZZ_CHECK(e == 400 || e == 413 || e == 414 || e == 431 || e == 501 || e == 505);
                STRIX_FUZZ_CHECK(p.feed(std::span<const char>(chunk.data(), chunk.size())).used == 0);
                return out;
            }
            if (r.event == http::detail::parse_event::message) {
                http::request req = p.take();
                STRIX_FUZZ_CHECK(req.body.size() <= lim.max_body);
                std::size_t head = req.target.size();
                for (const auto& [k, v] : req.headers) head += k.size() + v.size() + 4;
                STRIX_FUZZ_CHECK(head <= lim.max_head);
                out.requests.push_back(std::move(req));
                if (out.requests.size() > text.size()) STRIX_FUZZ_CHECK(false);  // a request costs bytes
            }
            if (r.event == http::detail::parse_event::more) {
                STRIX_FUZZ_CHECK(used == chunk.size());
                break;
            }
            if (used == chunk.size() && r.event == http::detail::parse_event::message) break;
        }
        off += piece;
    }
    return out;
}

bool same(const http::request& a, const http::request& b) {
    return a.method == b.method && a.target == b.target && a.headers == b.headers && a.body == b.body &&
           a.keep_alive == b.keep_alive && a.version_minor == b.version_minor;
}

const http::router& routes() {
    static const http::router r = [] {
        http::router x;
        x.add("GET", "/api/v1/rooms", {});
        x.add("GET", "/api/v1/rooms/{room_id}", {});
        x.add("GET", "/api/v1/rooms/{room_id}/history", {});
        x.add("POST", "/api/v1/users/{user}/messages", {});
        return x;
    }();
    return r;
}

void check_json_body(const http::request& req) {
    chat::body_refusal why;
    const auto j = chat::json_object_body(req, why);
    if (!j) {
        STRIX_FUZZ_CHECK(why.status == 400 || why.status == 415);
        STRIX_FUZZ_CHECK(!why.reason.empty());
        return;
    }
    STRIX_FUZZ_CHECK(j->is_object());
    // Dumped and parsed again it dumps the same (not equal to the input: 1e400 dumps as null).
    const std::string again = j->dump();
    const auto back = nlohmann::json::parse(again, nullptr, false);
    STRIX_FUZZ_CHECK(back.is_object() && back.dump() == again);
    for (const char* name : {"text", "from", "idempotency_key"}) {
        chat::body_refusal field_why;
        const auto v = chat::string_field(*j, name, false, 128, field_why);
        if (v) STRIX_FUZZ_CHECK(v->size() <= 128 && field_why.reason.empty());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::reader in(fuzz::as_bytes(data, size));
    const std::uint16_t mh = in.u16();
    const std::uint16_t mb = in.u16();
    const std::uint8_t seed = in.u8();
    const bytes stream = in.rest();
    if (stream.empty()) return 0;
    const std::string_view text = fuzz::as_text(stream);
    const http::detail::parser_limits lim{mh == 0 ? 16 * 1024u : mh, mb == 0 ? 64 * 1024u : mb};

    outcome whole = run(text, lim, 0);
    const outcome pieces = run(text, lim, seed == 0 ? 1 : seed);
    STRIX_FUZZ_CHECK(whole.requests.size() == pieces.requests.size());
    for (std::size_t i = 0; i < whole.requests.size(); ++i)
        STRIX_FUZZ_CHECK(same(whole.requests[i], pieces.requests[i]));
    STRIX_FUZZ_CHECK((whole.error == 0) == (pieces.error == 0));

    for (http::request& req : whole.requests) {
        const auto m = routes().match(req);
        if (m.route >= 0) STRIX_FUZZ_CHECK(!req.route.empty());
        for (const auto& [k, v] : req.params) STRIX_FUZZ_CHECK(!k.empty());
        if (auto q = http::parse_query(req.query())) {
            for (const auto& [k, v] : *q) STRIX_FUZZ_CHECK(k.size() + v.size() <= req.query().size());
        }
        check_json_body(req);
    }
    return 0;
}
