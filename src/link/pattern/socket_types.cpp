// The socket-type table (socket_types.hpp) and the public to_string / compatible that read it.
#include "link/pattern/socket_types.hpp"

#include <array>
#include <initializer_list>

namespace strix::link {
namespace detail {
namespace {

using t = socket_type;
using s = send_rule;
using r = receive_rule;

constexpr std::uint16_t types(std::initializer_list<socket_type> l) {
    std::uint16_t bits = 0;
    for (auto x : l) bits = static_cast<std::uint16_t>(bits | (1u << static_cast<unsigned>(x)));
    return bits;
}

// In the enum's order: row i describes socket_type i (checked below).
constexpr std::array<socket_type_info, 11> rows{{
    {t::pair, "PAIR", types({t::pair}), s::one_peer, r::one_peer, false},
    {t::pub, "PUB", types({t::sub, t::xsub}), s::fan_out, r::subscriptions, false},
    {t::sub, "SUB", types({t::pub, t::xpub}), s::none, r::filtered, false},
    {t::req, "REQ", types({t::rep, t::router}), s::request, r::reply, true},
    {t::rep, "REP", types({t::req, t::dealer}), s::reply, r::request, false},
    {t::dealer, "DEALER", types({t::rep, t::dealer, t::router}), s::round_robin, r::fair_queue, true},
    {t::router, "ROUTER", types({t::req, t::dealer, t::router}), s::by_identity, r::with_identity, true},
    {t::pull, "PULL", types({t::push}), s::none, r::fair_queue, false},
    {t::push, "PUSH", types({t::pull}), s::round_robin, r::none, false},
    {t::xpub, "XPUB", types({t::sub, t::xsub}), s::fan_out, r::subscriptions_and_messages, false},
    {t::xsub, "XSUB", types({t::pub, t::xpub}), s::upstream, r::filtered, false},
}};

constexpr bool rows_in_enum_order() {
    for (std::size_t i = 0; i < rows.size(); ++i)
        if (static_cast<std::size_t>(rows[i].type) != i) return false;
    return rows.size() == static_cast<std::size_t>(t::xsub) + 1;
}
static_assert(rows_in_enum_order(), "one row per socket_type, in the enum's order");

// A may talk to B exactly when B may talk to A (ZMTP checks it on both sides of the handshake).
constexpr bool compatibility_symmetric() {
    for (auto& a : rows)
        for (auto& b : rows)
            if (a.talks_to(b.type) != b.talks_to(a.type)) return false;
    return true;
}
static_assert(compatibility_symmetric(), "the peers columns must agree both ways");

}  // namespace

const socket_type_info* find_type_info(socket_type type) noexcept {
    const auto i = static_cast<std::size_t>(type);
    return i < rows.size() ? &rows[i] : nullptr;
}

std::optional<socket_type> type_from_name(std::string_view name) noexcept {
    for (auto& row : rows)
        if (name == row.name) return row.type;
    return std::nullopt;
}

}  // namespace detail

const char* to_string(socket_type type) noexcept {
    const auto* row = detail::find_type_info(type);
    return row ? row->name : "?";
}

bool compatible(socket_type a, socket_type b) noexcept {
    const auto* row = detail::find_type_info(a);
    return row && row->talks_to(b);
}

}  // namespace strix::link
