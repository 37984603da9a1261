//! fastwebsockets-echo: the fastwebsockets peer of strix's WebSocket echo shoot-out (issue 18).
//!
//! Every text or binary message is echoed back as one message with the same opcode; pings are
//! answered and a close is returned by fastwebsockets itself (auto_pong, auto_close).
//!
//! Written the way fastwebsockets' README sets one up: hyper 1's HTTP/1.1 server takes the
//! request, `fastwebsockets::upgrade::upgrade` answers 101 and hands back a future that yields the
//! WebSocket once hyper has sent the response, and a `FragmentCollector` reads whole messages.
//! One task per connection on tokio's multi-thread runtime. Writes are as fastwebsockets makes
//! them: `write_frame` builds the header and writes header + payload with one write_all per
//! message (no batching across messages: the library has no API for it).
//!
//! With --broadcast it is not used: the broadcast test measures strix and gobwas-echo
//! (scripts/bench-echo-ws.sh says why).
//!
//! Options: --port P (default 7001), --threads N (worker threads, default: the CPUs this process
//! may run on). Prints "listening on 127.0.0.1:P" when it accepts. Stops on SIGTERM or SIGINT
//! with exit status 0.

use std::net::SocketAddr;
use std::process::ExitCode;

use fastwebsockets::upgrade::{upgrade, UpgradeFut};
use fastwebsockets::{FragmentCollector, OpCode, WebSocketError};
use http_body_util::Empty;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};

/// The largest message accepted, like strix-echo-server's default --max-frame.
const MAX_MESSAGE: usize = 64 * 1024;

struct Options {
    port: u16,
    threads: usize,
}

fn usage_error(why: &str) -> ! {
    eprintln!("fastwebsockets-echo: {why}");
    eprintln!("usage: fastwebsockets-echo [--port P] [--threads N]");
    std::process::exit(2);
}

fn parse_options() -> Options {
    let mut opts = Options {
        port: 7001,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .unwrap_or_else(|| usage_error(&format!("{name} needs a value")))
        };
        match name.as_str() {
            "--port" => {
                opts.port = value()
                    .parse()
                    .unwrap_or_else(|_| usage_error("--port must be a number from 0 to 65535"))
            }
            "--threads" => {
                opts.threads = value()
                    .parse()
                    .ok()
                    .filter(|&n| (1..=1024).contains(&n))
                    .unwrap_or_else(|| usage_error("--threads must be a number from 1 to 1024"))
            }
            "-h" | "--help" => {
                println!("fastwebsockets-echo: WebSocket echo server on fastwebsockets + hyper + tokio");
                println!("usage: fastwebsockets-echo [--port P] [--threads N]");
                println!("  --port P      TCP port on 127.0.0.1 (default 7001, 0 = any free port)");
                println!("  --threads N   runtime worker threads (default: the CPUs this process may use)");
                std::process::exit(0);
            }
            other => usage_error(&format!("unknown option {other}")),
        }
    }
    opts
}

/// Echoes whole messages until the client closes or breaks the protocol.
async fn echo(pending: UpgradeFut) -> Result<(), WebSocketError> {
    let mut ws = pending.await?;
    ws.set_max_message_size(MAX_MESSAGE);
    let mut ws = FragmentCollector::new(ws);
    loop {
        let msg = ws.read_frame().await?;
        match msg.opcode {
            OpCode::Binary | OpCode::Text => ws.write_frame(msg).await?,
            OpCode::Close => return Ok(()),
            // Pings were answered inside read_frame; pongs need nothing.
            _ => {}
        }
    }
}

/// hyper's service: any request that is not a valid WebSocket upgrade gets 400.
async fn on_request(mut req: Request<Incoming>) -> Result<Response<Empty<Bytes>>, hyper::http::Error> {
    match upgrade(&mut req) {
        Ok((response, pending)) => {
            tokio::spawn(async move {
                // A reset or a protocol error ends only that connection.
                let _ = echo(pending).await;
            });
            Ok(response)
        }
        Err(_) => Response::builder().status(StatusCode::BAD_REQUEST).body(Empty::new()),
    }
}

async fn accept_loop(listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                let _ = sock.set_nodelay(true);
                tokio::spawn(async move {
                    let conn = http1::Builder::new()
                        .serve_connection(TokioIo::new(sock), service_fn(on_request))
                        .with_upgrades();
                    let _ = conn.await;
                });
            }
            // EMFILE and friends: keep serving the connections we have.
            Err(e) => eprintln!("fastwebsockets-echo: accept: {e}"),
        }
    }
}

async fn run(port: u16) -> std::io::Result<()> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    println!("listening on {}", listener.local_addr()?);
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = accept_loop(listener) => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

fn main() -> ExitCode {
    let opts = parse_options();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opts.threads)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fastwebsockets-echo: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(opts.port)) {
        Ok(()) => {
            // Open connections' tasks are dropped with the runtime; don't wait for them.
            runtime.shutdown_background();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fastwebsockets-echo: 127.0.0.1:{}: {e}", opts.port);
            ExitCode::from(1)
        }
    }
}
