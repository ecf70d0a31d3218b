//! A consumer's connection: made in the background, remade with capped
//! exponential backoff whenever it fails, and written from the consumer's
//! queue.
//!
//! - **Connecting.** The first attempt is made at start, but nothing waits
//!   for it: a relay starts when its consumers are down, and their frames
//!   wait in their queues. A failed attempt is retried after 100 ms, then
//!   twice as long each time, up to [`MAX_BACKOFF`]; the backoff starts
//!   over after a connection that stayed up [`STABLE`].
//! - **Watching.** A consumer sends nothing, so the task always reads its
//!   socket: the end of the stream (or a reset) means the consumer went
//!   away, noticed at once even when nothing is being written.
//! - **Writing.** The task takes everything queued at once and writes it.
//!   A write that makes no progress for `--write-timeout` (a consumer that
//!   stopped reading) ends the connection, which is then remade; the frame
//!   it cut is lost, the frames not yet started wait for the next
//!   connection (see [`Queue::fail`]).

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_rustls::client::TlsStream;

use super::queue::{Queue, Take};
use crate::net::log::{Kind, RateLog};
use crate::net::tls::{peer_alert, ClientTls};

/// The first pause after a failed connection.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// The longest pause between two attempts to connect.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A connection that lasted this long resets the backoff.
const STABLE: Duration = Duration::from_secs(5);

/// How a consumer's connections are made and written.
#[derive(Clone)]
pub(super) struct Dialer {
    pub(super) tls: Option<ClientTls>,
    pub(super) connect_timeout: Duration,
    pub(super) write_timeout: Duration,
    pub(super) log: Arc<RateLog>,
}

/// The write side of a connection.
enum Writer {
    Plain(Arc<TcpStream>),
    Tls(WriteHalf<TlsStream<TcpStream>>),
}

/// The read side, watched for the consumer going away.
enum Watch {
    Plain(Arc<TcpStream>),
    Tls(ReadHalf<TlsStream<TcpStream>>),
}

impl Writer {
    async fn write_some(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Writer::Plain(s) => loop {
                s.writable().await?;
                match s.try_write(buf) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    other => return other,
                }
            },
            Writer::Tls(s) => s.write(buf).await,
        }
    }

    async fn flush(&mut self) -> io::Result<()> {
        match self {
            Writer::Plain(_) => Ok(()),
            Writer::Tls(s) => s.flush().await,
        }
    }

    /// Closes the connection cleanly (TLS: `close_notify`).
    async fn close(self) {
        match self {
            // The last handle closes the socket: a FIN, since a consumer
            // sends nothing to leave unread.
            Writer::Plain(s) => drop(s),
            Writer::Tls(mut s) => {
                let _ = s.shutdown().await;
            }
        }
    }
}

impl Watch {
    /// Returns why the connection ended, once it does.
    async fn ended(&mut self) -> String {
        let mut sink = [0u8; 512];
        loop {
            let read = match self {
                Watch::Plain(s) => match s.readable().await {
                    Ok(()) => match s.try_read(&mut sink) {
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                        other => other,
                    },
                    Err(e) => Err(e),
                },
                Watch::Tls(s) => s.read(&mut sink).await,
            };
            match read {
                Ok(0) => return "it closed the connection".to_owned(),
                // A consumer that sends something: ignored.
                Ok(_) => {}
                Err(e) => {
                    return match peer_alert(&e) {
                        Some(alert) => format!("it refused the connection (TLS alert {alert})"),
                        None => e.to_string(),
                    }
                }
            }
        }
    }
}

async fn connect(addr: &str, dialer: &Dialer) -> io::Result<(Writer, Watch)> {
    let attempt = async {
        let tcp = TcpStream::connect(addr).await?;
        let _ = tcp.set_nodelay(true);
        Ok(match &dialer.tls {
            None => {
                let tcp = Arc::new(tcp);
                (Writer::Plain(tcp.clone()), Watch::Plain(tcp))
            }
            Some(tls) => {
                let (r, w) = tokio::io::split(tls.connect(tcp, addr).await?);
                (Writer::Tls(w), Watch::Tls(r))
            }
        })
    };
    tokio::time::timeout(dialer.connect_timeout, attempt)
        .await
        .unwrap_or_else(|_| {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no connection within {:?}", dialer.connect_timeout),
            ))
        })
}

/// How a connection ended.
enum Ended {
    /// The queue is closed and written: the relay is done with it.
    Done,
    /// It failed; connect again.
    Failed(String),
}

/// The consumer's task: connects, writes, reconnects, until the queue is
/// closed and written, or `abort`.
pub(super) async fn run(queue: Arc<Queue>, dialer: Dialer, mut abort: watch::Receiver<bool>) {
    let counters = &queue.stats.consumers[queue.index];
    let mut backoff = FIRST_BACKOFF;
    let mut connections = 0u64;
    loop {
        if queue.done_if_idle() {
            return;
        }
        let attempt = tokio::select! {
            biased;
            _ = abort.wait_for(|&a| a) => {
                queue.abort();
                return;
            }
            () = queue.closed_and_empty() => return,
            attempt = connect(&queue.addr, &dialer) => attempt,
        };
        let why = match attempt {
            Ok((writer, watch)) => {
                connections += 1;
                if connections > 1 {
                    counters.reconnects.fetch_add(1, Ordering::Relaxed);
                }
                counters.up.store(true, Ordering::Relaxed);
                dialer.log.line(
                    Kind::Other,
                    format_args!(
                        "consumer {}: {}",
                        queue.name,
                        if connections > 1 {
                            "reconnected"
                        } else {
                            "connected"
                        }
                    ),
                );
                let since = Instant::now();
                match serve(&queue, &dialer, writer, watch, &mut abort).await {
                    Ended::Done => {
                        counters.up.store(false, Ordering::Relaxed);
                        return;
                    }
                    Ended::Failed(why) => {
                        if since.elapsed() >= STABLE {
                            backoff = FIRST_BACKOFF;
                        }
                        why
                    }
                }
            }
            Err(e) => format!("cannot connect: {e}"),
        };
        counters.failed(&why);
        queue.disconnected();
        dialer.log.line(
            Kind::Other,
            format_args!(
                "consumer {}: {why}; retrying in {} ms ({} bytes queued)",
                queue.name,
                backoff.as_millis(),
                queue.queued()
            ),
        );
        tokio::select! {
            biased;
            _ = abort.wait_for(|&a| a) => {
                queue.abort();
                return;
            }
            () = queue.closed_and_empty() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Writes the queue to one connection until it fails or the queue is
/// closed and written.
async fn serve(
    queue: &Queue,
    dialer: &Dialer,
    mut writer: Writer,
    mut watch: Watch,
    abort: &mut watch::Receiver<bool>,
) -> Ended {
    queue.connected(match &writer {
        Writer::Plain(s) => Some(s.clone()),
        Writer::Tls(_) => None,
    });
    // Two buffers trade places with the queue's, so neither is reallocated
    // in the steady state.
    let mut batch = BytesMut::new();
    let mut runs = VecDeque::new();
    let mut progressed = Instant::now();
    let stall = tokio::time::sleep_until(progressed + dialer.write_timeout);
    tokio::pin!(stall);
    loop {
        batch.clear();
        match queue.take(&mut batch, &mut runs) {
            Take::Done => {
                queue.disconnected();
                writer.close().await;
                return Ended::Done;
            }
            Take::Empty => {
                tokio::select! {
                    biased;
                    _ = abort.wait_for(|&a| a) => {
                        queue.abort();
                        return Ended::Done;
                    }
                    why = watch.ended() => {
                        queue.fail(&batch, 0, &mut runs, 0);
                        return Ended::Failed(why);
                    }
                    () = queue.ready.notified() => continue,
                }
            }
            Take::Batch => {}
        }
        // `pos`: bytes of the batch written; `front`: of the first run left.
        let (mut pos, mut front) = (0usize, 0usize);
        progressed = Instant::now();
        let failed = loop {
            let step = tokio::select! {
                biased;
                _ = abort.wait_for(|&a| a) => {
                    queue.drop_at_shutdown(&mut runs);
                    queue.abort();
                    return Ended::Done;
                }
                why = watch.ended() => Err(why),
                written = async {
                    if pos < batch.len() {
                        writer.write_some(&batch[pos..]).await
                    } else {
                        writer.flush().await.map(|()| 0)
                    }
                } => match written {
                    Ok(0) if pos < batch.len() => Err("the connection accepts no more bytes".to_owned()),
                    Ok(n) => Ok(n),
                    Err(e) => Err(e.to_string()),
                },
                // One timer for the connection, moved only when it fires
                // after progress (a timer per write cost throughput).
                () = stall.as_mut() => {
                    let due = progressed + dialer.write_timeout;
                    if due > Instant::now() {
                        stall.as_mut().reset(due);
                        continue;
                    }
                    Err(format!(
                        "no write made progress for {} s (--write-timeout): the consumer is not reading",
                        dialer.write_timeout.as_secs_f64()
                    ))
                }
            };
            match step {
                Ok(0) => break None,
                Ok(n) => {
                    pos += n;
                    progressed = Instant::now();
                    queue.progress(&mut runs, &mut front, n);
                    if pos == batch.len() && matches!(writer, Writer::Plain(_)) {
                        break None;
                    }
                }
                Err(why) => break Some(why),
            }
        };
        match failed {
            None => queue.batch_done(),
            Some(why) => {
                let rest = pos - front;
                queue.fail(&batch, rest, &mut runs, front);
                return Ended::Failed(why);
            }
        }
    }
}
