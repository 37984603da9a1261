#pragma once
// A chat connection over TLS that is not one of our programs (OpenSSL through tests/support's
// tls_peer), for the tests that log in over TLS (tls_test.cpp, jwt_login_test.cpp).
#include "chat_test_client.hpp"

#include <support/tls_peer.hpp>

#include <openssl/bn.h>
#include <openssl/x509.h>

#include <optional>
#include <string>

namespace strix::test {

using proto::msg_type;

/// A certificate's serial number in hex, as the programs print it.
inline std::string serial_text(const X509* x) {
    BIGNUM* bn = x != nullptr ? ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), nullptr) : nullptr;
    char* hex = bn != nullptr ? BN_bn2hex(bn) : nullptr;
    std::string out = hex != nullptr ? hex : "";
    OPENSSL_free(hex);
    BN_free(bn);
    return out;
}

/// A chat connection over TLS that is not one of our programs (OpenSSL, blocking, 5 s timeouts),
/// verifying the server as "localhost" against `ca`.
class tls_chat {
public:
    tls_chat(std::uint16_t port, const std::string& ca) : peer_(port, {.ca = ca, .host = "localhost"}) {
        ok_ = peer_.handshake();
    }
    bool ok() const { return ok_; }
    std::string error() const { return peer_.error(); }
    std::string serial() const { return serial_text(SSL_get0_peer_certificate(peer_.ssl())); }

    bool send(flatbuffers::FlatBufferBuilder& fbb, msg_type type) {
        const shared_buffer_ptr f = finish_frame(fbb, type);
        return peer_.write_all(f->data(), f->size());
    }
    std::optional<frame> recv() {
        std::byte head[frame_header_size];
        if (!peer_.read_exact(head, sizeof head)) return std::nullopt;
        const auto h = parse_header(head);
        if (h.length < frame_header_size || h.length > (1u << 20)) return std::nullopt;
        frame f;
        f.type = static_cast<msg_type>(h.type);
        f.bytes.resize(h.length);
        std::memcpy(f.bytes.data(), head, sizeof head);
        if (h.length > frame_header_size &&
            !peer_.read_exact(f.bytes.data() + frame_header_size, h.length - frame_header_size))
            return std::nullopt;
        return f;
    }
    /// Logs in; the player id, or 0.
    std::uint64_t login(const std::string& name) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createlogin_req(fbb, fbb.CreateString(name), fbb.CreateString("pw")));
        if (!send(fbb, msg_type::login_req)) return 0;
        auto f = recv();
        const auto* res = f && f->type == msg_type::login_res ? f->as<proto::login_res>() : nullptr;
        return res != nullptr && res->player() != nullptr ? res->player()->id() : 0;
    }
    /// A ping answered with its own timestamp: the connection still serves requests.
    bool ping(std::uint64_t ts) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createping_req(fbb, ts));
        if (!send(fbb, msg_type::ping_req)) return false;
        auto f = recv();
        const auto* pong = f && f->type == msg_type::pong_res ? f->as<proto::pong_res>() : nullptr;
        return pong != nullptr && pong->ts() == ts;
    }

private:
    tls_peer peer_;
    bool ok_ = false;
};

}  // namespace strix::test
