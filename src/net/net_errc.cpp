#include <strix/net/net_errc.hpp>

#include <string>

namespace strix {
namespace {

class net_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "strix.net"; }
    std::string message(int ev) const override {
        switch (static_cast<net_errc>(ev)) {
            case net_errc::peer_closed: return "the peer closed the connection";
            case net_errc::frame_too_small: return "frame length below the header size";
            case net_errc::frame_too_large: return "frame length above the configured maximum";
            case net_errc::bad_frame: return "malformed frame header or CRC mismatch";
            case net_errc::slow_consumer: return "slow consumer: queued output above the hard limit";
            case net_errc::idle_timeout: return "idle timeout: nothing received in time";
            case net_errc::shutdown: return "the server is shutting down";
            case net_errc::closed_by_app: return "closed by the application";
            case net_errc::frame_timeout: return "frame timeout: a frame was not completed in time";
            case net_errc::handshake_timeout: return "handshake timeout: no login or greeting in time";
            case net_errc::tls_handshake_failed: return "TLS handshake failed";
            case net_errc::tls_handshake_timeout: return "TLS handshake timeout";
            case net_errc::tls_handshakes_capped: return "too many TLS handshakes in progress";
            case net_errc::tls_record_error: return "TLS record error";
        }
        return "unknown strix.net error";
    }
};

}  // namespace

const std::error_category& net_category() noexcept {
    static const net_category_impl cat;
    return cat;
}

}  // namespace strix
