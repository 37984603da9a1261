// strix-link-curve-lat, libzmq half: REP (the CURVE server) echoes on a thread of its own with
// its own context, REQ (the client) times on the main thread with another, each context with one
// I/O thread, as libzmq's local_lat and remote_lat run in two processes; the loops are the plain
// latency tools' (../zmq/zmq_perf.hpp) with CURVE set.

#include <thread>

#include "../zmq/zmq_perf.hpp"
#include "curve_perf.hpp"

namespace strix::link_perf::curve {

roundtrips zmq_roundtrips(const tool& t, const keys& k, std::size_t size, std::uint64_t count) {
    zcontext rctx(t);
    zcontext qctx(t);
    roundtrips r;
    {
        zsocket rep(t, rctx, ZMQ_REP);
        zmq_curve_server(t, rep.get(), k);
        rep.bind(bind_endpoint);
        const std::string endpoint = rep.last_endpoint();
        // The REP moves to the echoing thread here (thread start and join order its use).
        std::thread echoer([&] { echo_all(t, rep.get(), size, count, seq_mode::on); });
        {
            zsocket req(t, qctx, ZMQ_REQ);
            zmq_curve_client(t, req.get(), k);
            req.connect(endpoint);
            r = request_all(t, req.get(), size, count);
        }
        echoer.join();
    }
    return r;
}

}  // namespace strix::link_perf::curve
