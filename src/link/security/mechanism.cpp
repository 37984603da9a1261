// The mechanisms' shared pieces (option checks, properties, ZAP) and PLAIN (RFC 24).
// CURVE is in curve.cpp.
#include "link/security/mechanism.hpp"

#include <stdexcept>

namespace strix::link::detail {

std::unique_ptr<mechanism> make_curve(mechanism_context ctx);  // curve.cpp

namespace {

bytes_view text_bytes(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

std::string identity_of(bytes_view metadata) {
    std::string id;
    zmtp::for_each_property(metadata, [&](std::string_view name, bytes_view value) {
        if (zmtp::iequals(name, "Identity")) id.assign(reinterpret_cast<const char*>(value.data()), value.size());
    });
    return id;
}

class plain_mechanism final : public mechanism {
public:
    explicit plain_mechanism(mechanism_context ctx) : ctx_(std::move(ctx)) {}
    const char* name() const noexcept override { return "PLAIN"; }
    bool as_server() const noexcept override { return ctx_.opts->plain_server; }

    void start(std::vector<std::byte>& out) override {
        if (as_server()) return;
        const auto& o = *ctx_.opts;
        std::vector<std::byte> d;
        d.push_back(static_cast<std::byte>(std::min<std::size_t>(o.plain_username.size(), 255)));
        append(d, text_bytes(o.plain_username).first(static_cast<std::size_t>(d.back())));
        const std::size_t plen = std::min<std::size_t>(o.plain_password.size(), 255);
        d.push_back(static_cast<std::byte>(plen));
        append(d, text_bytes(o.plain_password).first(plen));
        append(out, zmtp::command_frame("HELLO", d));
        state_ = state::expect_welcome;
    }

    step on_command(const zmtp::command& cmd, std::vector<std::byte>& out) override {
        switch (state_) {
            case state::expect_hello: {
                if (cmd.name != "HELLO") return fail(link_errc::bad_handshake, "expected HELLO");
                const bytes_view d = cmd.data;
                if (d.empty()) return fail(link_errc::bad_handshake, "malformed HELLO");
                const std::size_t ulen = static_cast<std::size_t>(d[0]);
                if (1 + ulen + 1 > d.size()) return fail(link_errc::bad_handshake, "malformed HELLO");
                const std::size_t plen = static_cast<std::size_t>(d[1 + ulen]);
                if (2 + ulen + plen != d.size()) return fail(link_errc::bad_handshake, "malformed HELLO");
                std::string user(reinterpret_cast<const char*>(d.data() + 1), ulen);
                std::string pass(reinterpret_cast<const char*>(d.data() + 2 + ulen), plen);
                zap_ = make_zap_request(ctx_, "PLAIN", {std::move(user), std::move(pass)}, {});
                state_ = state::expect_zap;
                return {step::status::zap, {}, {}};
            }
            case state::expect_initiate: {
                if (cmd.name != "INITIATE") return fail(link_errc::bad_handshake, "expected INITIATE");
                peer_meta_.assign(cmd.data.begin(), cmd.data.end());
                append(out, zmtp::command_frame("READY", ctx_.metadata));
                return done();
            }
            case state::expect_welcome: {
                if (cmd.name != "WELCOME" || !cmd.data.empty())
                    return fail(link_errc::bad_handshake, "expected WELCOME");
                append(out, zmtp::command_frame("INITIATE", ctx_.metadata));
                state_ = state::expect_ready;
                return {};
            }
            case state::expect_ready: {
                if (cmd.name != "READY") return fail(link_errc::bad_handshake, "expected READY");
                peer_meta_.assign(cmd.data.begin(), cmd.data.end());
                return done();
            }
            case state::expect_zap:
            case state::finished: break;
        }
        return fail(link_errc::bad_handshake, "command after the handshake");
    }

    step on_zap(const zap_reply& r, std::vector<std::byte>& out) override {
        if (state_ != state::expect_zap) return fail(link_errc::bad_handshake, "ZAP answer out of turn");
        if (!r.accepted()) {
            state_ = state::finished;
            return zap_refusal(r, out);
        }
        user_id_ = r.user_id;
        append(out, zmtp::command_frame("WELCOME", {}));
        state_ = state::expect_initiate;
        return {};
    }

private:
    enum class state : std::uint8_t {
        expect_hello,
        expect_zap,
        expect_welcome,
        expect_initiate,
        expect_ready,
        finished
    };
    static void append(std::vector<std::byte>& v, bytes_view b) { v.insert(v.end(), b.begin(), b.end()); }
    step fail(link_errc e, std::string d) {
        state_ = state::finished;
        return {step::status::failed, e, std::move(d)};
    }
    step done() {
        state_ = state::finished;
        return {step::status::done, {}, {}};
    }
    mechanism_context ctx_;
    state state_ = state::expect_hello;
};

}  // namespace

mechanism_kind check_security(const security_options& o) {
    const bool curve = o.curve_server || !o.curve_serverkey.empty();
    const bool plain = o.plain_server || !o.plain_username.empty() || !o.plain_password.empty();
    if (curve && plain)
        throw std::invalid_argument("strix::link: a socket's security is CURVE or PLAIN, not both (security_options)");
    if (plain) return mechanism_kind::plain;
    if (!curve) return mechanism_kind::null;
    if (!parse_curve_key(o.curve_secretkey))
        throw std::invalid_argument(
            "strix::link: CURVE needs curve_secretkey (32 bytes or 40 Z85 characters; curve_keypair::generate)");
    if (!o.curve_publickey.empty() && !parse_curve_key(o.curve_publickey))
        throw std::invalid_argument("strix::link: curve_publickey is not a key (32 bytes or 40 Z85 characters)");
    if (!o.curve_server && !parse_curve_key(o.curve_serverkey))
        throw std::invalid_argument("strix::link: curve_serverkey is not a key (32 bytes or 40 Z85 characters)");
    return mechanism_kind::curve;
}

std::unique_ptr<mechanism> make_mechanism(mechanism_kind k, mechanism_context ctx) {
    if (k == mechanism_kind::plain) return std::make_unique<plain_mechanism>(std::move(ctx));
    if (k == mechanism_kind::curve) return make_curve(std::move(ctx));
    return nullptr;
}

void put_property(std::vector<std::byte>& out, std::string_view name, bytes_view value) {
    out.push_back(static_cast<std::byte>(name.size()));
    const auto nb = text_bytes(name);
    out.insert(out.end(), nb.begin(), nb.end());
    const auto n = static_cast<std::uint32_t>(value.size());
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::byte>((n >> s) & 0xFF));
    out.insert(out.end(), value.begin(), value.end());
}

zap_request make_zap_request(const mechanism_context& ctx, std::string_view mech, std::vector<std::string> credentials,
                             bytes_view peer_metadata) {
    zap_request r;
    r.request_id = std::to_string(ctx.zap_request_id);
    r.domain = ctx.opts->zap_domain;
    r.address = ctx.peer_address;
    r.identity = identity_of(peer_metadata);
    r.mechanism = std::string(mech);
    r.credentials = std::move(credentials);
    return r;
}

zap_reply call_zap(const zap_handler& h, const zap_request& r) {
    zap_reply rep = h(r);
    // RFC 27 knows four codes; anything else is the handler's internal error.
    if (rep.status_code != "200" && rep.status_code != "300" && rep.status_code != "400") rep.status_code = "500";
    return rep;
}

step zap_refusal(const zap_reply& r, std::vector<std::byte>& out) {
    // A temporary failure closes silently (CurveZMQ's rule, which libzmq applies to every
    // mechanism); the others tell the client why.
    if (r.status_code != "300") {
        const auto e = zmtp::error_frame(r.status_code);
        out.insert(out.end(), e.begin(), e.end());
    }
    std::string detail = r.status_code;
    if (!r.status_text.empty()) detail += " " + r.status_text;
    return {step::status::failed, link_errc::auth_failed, std::move(detail)};
}

}  // namespace strix::link::detail
