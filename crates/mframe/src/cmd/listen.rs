//! `mframe listen ADDR [--with-data | --pretty] [server options]`: accepts
//! TCP connections (or TLS ones) and prints their frames as they arrive,
//! in `dump`'s formats.
//!
//! stdout carries only frames; status and errors go to stderr. Each
//! connection is read by its own task through the shared server machinery
//! (`crate::net`: connection slots, idle timeout, frame size limit, buffer
//! budget, TLS), and every frame is fully validated (`Decoder::view`); an
//! invalid frame closes only its connection, with an error line naming the
//! peer, the frame and the byte.
//!
//! One thread writes stdout, flushing whenever no frame is waiting, so
//! output is live. The queue to it is bounded in bytes ([`QUEUE_BYTES`]): a
//! connection whose line does not fit waits, stops reading its socket, and
//! TCP slows its sender. Ctrl-C or SIGTERM stops the listener: what is
//! queued is written out, but for at most [`DRAIN`]; if stdout is blocked
//! the report says how many frames were not written, and the process ends
//! all the same.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use messageframe::Decoder;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};

use super::dump::Style;
use crate::failure::{status, Failure};
use crate::net::conn::ConnError;
use crate::net::log::Kind;
use crate::net::server::{self, Counters, Incoming, Server};
use crate::net::ServerArgs;
use crate::plural::count;

/// Bytes of output queued for stdout before connections wait: 8 MiB. A
/// single line larger than this is queued alone.
pub(crate) const QUEUE_BYTES: usize = 8 << 20;

/// How long a stop waits for the queue to be written to stdout.
pub(crate) const DRAIN: Duration = Duration::from_millis(1500);

/// What a connection hands the stdout thread.
enum Out {
    /// A JSON line, formatted by the connection's task.
    Line(Vec<u8>),
    /// A validated frame to print `--pretty` (numbered by the writer, in
    /// output order).
    Frame(Bytes),
}

impl Out {
    fn len(&self) -> usize {
        match self {
            Out::Line(l) => l.len(),
            Out::Frame(f) => f.len(),
        }
    }
}

/// The queue to the stdout thread: each item holds its bytes' worth of
/// permits of `room` until it is written.
#[derive(Clone)]
struct Queue {
    tx: mpsc::UnboundedSender<(Out, u32)>,
    room: Arc<Semaphore>,
}

impl Queue {
    /// Waits for room, then queues `out`. `false` if the writer is gone.
    async fn send(&self, out: Out) -> bool {
        let permits = out.len().clamp(1, QUEUE_BYTES) as u32;
        let Ok(room) = self.room.acquire_many(permits).await else {
            return false;
        };
        room.forget();
        self.tx.send((out, permits)).is_ok()
    }
}

/// What the stdout thread did.
#[derive(Debug, Default)]
struct Written {
    frames: AtomicU64,
}

pub(crate) fn run(addr: &str, style: Style, args: &ServerArgs) -> Result<(), Failure> {
    let tls = args.tls.load()?;
    super::runtime()?.block_on(serve(addr, style, Server::new("", args.limits(), tls)))
}

async fn serve(addr: &str, style: Style, server: Server) -> Result<(), Failure> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::Bad(format!("cannot listen on {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure::Bad(format!("cannot listen on {addr}: {e}")))?;
    status(format_args!("listening on {local}"));
    status(server.describe());

    let (tx, rx) = mpsc::unbounded_channel();
    let room = Arc::new(Semaphore::new(QUEUE_BYTES));
    let queue = Queue {
        tx,
        room: room.clone(),
    };
    let written = Arc::new(Written::default());
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    {
        let written = written.clone();
        std::thread::spawn(move || {
            let result = write_stdout(rx, &room, style, &written);
            let _ = done_tx.send(result);
        });
    }
    let frames = Arc::new(AtomicU64::new(0));
    let stop = {
        let queue = queue.clone();
        async move {
            tokio::select! {
                () = super::shutdown_signal() => {}
                // The stdout thread stopped (its reader went away).
                () = queue.tx.closed() => {}
            }
        }
    };
    let mut connections = server::serve(&server, &listener, stop, |incoming| {
        connection(incoming, queue.clone(), style, frames.clone())
    })
    .await;
    drop(listener);
    connections.abort_all();
    while connections.join_next().await.is_some() {}
    drop(queue);
    // The queue is written out, unless stdout is blocked: then the process
    // ends without it.
    let result = tokio::task::spawn_blocking(move || done_rx.recv_timeout(DRAIN))
        .await
        .ok()
        .and_then(Result::ok);
    let received = frames.load(Ordering::Relaxed);
    let shared = server.shared();
    shared.log.flush();
    let c = &shared.counters;
    let mut report = format!(
        "stopped: {} from {}",
        count(received, "frame"),
        count(Counters::get(&c.accepted), "connection")
    );
    for (n, what) in [
        (Counters::get(&c.refused), "refused (--max-connections)"),
        (Counters::get(&c.idle), "closed idle (--idle-timeout)"),
        (
            Counters::get(&c.no_memory),
            "closed for want of buffer memory",
        ),
        (
            Counters::get(&c.handshakes_failed),
            "failed the TLS handshake",
        ),
    ] {
        if n > 0 {
            report.push_str(&format!("; {n} {what}"));
        }
    }
    let unwritten = received.saturating_sub(written.frames.load(Ordering::Relaxed));
    if result.is_none() && unwritten > 0 {
        report.push_str(&format!(
            "; {} not written: stdout did not take them within {} s",
            count(unwritten, "frame"),
            DRAIN.as_secs_f64()
        ));
    }
    status(report);
    match result {
        Some(Err(e)) if e.kind() != io::ErrorKind::BrokenPipe => Err(Failure::from(e)),
        _ => Ok(()),
    }
}

async fn connection(incoming: Incoming, queue: Queue, style: Style, total: Arc<AtomicU64>) {
    let peer = incoming.peer();
    let Some(mut conn) = incoming.open().await else {
        return;
    };
    let shared = conn.shared().clone();
    shared
        .log
        .line(Kind::Connection, format_args!("{peer}: connected"));
    let decoder = Decoder::new();
    loop {
        loop {
            let framed = match conn.next_frame() {
                Ok(Some(framed)) => framed,
                Ok(None) => break,
                Err(e) => return closed(&conn, &e),
            };
            let bytes = conn.bytes(framed.range.clone());
            let view = match decoder.view(bytes) {
                Ok(view) => view,
                Err(e) => {
                    let offset = framed.offset as usize;
                    shared.log.line(
                        Kind::Peer,
                        format_args!(
                            "{peer}: frame {} (starts at byte {offset}): {}; connection closed",
                            framed.index,
                            e.with_base_offset(offset)
                        ),
                    );
                    return;
                }
            };
            let out = match style {
                Style::Json { .. } => {
                    let mut line = Vec::with_capacity(256);
                    style.format(&mut line, framed.index as usize, &view);
                    Out::Line(line)
                }
                Style::Pretty => Out::Frame(Bytes::copy_from_slice(bytes)),
            };
            if !queue.send(out).await {
                return;
            }
            total.fetch_add(1, Ordering::Relaxed);
        }
        match conn.fill().await {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return closed(&conn, &e),
        }
    }
    shared.log.line(
        Kind::Connection,
        format_args!("{peer}: closed after {}", count(conn.frames(), "frame")),
    );
}

/// The line for a connection closed for `e`.
fn closed(conn: &crate::net::conn::FrameConn, e: &ConnError) {
    let peer = conn.peer();
    let line = match e {
        ConnError::Frame { .. } => format!("{peer}: {e}; connection closed"),
        _ => format!(
            "{peer}: {e}; connection closed after {}",
            count(conn.frames(), "frame")
        ),
    };
    conn.shared().log.line(Kind::Peer, line);
}

/// The stdout thread: writes what the connections send, flushing whenever
/// nothing more is waiting, and gives each item's room back once written.
fn write_stdout(
    mut rx: mpsc::UnboundedReceiver<(Out, u32)>,
    room: &Semaphore,
    style: Style,
    written: &Written,
) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let decoder = Decoder::new();
    let mut line = Vec::new();
    let mut index = 0usize;
    // Items handed to the BufWriter whose bytes may still be in it.
    let mut pending = 0u64;
    loop {
        let (item, permits) = match rx.try_recv() {
            Ok(item) => item,
            Err(mpsc::error::TryRecvError::Empty) => {
                out.flush()?;
                written.frames.fetch_add(pending, Ordering::Relaxed);
                pending = 0;
                match rx.blocking_recv() {
                    Some(item) => item,
                    None => break,
                }
            }
            Err(mpsc::error::TryRecvError::Disconnected) => break,
        };
        match item {
            Out::Line(l) => out.write_all(&l)?,
            Out::Frame(bytes) => {
                // Validated by its connection's task.
                if let Ok(view) = decoder.view(&bytes) {
                    style.format(&mut line, index, &view);
                    out.write_all(&line)?;
                }
            }
        }
        room.add_permits(permits as usize);
        pending += 1;
        if out.buffer().is_empty() {
            written.frames.fetch_add(pending, Ordering::Relaxed);
            pending = 0;
        }
        index += 1;
    }
    out.flush()?;
    written.frames.fetch_add(pending, Ordering::Relaxed);
    Ok(())
}
