#pragma once
// message_dispatcher: the strix frame header's 16-bit message type -> the handler registered for
// it. The dispatch step of the Apex Core report's frame pipeline (§10) and its Dispatcher_Lookup
// rows (§6).
//
//   table_: [ 0 ][ 1 ][ 2 ] ... [ max type registered ]     one handler pointer per type,
//             |         |                                   nullptr where none is registered
//             v         v
//          handler   handler
//
// The type space is 16 bits, so a table indexed by type costs at most 512 KiB and a lookup is a
// bounds check and one load; no hashing, no probing. Apex Core's dispatcher used a hash map
// (boost::unordered_flat_map); dispatch_bench.cpp measures the three side by side.
//
// Bench-only: strix's engine hands frames to one session_handler and leaves dispatch to the
// application (the chat server switches on the type).
#include <bench_msg_generated.h>

#include <cstdint>
#include <vector>

namespace strix_bench {

/// Receives the messages of the types it was registered for.
class message_handler {
public:
    virtual ~message_handler() = default;
    /// One verified message of `type`. The message is valid only during the call.
    virtual void on_message(std::uint16_t type, const strix::bench::bench_msg& m) = 0;
};

class message_dispatcher {
public:
    /// Registers h for `type` (replacing any earlier handler); h must outlive the dispatcher.
    void add(std::uint16_t type, message_handler& h) {
        if (type >= table_.size()) table_.resize(static_cast<std::size_t>(type) + 1, nullptr);
        table_[type] = &h;
    }

    /// The handler of `type`, or nullptr when none is registered.
    message_handler* find(std::uint16_t type) const noexcept { return type < table_.size() ? table_[type] : nullptr; }

private:
    std::vector<message_handler*> table_;
};

}  // namespace strix_bench
