// strix-link-local-lat: the echoing half of the latency test (libzmq's perf/local_lat), on
// strix::link. One shard: the REP socket answers each request from inside on_message.

#include "strix_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: strix-link-local-lat <bind-to> <message-size> <roundtrip-count> [--seq auto|on|off]\n"
                "\n"
                "The echoing half of the latency test: binds a REP socket at <bind-to> (tcp://HOST:PORT,\n"
                "ipc://PATH), receives <roundtrip-count> requests of <message-size> bytes from\n"
                "strix-link-remote-lat or zmq-remote-lat, checks each and sends it back. Prints nothing on\n"
                "success. Start it before the requester. One strix shard (thread). It answers libzmq's own\n"
                "remote_lat too: --seq (below) says when request numbers are checked.\n"
                "\n") +
    std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("strix-link-local-lat", usage);
    const lp::parsed_args a = t.parse(argc, argv, 3, false);
    const std::size_t size = t.message_size(a.positional[1]);
    const std::uint64_t count = t.message_count(a.positional[2], "roundtrip-count");

    try {
        strix::engine eng(lp::engine_for(1));
        lp::lat_echoer rep(t, eng.at(0), size, count, true, a.seq);
        rep.socket().bind(a.positional[0]);
        eng.start();
        eng.join();  // the echoer stops the engine after its last reply; the stop flushes it
    } catch (const std::exception& e) {
        t.fail(e.what());
    }
    return 0;
}
