//! tokio-echo: the tokio peer of strix's echo shoot-out (the Echo server shoot-out's method).
//!
//! Wire format: a 4-byte little-endian total length (the 4 header bytes included), then the body.
//! Every message is echoed back unchanged as a message of its own.
//!
//! Written the way a tokio user writes an echo server: the multi-thread runtime, one task per
//! connection, `read_buf` into a `BytesMut`, and `write_all` for the replies.
//!
//! Write coalescing, chosen deliberately: after each read the task cuts every complete frame out
//! of the input and appends it, frame by frame, to one output buffer (the "one send per message"
//! of the Echo server shoot-out), then hands that buffer to a single `write_all`. So a read that
//! brought 128 frames costs one write, not 128. This is the common tokio idiom (what `BufWriter` +
//! a flush when the batch is done, or `Framed::feed` + `flush` amount to), with no extra trick on
//! top: no `try_read` loop to gather more input before writing, no vectored writes, no busy
//! polling. Frames that arrive split across reads stay in the input buffer until they are complete.
//!
//! Options: --port P (default 7001), --threads N (worker threads, default: the CPUs this
//! process may run on). Prints "listening on 127.0.0.1:P" when it accepts. Stops on SIGTERM or
//! SIGINT with exit status 0.

use std::io;
use std::net::SocketAddr;
use std::process::ExitCode;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};

const HEADER: usize = 4;
/// The largest message accepted, like strix-echo-server's default --max-frame.
const MAX_FRAME: usize = 64 * 1024;
const READ_CHUNK: usize = 64 * 1024;

struct Options {
    port: u16,
    threads: usize,
}

fn usage_error(why: &str) -> ! {
    eprintln!("tokio-echo: {why}");
    eprintln!("usage: tokio-echo [--port P] [--threads N]");
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
                println!("tokio-echo: the shoot-out's echo server on tokio's multi-thread runtime");
                println!("usage: tokio-echo [--port P] [--threads N]");
                println!("  --port P      TCP port on 127.0.0.1 (default 7001, 0 = any free port)");
                println!("  --threads N   runtime worker threads (default: the CPUs this process may use)");
                std::process::exit(0);
            }
            other => usage_error(&format!("unknown option {other}")),
        }
    }
    opts
}

/// Serves one connection until the peer closes it or sends a malformed length.
async fn serve(mut sock: TcpStream) -> io::Result<()> {
    sock.set_nodelay(true)?;
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut output: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    loop {
        input.reserve(READ_CHUNK);
        if sock.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
        // Cut every complete frame; a partial one stays in `input` for the next read.
        while input.len() >= HEADER {
            let len = u32::from_le_bytes([input[0], input[1], input[2], input[3]]) as usize;
            if !(HEADER..=MAX_FRAME).contains(&len) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("frame length {len} outside [{HEADER}, {MAX_FRAME}]"),
                ));
            }
            if input.len() < len {
                break;
            }
            // The echo of this one message.
            output.extend_from_slice(&input[..len]);
            input.advance(len);
        }
        if !output.is_empty() {
            sock.write_all(&output).await?;
            output.clear();
        }
    }
}

async fn accept_loop(listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                tokio::spawn(async move {
                    // A reset or a bad frame ends only that connection.
                    let _ = serve(sock).await;
                });
            }
            // EMFILE and friends: keep serving the connections we have.
            Err(e) => eprintln!("tokio-echo: accept: {e}"),
        }
    }
}

async fn run(port: u16) -> io::Result<()> {
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opts.threads)
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tokio-echo: cannot start the runtime: {e}");
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
            eprintln!("tokio-echo: 127.0.0.1:{}: {e}", opts.port);
            ExitCode::from(1)
        }
    }
}
