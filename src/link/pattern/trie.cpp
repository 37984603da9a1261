// topic_trie (pattern.hpp).
#include "link/pattern/pattern.hpp"

#include <algorithm>
#include <cstring>

namespace strix::link::detail {

std::uint32_t topic_trie::child(std::uint32_t n, std::uint8_t b) const noexcept {
    const auto& k = nodes_[n].kids;
    auto it = std::lower_bound(k.begin(), k.end(), b, [](const auto& e, std::uint8_t v) { return e.first < v; });
    return it != k.end() && it->first == b ? it->second : 0;
}

std::uint32_t topic_trie::child_or_make(std::uint32_t n, std::uint8_t b) {
    if (auto c = child(n, b)) return c;
    const auto id = static_cast<std::uint32_t>(nodes_.size());
    nodes_.emplace_back();
    auto& k = nodes_[n].kids;
    k.insert(std::lower_bound(k.begin(), k.end(), b, [](const auto& e, std::uint8_t v) { return e.first < v; }),
             {b, id});
    return id;
}

topic_trie::change topic_trie::add(bytes_view topic, pipe* p) {
    std::uint32_t n = 0;
    for (auto b : topic) n = child_or_make(n, static_cast<std::uint8_t>(b));
    node& nd = nodes_[n];
    change c;
    auto it = std::find_if(nd.subs.begin(), nd.subs.end(), [&](const auto& s) { return s.first == p; });
    if (it == nd.subs.end()) {
        nd.subs.emplace_back(p, 1);
        c.pipe_first = true;
    } else if (counted_) {
        ++it->second;
    } else {
        return c;  // a set: the pipe holds the topic already
    }
    if (nd.total++ == 0) {
        c.topic_first = true;
        ++topics_;
    }
    return c;
}

topic_trie::change topic_trie::remove(bytes_view topic, pipe* p) {
    std::uint32_t n = 0;
    for (auto b : topic) {
        n = child(n, static_cast<std::uint8_t>(b));
        if (n == 0) return {};
    }
    node& nd = nodes_[n];
    auto it = std::find_if(nd.subs.begin(), nd.subs.end(), [&](const auto& s) { return s.first == p; });
    if (it == nd.subs.end()) return {};
    change c;
    if (!counted_ || --it->second == 0) {
        nd.subs.erase(it);
        c.pipe_first = true;
    }
    if (--nd.total == 0) {
        c.topic_first = true;
        --topics_;
    }
    return c;
}

void topic_trie::remove_all(pipe* p, const std::function<void(bytes_view, bool)>& f) {
    // Depth-first with the path so far as the topic.
    std::vector<std::byte> path;
    std::function<void(std::uint32_t)> walk = [&](std::uint32_t n) {
        node& nd = nodes_[n];
        auto it = std::find_if(nd.subs.begin(), nd.subs.end(), [&](const auto& s) { return s.first == p; });
        if (it != nd.subs.end()) {
            nd.total -= counted_ ? it->second : 1;
            nd.subs.erase(it);
            const bool gone = nd.total == 0;
            if (gone) --topics_;
            f(bytes_view(path), gone);
        }
        for (std::size_t i = 0; i < nodes_[n].kids.size(); ++i) {
            auto [b, c] = nodes_[n].kids[i];
            path.push_back(static_cast<std::byte>(b));
            walk(c);
            path.pop_back();
        }
    };
    walk(0);
}

bool topic_trie::matches(bytes_view msg) const {
    std::uint32_t n = 0;
    for (std::size_t i = 0;; ++i) {
        if (nodes_[n].total) return true;
        if (i == msg.size()) return false;
        n = child(n, static_cast<std::uint8_t>(msg[i]));
        if (n == 0) return false;
    }
}

void topic_trie::for_each_topic(const std::function<void(bytes_view, std::uint32_t)>& f) const {
    std::vector<std::byte> path;
    std::function<void(std::uint32_t)> walk = [&](std::uint32_t n) {
        if (nodes_[n].total) f(bytes_view(path), nodes_[n].total);
        for (auto [b, c] : nodes_[n].kids) {
            path.push_back(static_cast<std::byte>(b));
            walk(c);
            path.pop_back();
        }
    };
    walk(0);
}

}  // namespace strix::link::detail
