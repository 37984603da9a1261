#pragma once
// conversation_layout: who talks where in strix-chat-load's conversations workload
// (--rooms-per-client K --room-size M [--dm-share P --dm-partners D]): every client is in K group
// rooms of exactly M members and has D direct-message partners. Pure and deterministic, so every
// thread (and every run) computes the same layout without sharing any state.
//
// Group rooms come in K layers of N / M rooms (N clients, N % M == 0). In layer k client i sits at
// position p_k(i) = (s_k * i + k) mod N, with s_0 = 1 and s_k (k >= 1) the first number from
// k * M + 1 up that is coprime with N, so p_k is a permutation: each room of the layer gets exactly
// M members and each client one room per layer (K distinct rooms). A stride above M puts
// neighbours of layer 0 into different rooms of layer k.
//
//   room   = k * (N / M) + p_k(i) / M        (room index 0 .. K * N / M - 1)
//   slot   = p_k(i) % M                      (its place among the room's M senders)
//
// Direct pairs link client i with i +- 1, i +- 2, ..., i +- D/2 (mod N): pair e = i * (D/2) + d - 1
// is {i, (i + d) mod N} for d = 1 .. D/2, N > D pairs in all distinct. The lower client number
// opens the pair's room (the first direct_req). Pairs are opened in rounds in which no client is
// in two pairs (a greedy edge colouring: at most 2D - 1 rounds), so no session is busy opening one
// room while its partner opens another to it.

#include "message_text.hpp"

#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace strix::chat {

class conversation_layout {
public:
    static constexpr std::uint32_t max_partners = 16;

    /// Why (clients, rooms_per_client, room_size, partners) is not a layout, or "" when it is.
    /// Pure.
    static std::string invalid(std::uint32_t clients, std::uint32_t rooms_per_client, std::uint32_t room_size,
                               std::uint32_t partners) {
        if (rooms_per_client == 0) return "--rooms-per-client must be at least 1";
        if (room_size < 2) return "--room-size must be at least 2";
        if (clients < room_size || clients % room_size != 0)
            return "--clients must be a multiple of --room-size (every room gets exactly --room-size members)";
        if (partners % 2 != 0 || partners > max_partners) return "--dm-partners must be even, at most 16";
        if (partners != 0 && clients <= partners) return "--clients must be more than --dm-partners";
        return {};
    }

    /// The layout of a valid combination (see invalid()). Any thread; read-only afterwards.
    conversation_layout(std::uint32_t clients, std::uint32_t rooms_per_client, std::uint32_t room_size,
                        std::uint32_t partners)
        : n_(clients), k_(rooms_per_client), m_(room_size), d_(partners) {
        strides_.push_back(1);
        for (std::uint32_t k = 1; k < k_; ++k) {
            std::uint64_t s = (std::uint64_t{k} * m_ + 1) % n_;
            while (s == 0 || std::gcd(s, std::uint64_t{n_}) != 1) s = (s + 1) % n_;
            strides_.push_back(s);
        }
        colour_pairs();
    }

    std::uint32_t clients() const noexcept { return n_; }
    std::uint32_t rooms_per_client() const noexcept { return k_; }
    std::uint32_t room_size() const noexcept { return m_; }
    std::uint32_t partners() const noexcept { return d_; }
    /// Group rooms in all. Any thread.
    std::uint32_t rooms() const noexcept { return n_ / m_ * k_; }

    /// The group room of `client` in layer `layer` (< rooms_per_client()). Any thread.
    std::uint32_t room_of(std::uint32_t layer, std::uint32_t client) const noexcept {
        return layer * (n_ / m_) + position(layer, client) / m_;
    }
    /// Its place among that room's members, 0 .. room_size() - 1. Any thread.
    std::uint32_t slot_of(std::uint32_t layer, std::uint32_t client) const noexcept {
        return position(layer, client) % m_;
    }
    /// The layer group room `room` belongs to. Any thread.
    std::uint32_t layer_of(std::uint32_t room) const noexcept { return room / (n_ / m_); }
    /// True when `client` is a member of group room `room`. Any thread.
    bool member(std::uint32_t room, std::uint32_t client) const noexcept {
        return room < rooms() && room_of(layer_of(room), client) == room;
    }

    /// Direct pairs in all. Any thread.
    std::uint32_t pair_count() const noexcept { return n_ * (d_ / 2); }
    /// Pair `e`'s clients, lower number first (the one that opens it). Any thread.
    std::pair<std::uint32_t, std::uint32_t> pair(std::uint32_t e) const noexcept {
        const std::uint32_t i = e / (d_ / 2);
        const std::uint32_t j = (i + e % (d_ / 2) + 1) % n_;
        return i < j ? std::pair{i, j} : std::pair{j, i};
    }
    /// The pairs `client` is in, D of them. Any thread.
    std::vector<std::uint32_t> pairs_of(std::uint32_t client) const {
        std::vector<std::uint32_t> out;
        for (std::uint32_t d = 1; d <= d_ / 2; ++d) {
            out.push_back(client * (d_ / 2) + d - 1);                      // {client, client + d}
            out.push_back(((client + n_ - d) % n_) * (d_ / 2) + d - 1);  // {client - d, client}
        }
        return out;
    }
    /// The round in which pair `e` is opened. Any thread.
    std::uint32_t round_of(std::uint32_t e) const noexcept { return round_[e]; }
    /// Rounds in all (0 without pairs). Any thread.
    std::uint32_t rounds() const noexcept { return rounds_; }
    /// Pairs opened in rounds 0 .. r. Any thread.
    std::uint32_t pairs_through(std::uint32_t r) const noexcept { return r < rounds_ ? through_[r] : pair_count(); }

    /// True when send number `n` (0, 1, ...) of `client` is a direct message, for a share
    /// `share` of them: a hash of (client, n), so runs repeat. Any thread.
    static bool is_direct(std::uint32_t client, std::uint64_t n, double share) noexcept {
        if (share <= 0) return false;
        const std::uint64_t h = mix64(mix64(0xd1a1d1a1ULL + client) ^ n);
        return static_cast<double>(h >> 11) * 0x1.0p-53 < share;
    }

    /// The key a conversation's texts are made with (message_text's sender id): the sender's id
    /// mixed with the conversation (group room index, or rooms() + pair), so the same client_seq
    /// in two conversations makes two different texts. Any thread.
    std::uint64_t text_key(std::uint64_t sender_id, std::uint32_t conversation) const noexcept {
        return sender_id ^ (mix64(0xc0417e4aULL + conversation) & 0xffffffff00000000ULL);
    }

private:
    std::uint32_t position(std::uint32_t layer, std::uint32_t client) const noexcept {
        return static_cast<std::uint32_t>((strides_[layer] * client + layer) % n_);
    }

    void colour_pairs() {
        round_.assign(pair_count(), 0);
        std::vector<std::uint64_t> used(n_, 0);  // per client: bit r set when in a pair of round r
        std::vector<std::uint32_t> per_round;
        for (std::uint32_t e = 0; e < pair_count(); ++e) {
            const auto [a, b] = pair(e);
            std::uint32_t r = 0;
            while (((used[a] | used[b]) >> r & 1) != 0) ++r;
            used[a] |= std::uint64_t{1} << r;
            used[b] |= std::uint64_t{1} << r;
            round_[e] = r;
            if (r >= per_round.size()) per_round.resize(r + 1, 0);
            ++per_round[r];
        }
        rounds_ = static_cast<std::uint32_t>(per_round.size());
        std::uint32_t sum = 0;
        for (std::uint32_t c : per_round) through_.push_back(sum += c);
    }

    std::uint32_t n_, k_, m_, d_;
    std::vector<std::uint64_t> strides_;
    std::vector<std::uint32_t> round_;
    std::vector<std::uint32_t> through_;
    std::uint32_t rounds_ = 0;
};

}  // namespace strix::chat
