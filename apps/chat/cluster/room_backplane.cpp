#include "apps/chat/cluster/room_backplane.hpp"

#include "apps/chat/cluster/resp.hpp"

#include <charconv>
#include <random>

namespace strix::chat {

namespace {

constexpr std::string_view library = R"lua(#!lua name=strix_chat
-- strix chat cluster: a room's seq, stream and channel, changed together (room_backplane.hpp).

local function publish(keys, args)
  local meta, stream, idem = keys[1], keys[2], keys[3]
  local channel, message, maxlen, candidate, ttl = args[1], args[2], args[3], args[4], tonumber(args[5])
  local floor = tonumber(args[6]) or 0
  local epoch = redis.call('HGET', meta, 'e')
  -- A server API post with an idempotency key: a key some node published already gets that
  -- message's seq back (the third element says so), and nothing is published again.
  if idem then
    local first = redis.call('GET', idem)
    if first then return {tonumber(first), epoch or '', 1} end
  end
  if not epoch then
    -- No state for the room: new, expired, or lost with a Redis restart. A caller that has not
    -- yet let the other nodes' commits settle asks first (args[7] '0') and is told so: nothing
    -- changes, and it calls again with a floor read after the wait.
    if args[7] == '0' then return {0, ''} end
    -- A new epoch says the state is new, and a stream left over from an older epoch must not
    -- mix with the new seqs.
    epoch = candidate
    redis.call('HSET', meta, 'e', epoch, 's', floor)
    redis.call('DEL', stream)
  elseif floor > (tonumber(redis.call('HGET', meta, 's')) or 0) then
    -- The caller knows seqs above the counter are taken (the epoch was started from a floor
    -- that missed them): skip past them rather than give one twice.
    redis.call('HSET', meta, 's', floor)
  end
  local seq = redis.call('HINCRBY', meta, 's', 1)
  redis.call('XADD', stream, 'MAXLEN', '~', maxlen, seq .. '-0', 'd', message)
  if ttl > 0 then
    redis.call('EXPIRE', meta, ttl)
    redis.call('EXPIRE', stream, ttl)
  end
  redis.call('PUBLISH', channel, seq .. ':' .. epoch .. ':' .. message)
  if idem then redis.call('SET', idem, seq, 'EX', args[8]) end
  return {seq, epoch}
end

local function since(keys, args)
  local m = redis.call('HMGET', keys[1], 's', 'e')
  local top = tonumber(m[1]) or 0
  local epoch = m[2] or ''
  local after, limit = tonumber(args[1]), tonumber(args[2])
  local entries = {}
  if limit > 0 and top > after then
    entries = redis.call('XRANGE', keys[2], (after + 1) .. '-0', '+', 'COUNT', limit)
  end
  return {top, epoch, entries}
end

-- The position check of many rooms in one call: KEYS are their hashes; [seq, epoch] per room.
local function positions(keys, args)
  local out = {}
  for i, k in ipairs(keys) do
    local m = redis.call('HMGET', k, 's', 'e')
    out[2 * i - 1] = tonumber(m[1]) or 0
    out[2 * i] = m[2] or ''
  end
  return out
end

-- Presence (presence_backplane.hpp): who is online on which node, per room, changed together
-- with the PUBLISH that tells the nodes watching the room, so a node that reads the hash after
-- subscribing (or after an outage) misses no state. Fields "<account>:<node>", values
-- "<incarnation> <name>", "<account>:left" for an account that left, and '#' the hash's version.
local function presence(keys, args)
  local online = keys[1]
  local channel, change, account, node, value, payload = args[1], args[2], args[3], args[4], args[5], args[6]
  -- The hash's version ('#'), on the message too: a reader drops what is older than it knows.
  local version = redis.call('HINCRBY', online, '#', 1)
  if change == 'd' then
    redis.call('DEL', online)
  elseif change == 'j' or change == 'n' then
    redis.call('HSET', online, account .. ':' .. node, value)
    redis.call('HDEL', online, account .. ':left')
  elseif change == 'f' then
    redis.call('HDEL', online, account .. ':' .. node)
  elseif change == 'l' then
    -- Left: the account is online nowhere in the room, and a reader tells a leave from going
    -- offline by the mark "<account>:left" (until the account comes back).
    local prefix = account .. ':'
    for _, f in ipairs(redis.call('HKEYS', online)) do
      if string.sub(f, 1, #prefix) == prefix then redis.call('HDEL', online, f) end
    end
    redis.call('HSET', online, account .. ':left', version)
  end
  redis.call('PUBLISH', channel, version .. ' ' .. payload)
  return version
end

-- The entries of a node that is down, or of an earlier run of it (any incarnation but `keep`),
-- in the rooms KEYS[2..]. Entries of the incarnation whose heartbeat (KEYS[1]) is alive now stay:
-- a node seen down while its beats were late, and back since, keeps what it announced. Every
-- node that notices calls it: deleting twice changes nothing.
local function presence_clear(keys, args)
  local suffix, keep = ':' .. args[1], args[2] .. ' '
  local live = redis.call('GET', keys[1])
  live = live and (live .. ' ') or nil
  local n = 0
  for k = 2, #keys do
    local all = redis.call('HGETALL', keys[k])
    for i = 1, #all, 2 do
      local v = all[i + 1]
      if string.sub(all[i], -#suffix) == suffix and (keep == ' ' or string.sub(v, 1, #keep) ~= keep) and
         not (live and string.sub(v, 1, #live) == live) then
        redis.call('HDEL', keys[k], all[i])
        n = n + 1
      end
    end
    if n > 0 then redis.call('HINCRBY', keys[k], '#', 1) end
  end
  return n
end

-- list_rooms' online counts: per room, the accounts with an entry of a live node (ARGV: pairs
-- node, incarnation of the nodes alive; none given: every entry counts).
local function online_counts(keys, args)
  local alive = {}
  for i = 1, #args, 2 do alive[args[i]] = args[i + 1] end
  local out = {}
  for i, key in ipairs(keys) do
    local all = redis.call('HGETALL', key)
    local seen, n = {}, 0
    for j = 1, #all, 2 do
      local account, node = string.match(all[j], '^(%d+):(%d+)$')
      local inc = string.match(all[j + 1], '^(%S+)')
      if account and not seen[account] and (#args == 0 or alive[node] == inc) then
        seen[account] = true
        n = n + 1
      end
    end
    out[i] = n
  end
  return out
end

redis.register_function('chat_publish', publish)
redis.register_function('chat_presence', presence)
redis.register_function('chat_presence_clear', presence_clear)
redis.register_function{function_name = 'chat_online_counts', callback = online_counts, flags = {'no-writes'}}
redis.register_function{function_name = 'chat_positions', callback = positions, flags = {'no-writes'}}
redis.register_function{function_name = 'chat_since', callback = since, flags = {'no-writes'}}
)lua";

bool parse_u64(std::string_view s, std::uint64_t& out) noexcept {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc{} && r.ptr == s.data() + s.size() && !s.empty();
}

}  // namespace

std::string_view backplane_library() { return library; }

std::vector<std::string> backplane_load_command() { return {"FUNCTION", "LOAD", "REPLACE", std::string(library)}; }

room_keys keys_for_room(std::string_view room) {
    std::string base = "chat:{" + std::string(room) + "}";
    return {base + ":m", base + ":x", base};
}

std::vector<std::string> publish_command(std::string_view room, std::string_view message, std::uint32_t stream_max,
                                         std::string_view epoch_candidate, std::uint32_t ttl_s, std::uint64_t seq_floor,
                                         bool may_create, std::string_view idem_key, std::uint32_t idem_ttl_s) {
    auto k = keys_for_room(room);
    std::vector<std::string> cmd{"FCALL", "chat_publish", idem_key.empty() ? "2" : "3", std::move(k.meta),
                                 std::move(k.stream)};
    if (!idem_key.empty()) cmd.push_back(k.channel + ":k:" + std::string(idem_key));  // the room's slot
    for (std::string a : {std::move(k.channel), std::string(message), std::to_string(stream_max),
                          std::string(epoch_candidate), std::to_string(ttl_s), std::to_string(seq_floor),
                          std::string(may_create ? "1" : "0"), std::to_string(idem_ttl_s)})
        cmd.push_back(std::move(a));
    return cmd;
}

std::optional<room_position> parse_publish_reply(const resp_reply& r) {
    if (r.type == resp_reply::kind::array && r.elements.size() == 2 &&
        r.elements[0].type == resp_reply::kind::integer && r.elements[0].integer == 0 &&
        r.elements[1].type == resp_reply::kind::string && r.elements[1].str.empty()) {
        return room_position{};  // no state for the room, and the call did not start one
    }
    if (r.type == resp_reply::kind::array && r.elements.size() == 3 &&
        r.elements[0].type == resp_reply::kind::integer && r.elements[0].integer > 0 &&
        r.elements[1].type == resp_reply::kind::string && r.elements[2].type == resp_reply::kind::integer &&
        r.elements[2].integer == 1) {
        // An idempotency key published before: that message's seq (the room's epoch may be "").
        return room_position{static_cast<std::uint64_t>(r.elements[0].integer), r.elements[1].str, true};
    }
    if (r.type != resp_reply::kind::array || r.elements.size() != 2 ||
        r.elements[0].type != resp_reply::kind::integer || r.elements[0].integer <= 0 ||
        r.elements[1].type != resp_reply::kind::string || r.elements[1].str.empty()) {
        return std::nullopt;
    }
    return room_position{static_cast<std::uint64_t>(r.elements[0].integer), r.elements[1].str};
}

std::optional<room_message> parse_channel_message(std::string_view payload) {
    const auto a = payload.find(':');
    if (a == std::string_view::npos) return std::nullopt;
    const auto b = payload.find(':', a + 1);
    if (b == std::string_view::npos || b == a + 1) return std::nullopt;
    room_message m;
    if (!parse_u64(payload.substr(0, a), m.seq) || m.seq == 0) return std::nullopt;
    m.epoch.assign(payload.substr(a + 1, b - a - 1));
    m.body.assign(payload.substr(b + 1));
    return m;
}

std::vector<std::string> since_command(std::string_view room, std::uint64_t after, std::uint32_t limit) {
    auto k = keys_for_room(room);
    return {"FCALL_RO",           "chat_since", "2", std::move(k.meta), std::move(k.stream), std::to_string(after),
            std::to_string(limit)};
}

std::vector<std::string> positions_command(std::span<const std::string> rooms) {
    std::vector<std::string> args{"FCALL_RO", "chat_positions", std::to_string(rooms.size())};
    args.reserve(rooms.size() + 3);
    for (const auto& room : rooms) args.push_back(keys_for_room(room).meta);
    return args;
}

std::optional<std::vector<room_position>> parse_positions_reply(const resp_reply& r, std::size_t rooms) {
    if (r.type != resp_reply::kind::array || r.elements.size() != 2 * rooms) return std::nullopt;
    std::vector<room_position> out(rooms);
    for (std::size_t i = 0; i < rooms; ++i) {
        const auto& seq = r.elements[2 * i];
        const auto& epoch = r.elements[2 * i + 1];
        if (seq.type != resp_reply::kind::integer || seq.integer < 0 || epoch.type != resp_reply::kind::string) {
            return std::nullopt;
        }
        out[i] = {static_cast<std::uint64_t>(seq.integer), epoch.str};
    }
    return out;
}

std::optional<room_since> parse_since_reply(const resp_reply& r) {
    if (r.type != resp_reply::kind::array || r.elements.size() != 3 ||
        r.elements[0].type != resp_reply::kind::integer || r.elements[0].integer < 0 ||
        r.elements[1].type != resp_reply::kind::string || r.elements[2].type != resp_reply::kind::array) {
        return std::nullopt;
    }
    room_since out;
    out.at.seq = static_cast<std::uint64_t>(r.elements[0].integer);
    out.at.epoch = r.elements[1].str;
    out.entries.reserve(r.elements[2].elements.size());
    for (const auto& e : r.elements[2].elements) {
        // [id, [field, value, ...]]
        if (e.type != resp_reply::kind::array || e.elements.size() != 2 ||
            e.elements[0].type != resp_reply::kind::string || e.elements[1].type != resp_reply::kind::array) {
            return std::nullopt;
        }
        const std::string& id = e.elements[0].str;
        room_message m;
        if (!parse_u64(std::string_view(id).substr(0, id.find('-')), m.seq)) return std::nullopt;
        const auto& fields = e.elements[1].elements;
        bool found = false;
        for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
            if (fields[i].str == "d") {
                m.body = fields[i + 1].str;
                found = true;
            }
        }
        if (!found) return std::nullopt;
        out.entries.push_back(std::move(m));
    }
    return out;
}

bool room_since::contiguous_after(std::uint64_t after) const noexcept {
    if (entries.empty()) return at.seq <= after;  // messages after `after` exist but none are here
    std::uint64_t expect = after + 1;
    for (const auto& e : entries) {
        if (e.seq != expect) return false;
        ++expect;
    }
    return true;
}

std::string new_epoch() {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    static constexpr char hex[] = "0123456789abcdef";
    std::uint64_t v = rng();
    std::string s(16, '0');
    for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = hex[v & 15];
    return s;
}

}  // namespace strix::chat
