#include "apps/chat/cluster/resp.hpp"

#include "apps/chat/cluster/redis_errc.hpp"

#include <hiredis/hiredis.h>

#include <charconv>

namespace strix::chat {
namespace {

// Copies hiredis's tree into ours (the frame was bounded by the framer, so this is too).
void convert(const redisReply& r, resp_reply& out) {
    switch (r.type) {
        case REDIS_REPLY_STRING: out.type = resp_reply::kind::string; break;
        case REDIS_REPLY_STATUS: out.type = resp_reply::kind::status; break;
        case REDIS_REPLY_ERROR: out.type = resp_reply::kind::error; break;
        case REDIS_REPLY_INTEGER:
            out.type = resp_reply::kind::integer;
            out.integer = r.integer;
            return;
        case REDIS_REPLY_ARRAY:
            out.type = resp_reply::kind::array;
            out.elements.resize(r.elements);
            for (std::size_t i = 0; i < r.elements; ++i) convert(*r.element[i], out.elements[i]);
            return;
        default: out.type = resp_reply::kind::nil; return;
    }
    out.str.assign(r.str, r.len);
}

void describe_into(const resp_reply& r, std::string& out) {
    switch (r.type) {
        case resp_reply::kind::nil: out += "nil"; return;
        case resp_reply::kind::integer: out += std::to_string(r.integer); return;
        case resp_reply::kind::status: out += r.str; return;
        case resp_reply::kind::error: out += "(error) " + r.str; return;
        case resp_reply::kind::string: out += '"' + r.str + '"'; return;
        case resp_reply::kind::array:
            out += '[';
            for (std::size_t i = 0; i < r.elements.size(); ++i) {
                if (i) out += ", ";
                describe_into(r.elements[i], out);
            }
            out += ']';
            return;
    }
}

}  // namespace

std::string resp_reply::describe() const {
    std::string out;
    describe_into(*this, out);
    return out;
}

resp_reader::resp_reader() { reset(); }

resp_reader::~resp_reader() {
    if (reader_ != nullptr) redisReaderFree(reader_);
}

void resp_reader::reset() {
    if (reader_ != nullptr) redisReaderFree(reader_);
    reader_ = redisReaderCreate();
    if (reader_ == nullptr) throw std::bad_alloc();
}

std::error_code resp_reader::parse(std::span<const std::byte> frame, resp_reply& out) {
    out = resp_reply{};
    if (redisReaderFeed(reader_, reinterpret_cast<const char*>(frame.data()), frame.size()) != REDIS_OK) {
        error_ = reader_->errstr;
        reset();
        return redis_errc::protocol_error;
    }
    void* raw = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK || raw == nullptr) {
        error_ = raw == nullptr && reader_->err == 0 ? "incomplete reply in a complete frame" : reader_->errstr;
        if (raw != nullptr) freeReplyObject(raw);
        reset();  // a reader in error state stays there; the connection is dropped anyway
        return redis_errc::protocol_error;
    }
    std::unique_ptr<redisReply, void (*)(void*)> reply(static_cast<redisReply*>(raw), freeReplyObject);
    // The frame was exactly one reply; anything left means the framer and hiredis disagree.
    if (reader_->pos != reader_->len) {
        error_ = "bytes left after one reply";
        reset();
        return redis_errc::protocol_error;
    }
    convert(*reply, out);
    return {};
}

void append_command(std::string& out, std::span<const std::string_view> args) {
    char num[24];
    auto put_len = [&](char type, std::size_t n) {
        out += type;
        const auto r = std::to_chars(num, num + sizeof num, n);
        out.append(num, r.ptr);
        out += "\r\n";
    };
    put_len('*', args.size());
    for (const auto a : args) {
        put_len('$', a.size());
        out.append(a);
        out += "\r\n";
    }
}

}  // namespace strix::chat
