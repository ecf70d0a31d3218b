//! `mframe listen ADDR [--with-data | --pretty]`: accepts TCP connections
//! and prints their frames as they arrive, in `dump`'s formats.
//!
//! stdout carries only frames; status and errors go to stderr. Each
//! connection is read by its own task with the library's `RawFrameCodec`
//! and every frame is fully validated (`Decoder::view`); an invalid frame
//! closes only its connection, with an error line naming the peer, the
//! frame and the byte. One thread writes stdout, flushing whenever no frame
//! is waiting, so output is live; the queue to it is bounded, so a slow
//! stdout slows the senders instead of growing memory. Ctrl-C or SIGTERM
//! stops the listener after writing out what was received.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use messageframe::codec::RawFrameCodec;
use messageframe::{Decoder, StreamError};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::codec::FramedRead;

use super::dump::Style;
use crate::failure::{status, Failure};

/// Frames queued for stdout before connections wait.
const QUEUE: usize = 1024;

/// What a connection hands the stdout thread.
enum Out {
    /// A JSON line, formatted by the connection's task.
    Line(Vec<u8>),
    /// A validated frame to print `--pretty` (numbered by the writer, in
    /// output order).
    Frame(Bytes),
}

pub(crate) fn run(addr: &str, style: Style) -> Result<(), Failure> {
    super::runtime()?.block_on(serve(addr, style))
}

async fn serve(addr: &str, style: Style) -> Result<(), Failure> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::Bad(format!("cannot listen on {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure::Bad(format!("cannot listen on {addr}: {e}")))?;
    status(format_args!("listening on {local}"));

    let (tx, rx) = mpsc::channel::<Out>(QUEUE);
    let writer = std::thread::spawn(move || write_stdout(rx, style));
    let frames = Arc::new(AtomicU64::new(0));
    let mut connections = JoinSet::new();
    let mut accepted = 0u64;
    let shutdown = super::shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            // The stdout thread stopped (its reader went away).
            () = tx.closed() => break,
            conn = listener.accept() => match conn {
                Ok((socket, peer)) => {
                    accepted += 1;
                    connections.spawn(connection(socket, peer, tx.clone(), style, frames.clone()));
                }
                Err(e) => status(format_args!("cannot accept a connection: {e}")),
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
    drop(tx);
    let written = writer.join().unwrap_or(Ok(()));
    status(format_args!(
        "stopped: {} frames from {accepted} connections",
        frames.load(Ordering::Relaxed)
    ));
    match written {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(Failure::from(e)),
        _ => Ok(()),
    }
}

async fn connection(
    socket: TcpStream,
    peer: SocketAddr,
    tx: mpsc::Sender<Out>,
    style: Style,
    total: Arc<AtomicU64>,
) {
    status(format_args!("{peer}: connected"));
    let decoder = Decoder::new();
    let mut frames = FramedRead::new(socket, RawFrameCodec::with_decoder(decoder));
    let (mut index, mut start) = (0usize, 0usize);
    while let Some(item) = frames.next().await {
        let raw = match item {
            Ok(raw) => raw,
            Err(StreamError::Decode(e)) => return closed(peer, index, start, &e),
            Err(e) => {
                status(format_args!(
                    "{peer}: {e}; connection closed after {index} frames"
                ));
                return;
            }
        };
        let view = match decoder.view(&raw.bytes) {
            Ok(view) => view,
            Err(e) => return closed(peer, index, start, &e.with_base_offset(start)),
        };
        let out = match style {
            Style::Json { .. } => {
                let mut line = Vec::with_capacity(256);
                style.format(&mut line, index, &view);
                Out::Line(line)
            }
            Style::Pretty => Out::Frame(raw.bytes.clone()),
        };
        if tx.send(out).await.is_err() {
            return;
        }
        start += raw.bytes.len();
        index += 1;
        total.fetch_add(1, Ordering::Relaxed);
    }
    status(format_args!("{peer}: closed after {index} frames"));
}

fn closed(peer: SocketAddr, index: usize, start: usize, e: &messageframe::DecodeError) {
    status(format_args!(
        "{peer}: frame {index} (starts at byte {start}): {e}; connection closed"
    ));
}

/// The stdout thread: writes what the connections send, flushing whenever
/// nothing more is waiting.
fn write_stdout(mut rx: mpsc::Receiver<Out>, style: Style) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let decoder = Decoder::new();
    let mut line = Vec::new();
    let mut index = 0usize;
    loop {
        let item = match rx.try_recv() {
            Ok(item) => item,
            Err(mpsc::error::TryRecvError::Empty) => {
                out.flush()?;
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
        index += 1;
    }
    out.flush()
}
