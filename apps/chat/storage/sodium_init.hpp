#pragma once
// libsodium must be initialised (sodium_init) before any other call; every user in the storage
// library goes through this.

namespace strix::chat::storage_detail {

/// Runs sodium_init() once per process (aborts if it fails: without a working CSPRNG no salt or
/// token would be safe). Any thread.
void ensure_sodium();

}  // namespace strix::chat::storage_detail
