module strix/bench/peers/go-tls-echo

// Standard library only (net, crypto/tls): no module to fetch, so there is no go.sum.
go 1.20
