// strix-link-remote-lat: the timing half of the latency test (libzmq's perf/remote_lat), on
// strix::link. One shard: the REQ socket sends the next request from inside on_message.

#include "strix_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: strix-link-remote-lat <connect-to> <message-size> <roundtrip-count>\n"
                "\n"
                "The timing half of the latency test: connects a REQ socket to <connect-to>, where\n"
                "strix-link-local-lat or zmq-local-lat listens, and makes <roundtrip-count> request/reply\n"
                "round trips of <message-size> bytes one after another, each timed with a steady clock.\n"
                "Prints libzmq's remote_lat lines, where 'average latency' is the whole run's time (first\n"
                "request to last reply) divided by 2 x roundtrip-count (half a round trip, as libzmq reports\n"
                "it), then the median (p50) and 99th percentile (p99, nearest rank) of the individual round\n"
                "trips. One strix shard (thread).\n"
                "\n") +
    std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("strix-link-remote-lat", usage);
    const lp::parsed_args a = t.parse(argc, argv, 3, false);
    const std::size_t size = t.message_size(a.positional[1]);
    const std::uint64_t count = t.message_count(a.positional[2], "roundtrip-count");

    try {
        strix::engine eng(lp::engine_for(1));
        lp::lat_requester req(t, eng.at(0), size, count);
        eng.start();
        lp::post_checked(t, eng, 0, [&] {
            req.socket().connect(a.positional[0]);
            req.start();
        });
        eng.join();  // the requester stops the engine after the last reply
        lp::print_lat(size, count, req.result());
    } catch (const std::exception& e) {
        t.fail(e.what());
    }
    return 0;
}
