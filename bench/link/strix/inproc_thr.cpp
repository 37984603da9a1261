// strix-link-inproc-thr: libzmq's perf/inproc_thr on strix::link: two shards (threads) of one
// engine, the receiver on shard 0 and the sender on shard 1, over inproc:// (the mesh between
// the shards carries one batch of message references per loop turn; the payload is not copied).

#include "strix_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: strix-link-inproc-thr <message-size> <message-count> [--pattern pushpull|pubsub] "
                "[--hwm N]\n"
                "\n"
                "The throughput test inside one process: shard 0 binds PULL (pubsub: SUB) at\n"
                "inproc://strix-link-thr, shard 1 connects PUSH (pubsub: PUB) and sends <message-count>\n"
                "messages of <message-size> bytes. Prints strix-link-local-thr's lines. The high-water\n"
                "marks of the two ends add up over inproc, as in libzmq.\n"
                "\n") +
    std::string(lp::thr_options_help) + "\n" + std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("strix-link-inproc-thr", usage);
    const lp::parsed_args a = t.parse(argc, argv, 2, true);
    const std::size_t size = t.message_size(a.positional[0]);
    const std::uint64_t count = t.message_count(a.positional[1], "message-count");
    const std::string endpoint = "inproc://strix-link-thr";

    try {
        strix::engine eng(lp::engine_for(2));
        lp::thr_receiver r(t, eng.at(0), a, endpoint, size, count);
        lp::thr_sender s(t, eng.at(1), a, size, count, false, true);
        eng.start();
    // Connect on the sender's shard: its pipe's far half then travels the same mesh channel as
    // its messages, ahead of them.
        lp::post_checked(t, eng, 1, [&] { s.start(endpoint); });
        eng.join();  // the receiver stops the engine after its last message
        r.check_complete();
        lp::print_thr(size, count, r.seconds());
    } catch (const std::exception& e) {
        t.fail(e.what());
    }
    return 0;
}
