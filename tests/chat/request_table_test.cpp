// The request table (apps/chat/server/service/request_table.hpp) is the only place a client
// request type is known: every request type of the schema has a row and a section in
// docs/protocol.md, the table holds nothing else, and a running server dispatches and counts by
// it (strix_requests_total{type="..."}).
#include "chat_fixture.hpp"
#include "metrics_scrape.hpp"

#include "apps/chat/server/service/chat_counters.hpp"
#include "apps/chat/server/service/request_table.hpp"

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

using namespace strix;
using namespace strix::chat;
using namespace strix::test;
using proto::error_code;
using proto::msg_type;

namespace {

std::string name_of(msg_type t) { return proto::EnumNamemsg_type(t); }

// The client requests of the schema: the msg_type values named *_req (chat.fbs: requests are
// odd, their replies the next even number, server pushes from 100).
std::vector<msg_type> schema_requests() {
    std::vector<msg_type> out;
    for (msg_type t : proto::EnumValuesmsg_type())
        if (name_of(t).ends_with("_req")) out.push_back(t);
    return out;
}

// The headings of docs/protocol.md's sections ("## ..." and deeper).
std::vector<std::string> protocol_headings() {
    auto path = std::filesystem::path(STRIX_SOURCE_DIR) / "docs" / "protocol.md";
    std::istringstream in(read_file(path.string()));
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);)
        if (line.starts_with("## ") || line.starts_with("### ") || line.starts_with("#### ")) out.push_back(line);
    return out;
}

TEST(request_table, every_request_type_of_the_schema_has_a_row) {
    const auto requests = schema_requests();
    ASSERT_GE(requests.size(), 9u) << "the schema's requests were not found";
    for (msg_type t : requests) {
        const request_row* row = request_table::find(t);
        EXPECT_NE(row, nullptr) << name_of(t) << " (msg_type " << static_cast<unsigned>(t)
                                << ") has no row in apps/chat/server/service/request_table.cpp";
        if (row) {
            EXPECT_EQ(row->type, t);
        }
    }
    // And nothing else: every row is one of them.
    EXPECT_EQ(request_table::size, requests.size());
    for (const request_row& row : request_table::rows())
        EXPECT_TRUE(name_of(row.type).ends_with("_req")) << "row for msg_type " << static_cast<unsigned>(row.type)
                                                         << " (" << name_of(row.type) << ") is no client request";
}

TEST(request_table, every_request_type_of_the_schema_has_a_section_in_protocol_md) {
    const auto headings = protocol_headings();
    ASSERT_GT(headings.size(), 10u) << "cannot read docs/protocol.md";
    for (msg_type t : schema_requests()) {
        const std::string quoted = "`" + name_of(t) + "`";
        bool found = false;
        for (const auto& h : headings) found = found || h.find(quoted) != std::string::npos;
        EXPECT_TRUE(found) << name_of(t) << " has no section in docs/protocol.md (a heading naming " << quoted << ")";
    }
}

TEST(request_table, finds_only_client_requests_and_labels_each_row_with_its_type) {
    for (msg_type t : proto::EnumValuesmsg_type()) {
        if (!name_of(t).ends_with("_req")) {
            EXPECT_EQ(request_table::find(t), nullptr) << name_of(t);
        }
    }
    for (unsigned t : {77u, 127u, 128u, 255u, 256u, 1000u, 65535u})
        EXPECT_EQ(request_table::find(static_cast<msg_type>(t)), nullptr) << t;
    for (std::size_t i = 0; i < request_table::size; ++i) {
        const request_row& row = request_table::rows()[i];
        EXPECT_EQ(request_table::find(row.type), &row);
        EXPECT_EQ(request_table::index_of(row), i);
        EXPECT_EQ(request_table::label(i), "type=\"" + name_of(row.type) + "\"");
        EXPECT_NE(row.handle, nullptr) << name_of(row.type);
    }
    // Before login a session may log in and ping, nothing else (docs/protocol.md, not_logged_in).
    for (const request_row& row : request_table::rows()) {
        const bool anyone = row.type == msg_type::login_req || row.type == msg_type::ping_req;
        EXPECT_EQ(row.who, anyone ? access::anyone : access::logged_in) << name_of(row.type);
    }
}

TEST(request_table, each_row_has_its_own_declared_counter) {
    chat_counters c;
    std::vector<const metric_group::entry*> series;
    for (const auto& e : c.entries())
        if (e.info.name == "strix_requests_total") series.push_back(&e);
    ASSERT_EQ(series.size(), request_table::size);
    for (std::size_t i = 0; i < request_table::size; ++i) {
        EXPECT_EQ(series[i]->info.labels, request_table::label(i));
        EXPECT_EQ(series[i]->info.kind, metric_kind::counter);
        // The declared cell is the member itself (not a copy made while building the array).
        bump(c.requests[i], i + 1);
        EXPECT_EQ(c.counter_at(*series[i]).value(), i + 1);
    }
}

class request_counts : public chat_test {};

TEST_P(request_counts, a_running_server_dispatches_and_counts_by_the_table) {
    const std::uint16_t mport = free_port();
    auto srv = start(2, {"--metrics-port", std::to_string(mport)});
    chat_client a(srv->port());
    for (int i = 0; i < 3; ++i) {
        a.send_ping(i);
        a.expect(msg_type::pong_res);
    }
    a.send_create("early");
    a.expect_error(msg_type::create_room_req, error_code::not_logged_in);
    a.send_raw(chat_client::raw_frame(77, {}));
    a.expect_error(static_cast<msg_type>(77), error_code::bad_request);
    a.login("ann");
    a.create("r");
    a.send_chat("one");
    a.expect_chat();
    std::string text;
    auto count = [&](const char* type) {
        return metric_value(text, std::string("strix_requests_total{type=\"") + type + "\"}");
    };
    EXPECT_TRUE(eventually([&] {
        text = http_get(mport, "/metrics");
        return count("chat_req") == 1;
    })) << text;
    EXPECT_EQ(count("ping_req"), 3);
    EXPECT_EQ(count("create_room_req"), 2) << "the refused one counts too";
    EXPECT_EQ(count("login_req"), 1);
    EXPECT_EQ(count("join_room_req"), 0);
    EXPECT_EQ(count("resume_req"), 0);
    EXPECT_EQ(metric_value(text, "strix_bad_requests_total"), 1) << "type 77 is no request: not counted by type";
    a.expect_nothing();
    stop_cleanly(*srv);
}

STRIX_CHAT_BACKENDS(request_counts);

}  // namespace
