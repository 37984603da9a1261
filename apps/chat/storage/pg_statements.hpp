#pragma once
// The PostgreSQL back end's SQL (pg_chat_store.cpp): its named prepared statements, prepared on
// every connection it opens, and the multi-row INSERT of a batch of chat logs.

#include <libpq-fe.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace strix::chat::storage_detail {

// Type oids from pg_type.h (stable since forever); naming them lets the server skip inference.
inline constexpr Oid int8_oid = 20;
inline constexpr Oid text_oid = 25;
inline constexpr Oid bytea_oid = 17;

struct prepared {
    const char* name;
    const char* sql;
    std::vector<Oid> types;
};

/// Every statement pg_chat_store prepares (PQprepare), in order.
std::span<const prepared> pg_statements() noexcept;

/// "INSERT INTO chat_logs ... VALUES ($1..$8), ..." for rows rows, skipping what is stored.
std::string insert_logs_sql(std::size_t rows);

}  // namespace strix::chat::storage_detail
