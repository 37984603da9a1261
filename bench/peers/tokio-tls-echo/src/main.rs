//! tokio-tls-echo: the tokio-rustls peer of strix's TLS echo shoot-out.
//!
//! Wire format: a 4-byte little-endian total length (the 4 header bytes included), then the body.
//! Every message is echoed back unchanged as a message of its own.
//!
//! tokio-echo with tokio-rustls between the socket and the echo loop, written the way a tokio user
//! writes a TLS server: the multi-thread runtime (--threads worker threads, as tokio-echo), one
//! task per connection that runs `TlsAcceptor::accept` and then the same loop as tokio-echo:
//! `read_buf` into a `BytesMut`, every complete frame of the read appended to one output buffer,
//! one `write_all` of that buffer, then `flush` (tokio-rustls may hold sealed records that the
//! socket did not take; the flush pushes them out before the task waits for more input).
//!
//! TLS: rustls 0.23 with its default crypto provider (aws-lc-rs) and default cipher suites and
//! groups, TLS 1.2 and 1.3, session resumption by stateless tickets (rustls issues none unless a
//! ticketer is set, so one is) plus rustls's default in-memory session cache for TLS 1.2 session
//! ids; ALPN when --alpn is given.
//!
//! Options: --port P (default 7001), --threads N (worker threads, default: the CPUs this process
//! may run on), --cert FILE and --key FILE (PEM, required), --alpn NAME. Prints "listening on
//! 127.0.0.1:P" when it accepts. Stops on SIGTERM or SIGINT with exit status 0.

use std::io;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};
use tokio_rustls::TlsAcceptor;

const HEADER: usize = 4;
/// The largest message accepted, like strix-echo-server's default --max-frame.
const MAX_FRAME: usize = 64 * 1024;
const READ_CHUNK: usize = 64 * 1024;
/// A client that opens a connection and never finishes its handshake is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

struct Options {
    port: u16,
    threads: usize,
    cert: String,
    key: String,
    alpn: Option<String>,
}

const USAGE: &str =
    "usage: tokio-tls-echo --cert FILE --key FILE [--port P] [--threads N] [--alpn NAME]";

fn usage_error(why: &str) -> ! {
    eprintln!("tokio-tls-echo: {why}");
    eprintln!("{USAGE}");
    std::process::exit(2);
}

fn parse_options() -> Options {
    let mut opts = Options {
        port: 7001,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cert: String::new(),
        key: String::new(),
        alpn: None,
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
            "--cert" => opts.cert = value(),
            "--key" => opts.key = value(),
            "--alpn" => opts.alpn = Some(value()),
            "-h" | "--help" => {
                println!("tokio-tls-echo: the echo shoot-out's server on tokio + tokio-rustls");
                println!("{USAGE}");
                println!("  --cert FILE   server certificate chain, PEM");
                println!("  --key FILE    server private key, PEM (PKCS#8, PKCS#1 or SEC1)");
                println!("  --port P      TCP port on 127.0.0.1 (default 7001, 0 = any free port)");
                println!("  --threads N   runtime worker threads (default: the CPUs this process may use)");
                println!("  --alpn NAME   ALPN protocol to accept (default: no ALPN)");
                std::process::exit(0);
            }
            other => usage_error(&format!("unknown option {other}")),
        }
    }
    if opts.cert.is_empty() || opts.key.is_empty() {
        usage_error("--cert FILE and --key FILE are required");
    }
    opts
}

/// The server's TLS configuration, or one sentence naming the file and what is wrong with it.
fn tls_config(opts: &Options) -> Result<rustls::ServerConfig, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&opts.cert)
        .and_then(|it| it.collect())
        .map_err(|e| format!("--cert {}: {e}", opts.cert))?;
    if certs.is_empty() {
        return Err(format!("--cert {}: no CERTIFICATE in the file", opts.cert));
    }
    let key =
        PrivateKeyDer::from_pem_file(&opts.key).map_err(|e| format!("--key {}: {e}", opts.key))?;
    let mut config = rustls::ServerConfig::builder_with_protocol_versions(&[
        &rustls::version::TLS13,
        &rustls::version::TLS12,
    ])
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| format!("--cert {} / --key {}: {e}", opts.cert, opts.key))?;
    config.ticketer =
        rustls::crypto::aws_lc_rs::Ticketer::new().map_err(|e| format!("session tickets: {e}"))?;
    if let Some(alpn) = &opts.alpn {
        config.alpn_protocols = vec![alpn.as_bytes().to_vec()];
    }
    Ok(config)
}

/// Serves one connection until the peer closes it or sends a malformed length.
async fn serve(sock: TcpStream, acceptor: TlsAcceptor) -> io::Result<()> {
    sock.set_nodelay(true)?;
    let mut tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(sock))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "handshake timed out"))??;
    let mut input = BytesMut::with_capacity(READ_CHUNK);
    let mut output: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    loop {
        input.reserve(READ_CHUNK);
        if tls.read_buf(&mut input).await? == 0 {
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
            tls.write_all(&output).await?;
            tls.flush().await?;
            output.clear();
        }
    }
}

async fn accept_loop(listener: TcpListener, acceptor: TlsAcceptor) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A failed handshake, a reset or a bad frame ends only that connection.
                    let _ = serve(sock, acceptor).await;
                });
            }
            // EMFILE and friends: keep serving the connections we have.
            Err(e) => eprintln!("tokio-tls-echo: accept: {e}"),
        }
    }
}

async fn run(port: u16, acceptor: TlsAcceptor) -> io::Result<()> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    println!("listening on {}", listener.local_addr()?);
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = accept_loop(listener, acceptor) => {}
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

fn main() -> ExitCode {
    let opts = parse_options();
    let acceptor = match tls_config(&opts) {
        Ok(config) => TlsAcceptor::from(Arc::new(config)),
        Err(e) => {
            eprintln!("tokio-tls-echo: {e}");
            return ExitCode::from(1);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(opts.threads)
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tokio-tls-echo: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(opts.port, acceptor)) {
        Ok(()) => {
            // Open connections' tasks are dropped with the runtime; don't wait for them.
            runtime.shutdown_background();
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tokio-tls-echo: 127.0.0.1:{}: {e}", opts.port);
            ExitCode::from(1)
        }
    }
}
