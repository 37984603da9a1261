// strix-link-local-thr: the receiving half of the throughput test (libzmq's perf/local_thr), on
// strix::link. One shard: the PULL (or SUB) socket and the code that checks each message share
// the shard's thread, as in a single-threaded server.

#include "strix_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: strix-link-local-thr <bind-to> <message-size> <message-count> "
                "[--pattern pushpull|pubsub] [--hwm N]\n"
                "\n"
                "The receiving half of the throughput test: binds a PULL socket (pubsub: a SUB subscribed\n"
                "to everything) at <bind-to> (tcp://HOST:PORT, ipc://PATH), receives <message-count>\n"
                "messages of <message-size> bytes from strix-link-remote-thr or zmq-remote-thr, and prints\n"
                "libzmq's local_thr lines. The clock starts at the first message; Mb/s is megabits\n"
                "(msg/s * size * 8 / 10^6). Start it before the sender. One strix shard (thread).\n"
                "\n") +
    std::string(lp::thr_options_help) + "\n" + std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("strix-link-local-thr", usage);
    const lp::parsed_args a = t.parse(argc, argv, 3, true);
    const std::size_t size = t.message_size(a.positional[1]);
    const std::uint64_t count = t.message_count(a.positional[2], "message-count");

    try {
        strix::engine eng(lp::engine_for(1));
        lp::thr_receiver r(t, eng.at(0), a, a.positional[0], size, count);
        eng.start();
        eng.join();  // the receiver stops the engine after its last message
        r.check_complete();
        lp::print_thr(size, count, r.seconds());
    } catch (const std::exception& e) {
        t.fail(e.what());
    }
    return 0;
}
