// zmq-inproc-lat: libzmq's perf/inproc_lat, on libzmq: a REP thread echoes, the main thread's
// REQ times each round trip, one process and one context, over inproc://.

#include <thread>

#include "zmq_perf.hpp"

namespace lp = strix::link_perf;

static const std::string usage =
    std::string("usage: zmq-inproc-lat <message-size> <roundtrip-count>\n"
                "\n"
                "The latency test inside one process: the main thread binds REQ at inproc://strix-link-lat,\n"
                "a second thread connects REP and echoes; <roundtrip-count> round trips of <message-size>\n"
                "bytes, each timed alone. Prints zmq-remote-lat's lines ('average latency' is half a round\n"
                "trip, as libzmq reports it; p50 and p99 are whole round trips, nearest rank).\n"
                "\n") +
    std::string(lp::contract_help);

int main(int argc, char** argv) {
    const lp::tool t("zmq-inproc-lat", usage);
    const lp::parsed_args a = t.parse(argc, argv, 2, false);
    const std::size_t size = t.message_size(a.positional[0]);
    const std::uint64_t count = t.message_count(a.positional[1], "roundtrip-count");
    const std::string endpoint = "inproc://strix-link-lat";

    lp::zcontext ctx(t);
    lp::roundtrips r;
    {
        lp::zsocket req(t, ctx, ZMQ_REQ);
        req.bind(endpoint);
        std::thread echoer([&] {
            lp::zsocket rep(t, ctx, ZMQ_REP);
            rep.connect(endpoint);
            lp::echo_all(t, rep.get(), size, count, a.seq);
        });
        r = lp::request_all(t, req.get(), size, count);
        echoer.join();
    }
    lp::print_lat(size, count, std::move(r));
    return 0;
}
