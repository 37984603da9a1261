#include <strix/net/http_router.hpp>

#include <stdexcept>

namespace strix::http {
namespace {

// The segments of a path, without the leading '/': "/a/b/" -> {"a", "b", ""}.
std::vector<std::string_view> split(std::string_view path) {
    std::vector<std::string_view> out;
    if (path.empty() || path.front() != '/') return out;
    path.remove_prefix(1);
    for (;;) {
        const std::size_t slash = path.find('/');
        out.push_back(path.substr(0, slash));
        if (slash == std::string_view::npos) break;
        path.remove_prefix(slash + 1);
    }
    return out;
}

bool is_param(std::string_view seg) noexcept { return seg.size() >= 2 && seg.front() == '{' && seg.back() == '}'; }

int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Whether req's path segments fit the route's, collecting the parameters.
bool fits(const router::route& r, const std::vector<std::string_view>& segs,
          std::vector<std::pair<std::string, std::string>>& params) {
    if (segs.size() != r.segments.size()) return false;
    params.clear();
    for (std::size_t i = 0; i < segs.size(); ++i) {
        const std::string& want = r.segments[i];
        if (is_param(want)) {
            if (segs[i].empty()) return false;
            auto value = percent_decode(segs[i]);
            if (!value) return false;
            params.emplace_back(want.substr(1, want.size() - 2), std::move(*value));
        } else if (segs[i] != want) {
            return false;
        }
    }
    return true;
}

}  // namespace

void router::add(std::string_view method, std::string_view pattern, route_fn fn) {
    if (pattern.empty() || pattern.front() != '/')
        throw std::invalid_argument("route pattern must start with '/': " + std::string(pattern));
    route r;
    r.method = method;
    r.pattern = pattern;
    for (std::string_view seg : split(pattern)) {
        const bool opens = seg.find('{') != std::string_view::npos;
        const bool closes = seg.find('}') != std::string_view::npos;
        if ((opens || closes) && (!is_param(seg) || seg.size() == 2))
            throw std::invalid_argument("route pattern has a malformed {name} segment: " + std::string(pattern));
        r.segments.emplace_back(seg);
    }
    r.fn = std::move(fn);
    routes_.push_back(std::move(r));
}

router::match_result router::match(request& req) const {
    match_result out;
    const std::vector<std::string_view> segs = split(req.path());
    std::vector<std::pair<std::string, std::string>> params;
    const std::string_view method = req.method == "HEAD" ? std::string_view("GET") : std::string_view(req.method);
    for (std::size_t i = 0; i < routes_.size(); ++i) {
        const route& r = routes_[i];
        if (!fits(r, segs, params)) continue;
        if (r.method == method) {
            out.route = static_cast<int>(i);
            req.params = std::move(params);
            req.route = r.pattern;
            return out;
        }
        out.status = 405;
        if (out.allow.find(r.method) == std::string::npos) {
            if (!out.allow.empty()) out.allow.append(", ");
            out.allow.append(r.method);
            if (r.method == "GET") out.allow.append(", HEAD");
        }
    }
    return out;
}

void router::dispatch(request& req, responder res) const {
    const match_result m = match(req);
    if (m.route >= 0) {
        routes_[static_cast<std::size_t>(m.route)].fn(req, std::move(res));
        return;
    }
    const std::string reason = m.status == 405 ? std::string(req.method) + " not allowed here; allowed: " + m.allow
                                               : "no such endpoint: " + std::string(req.path());
    response r = on_error_ ? on_error_(m.status, reason) : json_error(m.status, reason);
    if (m.status == 405) r.headers.emplace_back("Allow", m.allow);
    res.send(std::move(r));
}

std::optional<std::string> percent_decode(std::string_view s, bool plus_as_space) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == '%') {
            if (i + 2 >= s.size()) return std::nullopt;
            const int hi = hex_value(s[i + 1]);
            const int lo = hex_value(s[i + 2]);
            if (hi < 0 || lo < 0) return std::nullopt;
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else if (c == '+' && plus_as_space) {
            out.push_back(' ');
        } else {
            out.push_back(c);
        }
    }
    return out;
}

std::optional<std::vector<std::pair<std::string, std::string>>> parse_query(std::string_view q) {
    std::vector<std::pair<std::string, std::string>> out;
    while (!q.empty()) {
        const std::size_t amp = q.find('&');
        const std::string_view piece = q.substr(0, amp);
        q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
        if (piece.empty()) continue;
        const std::size_t eq = piece.find('=');
        auto key = percent_decode(piece.substr(0, eq), true);
        auto value = percent_decode(eq == std::string_view::npos ? std::string_view() : piece.substr(eq + 1), true);
        if (!key || !value) return std::nullopt;
        out.emplace_back(std::move(*key), std::move(*value));
    }
    return out;
}

std::optional<std::string_view> query_value(const std::vector<std::pair<std::string, std::string>>& pairs,
                                            std::string_view name) noexcept {
    for (const auto& [k, v] : pairs)
        if (k == name) return std::string_view(v);
    return std::nullopt;
}

}  // namespace strix::http
