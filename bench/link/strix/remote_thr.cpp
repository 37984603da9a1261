// strix-link-remote-thr: the sending half of the throughput test (libzmq's perf/remote_thr), on
// strix::link. One shard: the PUSH (or PUB) socket sends until would_block, the loop writes what
// was queued in one gather write, on_writable resumes the sender.

#include "strix_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: strix-link-remote-thr <connect-to> <message-size> <message-count> "
                "[--pattern pushpull|pubsub] [--hwm N]\n"
                "\n"
                "The sending half of the throughput test: connects a PUSH socket (pubsub: a PUB, which\n"
                "first waits for the subscriber's subscription) to <connect-to>, where strix-link-local-thr\n"
                "or zmq-local-thr listens, sends <message-count> messages of <message-size> bytes and exits\n"
                "once they are delivered (the engine's graceful stop flushes them, 30 s at most). Prints\n"
                "nothing on success. One strix shard (thread).\n"
                "\n") +
    std::string(lp::thr_options_help) + "\n" + std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("strix-link-remote-thr", usage);
    const lp::parsed_args a = t.parse(argc, argv, 3, true);
    const std::size_t size = t.message_size(a.positional[1]);
    const std::uint64_t count = t.message_count(a.positional[2], "message-count");

    try {
        strix::engine eng(lp::engine_for(1));
        lp::thr_sender s(t, eng.at(0), a, size, count, true, false);
        eng.start();
        lp::post_checked(t, eng, 0, [&] { s.start(a.positional[0]); });
        eng.join();  // the sender stops the engine after its last message; the stop flushes it
    } catch (const std::exception& e) {
        t.fail(e.what());
    }
    return 0;
}
