#pragma once
// api_json: a server API request's JSON body, checked before an endpoint reads it. Header-only
// (nlohmann::json and strix::http's request) so the http fuzz target checks the same code.
//
//   no body, or one that is not JSON, not valid UTF-8, or not an object   -> 400 bad_request
//   a Content-Type that is given and is not application/json              -> 415
//   fields: string_field() for the usual "present, a string, not too long" checks

#include <nlohmann/json.hpp>
#include <strix/net/http_server.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace strix::chat {

/// Why a body was refused: the status and the reason for {"error", "reason"}.
struct body_refusal {
    int status = 400;
    std::string reason;
};

/// The body of req as a JSON object, or nullopt with `why` filled. Any thread.
inline std::optional<nlohmann::json> json_object_body(const http::request& req, body_refusal& why) {
    const std::string_view type = req.header("Content-Type");
    if (!type.empty()) {
        const std::string_view media = type.substr(0, type.find(';'));
        std::string lower(media);
        for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        while (!lower.empty() && lower.back() == ' ') lower.pop_back();
        if (lower != "application/json") {
            why = {415, "the body must be application/json"};
            return std::nullopt;
        }
    }
    if (req.body.empty()) {
        why = {400, "the request needs a JSON object body"};
        return std::nullopt;
    }
    // No exceptions: a discarded value is malformed JSON (or a string that is not UTF-8).
    nlohmann::json j = nlohmann::json::parse(req.body, nullptr, false);
    if (j.is_discarded()) {
        why = {400, "malformed JSON body (or not UTF-8)"};
        return std::nullopt;
    }
    if (!j.is_object()) {
        why = {400, "the body must be a JSON object"};
        return std::nullopt;
    }
    return j;
}

/// before "name" after, built by appending (gcc 12 warns falsely, -Wrestrict, on some inlined
/// literal + string concatenations). Any thread.
inline std::string quoted(std::string_view before, std::string_view name, std::string_view after) {
    std::string out(before);
    out += '"';
    out += name;
    out += '"';
    out += after;
    return out;
}

/// Field `name` of object j: nullopt when absent (and not required), else its string value; a
/// field of another type, a missing required one or one over max_bytes sets `why`. Any thread.
inline std::optional<std::string> string_field(const nlohmann::json& j, std::string_view name, bool required,
                                               std::size_t max_bytes, body_refusal& why) {
    const auto it = j.find(name);
    if (it == j.end() || it->is_null()) {
        if (required) why = {400, quoted("the body needs ", name, " (a string)")};
        return std::nullopt;
    }
    if (!it->is_string()) {
        why = {400, quoted("", name, " must be a string")};
        return std::nullopt;
    }
    const auto& s = it->get_ref<const std::string&>();
    if (s.size() > max_bytes) {
        why = {400, quoted("", name, " is longer than " + std::to_string(max_bytes) + " bytes")};
        return std::nullopt;
    }
    return s;
}

}  // namespace strix::chat
