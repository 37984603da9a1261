// cluster_presence's signals: what other nodes hear about rooms and accounts without storage
// (typing, read markers, direct rooms opened, blocks), over Redis pub/sub (cluster_presence.hpp
// lists the channels and messages). Everything here runs on the owning shard.
#include "cluster_presence.hpp"

#include "room.hpp"
#include "room_host.hpp"
#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/service/chat_service.hpp"

#include <strix/core/log.hpp>

#include <charconv>

namespace strix::chat {
namespace {

// One decimal number and the space after it (or the end), from the front of `s`.
bool take(std::string_view& s, std::uint64_t& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc()) return false;
    s.remove_prefix(static_cast<std::size_t>(p - s.data()));
    if (!s.empty()) {
        if (s.front() != ' ') return false;
        s.remove_prefix(1);
    }
    return true;
}

// "<node> <what> <fields...>", space-separated (appended one by one: gcc 12's -Wrestrict takes
// chains of operator+ on strings for overlapping copies).
std::string signal(std::uint32_t node, char what, std::initializer_list<std::string_view> fields) {
    std::string out = std::to_string(node);
    out.push_back(' ');
    out.push_back(what);
    for (std::string_view f : fields) {
        out.push_back(' ');
        out.append(f);
    }
    return out;
}

}  // namespace

void cluster_presence::publish_signal(std::string channel, std::string payload) {
    std::string_view args[] = {"PUBLISH", channel, payload};
    publisher_.command(args, [](std::error_code ec, const resp_reply&) {
        if (ec) log_limited(log_level::warn, "a signal to the other nodes was lost: {}", ec.message());
    });
}

void cluster_presence::signal_typing(room_id id, std::uint64_t account, std::string_view name) {
    publish_signal(signal_channel(std::to_string(id.value())), signal(node_, 't', {std::to_string(account), name}));
}

void cluster_presence::signal_read(room_id id, std::uint64_t account, std::uint64_t seq) {
    publish_signal(signal_channel(std::to_string(id.value())),
                   signal(node_, 'r', {std::to_string(account), std::to_string(seq)}));
}

void cluster_presence::signal_direct(const stored_room& info, bool created) {
    std::string p = signal(node_, 'd', {std::to_string(info.id), created ? "1" : "0"});
    for (std::size_t i = 0; i < info.members.size() && i < info.member_names.size(); ++i) {
        p.push_back(' ');
        p.append(std::to_string(info.members[i]));
        p.push_back(' ');
        p.append(info.member_names[i]);  // account names have no spaces
    }
    publish_signal(std::string(control_channel), std::move(p));
}

void cluster_presence::signal_block(room_id id, std::uint64_t blocker, std::uint64_t blocked, bool on) {
    publish_signal(std::string(control_channel), signal(node_, 'b',
                                                        {std::to_string(id.value()), std::to_string(blocker),
                                                         std::to_string(blocked), on ? "1" : "0"}));
}

// "x <account id> <name>": the id is what the receivers look up; the name, after it, keeps a
// node that read the whole payload as a name (before the account index) from matching anyone.
void cluster_presence::signal_disconnect(const account& a) {
    publish_signal(std::string(control_channel), signal(node_, 'x', {std::to_string(a.id), a.name}));
}

void cluster_presence::signal_deleted(room_id id) {
    publish_signal(std::string(control_channel), signal(node_, 'g', {std::to_string(id.value())}));
}

bool cluster_presence::on_signal(std::string_view channel, std::string_view payload) {
    if (!is_signal_channel(channel)) return false;
    std::uint64_t node = 0;
    if (!take(payload, node) || payload.size() < 2 || payload[1] != ' ') return true;
    if (node == node_) return true;  // ours: told locally already
    const char what = payload[0];
    payload.remove_prefix(2);
    auto& services = host_.service().container();
    if (channel == control_channel && what == 'x') {
        std::uint64_t account = 0;
        if (!take(payload, account) || account == 0) return true;
        services.invoke_on_all([account](chat_service& svc) { svc.disconnect(account); });
        return true;
    }
    if (channel == control_channel) {
        std::uint64_t room = 0;
        if (!take(payload, room) || room == 0) return true;
        const room_id id(room);
        if (what == 'd') {
            // The room (held by its owner shard here when new: no database read), then every
            // session of its accounts on this node goes in.
            std::uint64_t created = 0;
            if (!take(payload, created)) return true;
            stored_room info;
            info.id = room;
            info.kind = 1;
            while (!payload.empty()) {
                std::uint64_t account = 0;
                if (!take(payload, account)) return true;
                const auto space = payload.find(' ');
                info.members.push_back(account);
                info.member_names.emplace_back(payload.substr(0, space));
                info.member_roles.push_back(0);
                payload.remove_prefix(space == std::string_view::npos ? payload.size() : space + 1);
            }
            if (info.members.size() != 2) return true;
            services.invoke_on(id.owner(services.size()), [info = std::move(info), created](chat_service& svc) mutable {
                const room_id rid(info.id);
                std::vector<std::uint64_t> accounts = info.members;
                svc.host().adopt_direct(std::move(info), created != 0);
                svc.host().enter_everywhere(rid, accounts);
            });
        } else if (what == 'g') {
            services.invoke_on(id.owner(services.size()), [id](chat_service& svc) { svc.host().drop_deleted(id); });
        } else if (what == 'b') {
            std::uint64_t blocker = 0, blocked = 0, on = 0;
            if (!take(payload, blocker) || !take(payload, blocked) || !take(payload, on)) return true;
            services.invoke_on(id.owner(services.size()), [id, blocker, blocked, on](chat_service& svc) {
                svc.host().set_block(id, blocker, blocked, on != 0);
            });
        }
        return true;
    }
    room* r = host_.find(room_of_channel(channel));
    if (r == nullptr) return true;
    std::uint64_t account = 0;
    if (!take(payload, account)) return true;
    if (what == 't') {
        host_.fan_out(*r, room_event::kind::notice, 0, 0, nullptr, frames::typing(r->id().value(), account, payload));
    } else if (what == 'r') {
        std::uint64_t seq = 0;
        if (!take(payload, seq)) return true;
        room_member* a = r->account_mut(account);
        if (a == nullptr || seq <= a->last_read) return true;
        a->last_read = seq;
        host_.fan_out(*r, room_event::kind::read, 0, 0, nullptr, frames::read_marker(r->id().value(), seq), 0, 0,
                      account);
    }
    return true;
}

}  // namespace strix::chat
