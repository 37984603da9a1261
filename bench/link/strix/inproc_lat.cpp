// strix-link-inproc-lat: libzmq's perf/inproc_lat on strix::link: REQ on shard 0 (bound) and REP
// on shard 1 (connected) of one engine, over inproc://; each round trip crosses the mesh twice.

#include "strix_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: strix-link-inproc-lat <message-size> <roundtrip-count>\n"
                "\n"
                "The latency test inside one process: shard 0 binds REQ at inproc://strix-link-lat, shard 1\n"
                "connects REP and echoes; <roundtrip-count> round trips of <message-size> bytes, each timed\n"
                "alone. Prints strix-link-remote-lat's lines ('average latency' is half a round trip, as\n"
                "libzmq reports it; p50 and p99 are whole round trips, nearest rank).\n"
                "\n") +
    std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("strix-link-inproc-lat", usage);
    const lp::parsed_args a = t.parse(argc, argv, 2, false);
    const std::size_t size = t.message_size(a.positional[0]);
    const std::uint64_t count = t.message_count(a.positional[1], "roundtrip-count");
    const std::string endpoint = "inproc://strix-link-lat";

    try {
        strix::engine eng(lp::engine_for(2));
        lp::lat_requester req(t, eng.at(0), size, count);
        lp::lat_echoer rep(t, eng.at(1), size, count, false);
        req.socket().bind(endpoint);
        eng.start();
        lp::post_checked(t, eng, 1, [&] { rep.socket().connect(endpoint); });
        lp::post_checked(t, eng, 0, [&] { req.start(); });
        eng.join();  // the requester stops the engine after the last reply
        lp::print_lat(size, count, req.result());
    } catch (const std::exception& e) {
        t.fail(e.what());
    }
    return 0;
}
