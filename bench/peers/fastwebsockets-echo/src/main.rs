//! fastwebsockets-echo: the fastwebsockets peer of strix's WebSocket echo shoot-out.
//!
//! Every text or binary message is echoed back as one message with the same opcode; pings are
//! answered and a close is returned by fastwebsockets itself (auto_pong, auto_close).
//!
//! Written the way fastwebsockets' README sets one up: hyper 1's HTTP/1.1 server takes the
//! request, `fastwebsockets::upgrade::upgrade` answers 101 and hands back a future that yields the
//! WebSocket once hyper has sent the response, and a `FragmentCollector` reads whole messages.
//! One task per connection on tokio's multi-thread runtime.
//!
//! Write batching, chosen deliberately so that this peer batches as the others do (tokio-echo,
//! gnet-echo, tungstenite-echo, gobwas-echo: one write per read's worth of echoes).
//! fastwebsockets' `write_frame` does one `write_all` of header + payload per message and has no
//! batching API of its own, but it writes through any AsyncWrite and offers `flush` for buffered
//! streams; so the upgraded connection is wrapped in `Gathered`, which keeps written frames in a
//! buffer and sends them when a read would wait. With `--per-frame-writes` it is left out: one
//! write(2) per echo, as fastwebsockets' own examples run (much slower at depth 16 and 128).
//!
//! Options: --port P (default 7001), --threads N (worker threads, default: the CPUs this process
//! may run on), --per-frame-writes. Prints "listening on 127.0.0.1:P" when it accepts. Stops on SIGTERM or SIGINT
//! with exit status 0.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{ready, Context, Poll};

use fastwebsockets::upgrade::{upgrade, UpgradeFut};
use fastwebsockets::{FragmentCollector, OpCode, Role, WebSocket, WebSocketError};
use http_body_util::Empty;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};

/// The largest message accepted, like strix-echo-server's default --max-frame.
const MAX_MESSAGE: usize = 64 * 1024;
/// Gathered output past this is sent before more is taken.
const OUT_LIMIT: usize = 64 * 1024;

/// --per-frame-writes, read by every connection's task.
static PER_FRAME_WRITES: AtomicBool = AtomicBool::new(false);

struct Options {
    port: u16,
    threads: usize,
}

/// A stream whose writes are gathered: bytes written go to `out` and reach the socket when a read
/// finds nothing to read (or on flush, or when `out` passes OUT_LIMIT), so the echoes of all the
/// messages one read brought leave in one write.
struct Gathered<S> {
    io: S,
    out: Vec<u8>,
    sent: usize,
}

impl<S: AsyncWrite + Unpin> Gathered<S> {
    fn new(io: S) -> Self {
        Gathered {
            io,
            out: Vec::with_capacity(16 * 1024),
            sent: 0,
        }
    }

    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.out.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.out[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.out.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Gathered<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            // Nothing to read now: the batch is complete, send it while we wait.
            Poll::Pending => match this.poll_send(cx) {
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                _ => Poll::Pending,
            },
            ready => ready,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Gathered<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.out.len() >= OUT_LIMIT {
            ready!(self.poll_send(cx))?;
        }
        self.out.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_send(cx))?;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_send(cx))?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
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
            "--per-frame-writes" => PER_FRAME_WRITES.store(true, Ordering::Relaxed),
            "-h" | "--help" => {
                println!(
                    "fastwebsockets-echo: WebSocket echo server on fastwebsockets + hyper + tokio"
                );
                println!("usage: fastwebsockets-echo [--port P] [--threads N]");
                println!("  --port P      TCP port on 127.0.0.1 (default 7001, 0 = any free port)");
                println!("  --threads N   runtime worker threads (default: the CPUs this process may use)");
                println!(
                    "  --per-frame-writes  one write per echo, as fastwebsockets writes unbuffered"
                );
                std::process::exit(0);
            }
            other => usage_error(&format!("unknown option {other}")),
        }
    }
    opts
}

/// Echoes whole messages until the client closes or breaks the protocol.
async fn echo_on<S>(mut ws: WebSocket<S>) -> Result<S, WebSocketError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    ws.set_max_message_size(MAX_MESSAGE);
    // Every frame through write_all (into Gathered's buffer), none through writev around it.
    ws.set_writev(false);
    let mut ws = FragmentCollector::new(ws);
    loop {
        let msg = ws.read_frame().await?;
        match msg.opcode {
            OpCode::Binary | OpCode::Text => ws.write_frame(msg).await?,
            // read_frame has written the close reply.
            OpCode::Close => return Ok(ws.into_inner()),
            // Pings were answered inside read_frame; pongs need nothing.
            _ => {}
        }
    }
}

async fn echo(pending: UpgradeFut) -> Result<(), WebSocketError> {
    let ws = pending.await?;
    if PER_FRAME_WRITES.load(Ordering::Relaxed) {
        echo_on(ws).await?;
    } else {
        let gathered = Gathered::new(ws.into_inner());
        let mut rest = echo_on(WebSocket::after_handshake(gathered, Role::Server)).await?;
        // The close reply is still in the buffer.
        rest.flush().await?;
    }
    Ok(())
}

/// hyper's service: any request that is not a valid WebSocket upgrade gets 400.
async fn on_request(
    mut req: Request<Incoming>,
) -> Result<Response<Empty<Bytes>>, hyper::http::Error> {
    match upgrade(&mut req) {
        Ok((response, pending)) => {
            tokio::spawn(async move {
                // A reset or a protocol error ends only that connection.
                let _ = echo(pending).await;
            });
            Ok(response)
        }
        Err(_) => Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .body(Empty::new()),
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
