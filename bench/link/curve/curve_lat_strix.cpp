// strix-link-curve-lat, strix half: REP (the CURVE server) on shard 0 and REQ (the client) on
// shard 1 of one engine, over tcp loopback; the requester and echoer of the plain latency tools
// (../strix/strix_perf.hpp) with CURVE set, so only the mechanism differs from strix-link-*-lat.

#include "../strix/strix_perf.hpp"
#include "curve_perf.hpp"

namespace strix::link_perf::curve {

roundtrips strix_roundtrips(const tool& t, const keys& k, std::size_t size, std::uint64_t count) {
    try {
        engine eng(engine_for(2));
        // The requester made every request, so the echoer checks every stamp (--seq on).
        lat_echoer rep(t, eng.at(0), size, count, false, seq_mode::on, server_security(k));
        lat_requester req(t, eng.at(1), size, count, client_security(k));
        const std::string endpoint = rep.socket().bind(bind_endpoint);
        eng.start();
        post_checked(t, eng, 1, [&req, endpoint] {
            req.socket().connect(endpoint);
            req.start();
        });
        eng.join();  // the requester stops the engine after the last reply
        return req.result();
    } catch (const std::exception& e) {
        t.fail(e.what());
    }
}

}  // namespace strix::link_perf::curve
