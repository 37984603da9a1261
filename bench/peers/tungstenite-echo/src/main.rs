//! tungstenite-echo: the tokio-tungstenite peer of strix's WebSocket echo shoot-out.
//!
//! Every text or binary message is echoed back as one message with the same opcode; tungstenite
//! answers pings and returns a close by itself.
//!
//! Written the way a tokio-tungstenite user writes one: `accept_async` does the HTTP/1.1 upgrade
//! on the accepted TcpStream, then the `WebSocketStream` is used as a futures Stream + Sink. One
//! task per connection on tokio's multi-thread runtime. Writes are batched the way
//! `StreamExt::forward` batches them (the idiom of tokio-tungstenite's own echo example): every
//! message that is already readable is fed into the sink, and the sink is flushed once when the
//! stream would wait, so a read that brought 128 messages costs one write.
//!
//! Options: --port P (default 7001), --threads N (worker threads, default: the CPUs this process
//! may run on). Prints "listening on 127.0.0.1:P" when it accepts. Stops on SIGTERM or SIGINT
//! with exit status 0.

use std::net::SocketAddr;
use std::process::ExitCode;

use futures_util::{FutureExt, SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Error;

/// The largest message accepted, like strix-echo-server's default --max-frame.
const MAX_MESSAGE: usize = 64 * 1024;

struct Options {
    port: u16,
    threads: usize,
}

fn usage_error(why: &str) -> ! {
    eprintln!("tungstenite-echo: {why}");
    eprintln!("usage: tungstenite-echo [--port P] [--threads N]");
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
                println!("tungstenite-echo: WebSocket echo server on tokio-tungstenite");
                println!("usage: tungstenite-echo [--port P] [--threads N]");
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
async fn echo(sock: TcpStream) -> Result<(), Error> {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    let mut ws = tokio_tungstenite::accept_async_with_config(sock, Some(config)).await?;
    loop {
        // Wait for one message, then take every one that is ready without waiting.
        let mut next = ws.next().await;
        loop {
            match next {
                None => return Ok(()),
                Some(Err(e)) => return Err(e),
                Some(Ok(msg)) => {
                    if msg.is_binary() || msg.is_text() {
                        ws.feed(msg).await?;
                    }
                }
            }
            match ws.next().now_or_never() {
                Some(more) => next = more,
                None => break,
            }
        }
        // One flush for the batch (it also sends any pong tungstenite queued).
        ws.flush().await?;
    }
}

async fn accept_loop(listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                let _ = sock.set_nodelay(true);
                tokio::spawn(async move {
                    // A reset or a protocol error ends only that connection.
                    let _ = echo(sock).await;
                });
            }
            // EMFILE and friends: keep serving the connections we have.
            Err(e) => eprintln!("tungstenite-echo: accept: {e}"),
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
            eprintln!("tungstenite-echo: cannot start the runtime: {e}");
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
            eprintln!("tungstenite-echo: 127.0.0.1:{}: {e}", opts.port);
            ExitCode::from(1)
        }
    }
}
