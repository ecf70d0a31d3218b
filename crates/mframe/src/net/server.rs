//! The accept loop of every TCP server: connection slots, accept errors,
//! descriptor limits and TLS handshakes.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::budget::Budget;
use super::conn::FrameConn;
use super::log::{Kind, RateLog};
use super::tls::ServerTls;
use super::{rlimit, ServerLimits, DEFAULT_MAX_CONNECTIONS};

/// Descriptors kept for everything but producers' connections when the
/// default `--max-connections` is fitted to the descriptor limit: stdio,
/// the listeners, the runtime's own, a relay's consumer connections, files.
const RESERVED_DESCRIPTORS: u64 = 64;

/// The longest pause between two `accept` calls that failed (out of
/// descriptors): the backoff doubles from 5 ms up to this.
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// The longest a TLS handshake may take.
const MAX_HANDSHAKE: Duration = Duration::from_secs(10);

/// A byte stream: plain TCP, or TLS over it.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// What happened to a server's connections.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Connections accepted and given a slot.
    pub(crate) accepted: AtomicU64,
    /// Connections closed at once: every slot was taken.
    pub(crate) refused: AtomicU64,
    /// TLS handshakes that failed or timed out.
    pub(crate) handshakes_failed: AtomicU64,
    /// Peers closed for completing no frame within the idle timeout.
    pub(crate) idle: AtomicU64,
    /// Peers closed because their buffer could not grow (the budget, or
    /// the allocator, said no).
    pub(crate) no_memory: AtomicU64,
}

impl Counters {
    pub(crate) fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    pub(crate) fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// What a server's connections share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) log: RateLog,
    pub(crate) budget: Budget,
    pub(crate) limits: ServerLimits,
    pub(crate) counters: Counters,
    tls: Option<ServerTls>,
    max_connections: usize,
}

/// A TCP server's accept side.
#[derive(Debug)]
pub(crate) struct Server {
    shared: Arc<Shared>,
    slots: Arc<Semaphore>,
}

impl Server {
    /// A server with `limits`; `prefix` starts its log lines (`"relay: "`).
    /// Raises the soft descriptor limit to the hard one, and fits the
    /// default `--max-connections` under it.
    pub(crate) fn new(prefix: &str, limits: ServerLimits, tls: Option<ServerTls>) -> Server {
        let nofile = rlimit::raise_nofile();
        let fits = |n: usize| match nofile {
            Some(limit) => (n as u64) < limit.saturating_sub(RESERVED_DESCRIPTORS),
            None => true,
        };
        let max_connections = match limits.max_connections {
            Some(n) => {
                if !fits(n) {
                    crate::failure::status(format_args!(
                        "{prefix}--max-connections {n} is above what the descriptor limit ({}) leaves for peers; \
                         accept errors will be backed off",
                        nofile.unwrap_or(0)
                    ));
                }
                n
            }
            None if fits(DEFAULT_MAX_CONNECTIONS) => DEFAULT_MAX_CONNECTIONS,
            None => {
                let n = nofile
                    .unwrap_or(0)
                    .saturating_sub(RESERVED_DESCRIPTORS)
                    .max(1) as usize;
                crate::failure::status(format_args!(
                    "{prefix}at most {n} connections at once (the descriptor limit is {}; \
                     {RESERVED_DESCRIPTORS} are kept for other uses)",
                    nofile.unwrap_or(0)
                ));
                n
            }
        };
        Server {
            shared: Arc::new(Shared {
                log: RateLog::new(prefix),
                budget: Budget::new(limits.max_buffered_bytes),
                limits,
                counters: Counters::default(),
                tls,
                max_connections,
            }),
            slots: Arc::new(Semaphore::new(max_connections)),
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// How the listening line describes the server: `TLS`, or plain TCP.
    pub(crate) fn describe(&self) -> String {
        let tls = match &self.shared.tls {
            Some(tls) => tls.describe(),
            None => "plain TCP",
        };
        format!("{tls}; at most {} connections", self.shared.max_connections)
    }

    /// The next connection that has a slot. Connections beyond
    /// `--max-connections` are closed as they come; failed accepts (out of
    /// descriptors, typically: the connection then waits in the kernel's
    /// queue) are retried after a pause that doubles up to 1 s. Never
    /// fails. Cancel-safe.
    pub(crate) async fn accept(&self, listener: &TcpListener) -> Incoming {
        let mut backoff = Duration::from_millis(5);
        loop {
            match listener.accept().await {
                Ok((stream, peer)) => {
                    backoff = Duration::from_millis(5);
                    match self.slots.clone().try_acquire_owned() {
                        Ok(slot) => {
                            Counters::bump(&self.shared.counters.accepted);
                            let _ = stream.set_nodelay(true);
                            return Incoming {
                                stream,
                                peer,
                                slot,
                                shared: self.shared.clone(),
                            };
                        }
                        Err(_) => {
                            Counters::bump(&self.shared.counters.refused);
                            self.shared.log.line(
                                Kind::Refused,
                                format_args!(
                                    "{peer}: refused: {} connections already (--max-connections)",
                                    self.shared.max_connections
                                ),
                            );
                            drop(stream);
                        }
                    }
                }
                // The peer gave up before it was accepted: nothing to wait
                // for.
                Err(e) if is_peer_error(&e) => {}
                Err(e) => {
                    self.shared.log.line(
                        Kind::Accept,
                        format_args!(
                            "cannot accept a connection: {e}; retrying in {} ms",
                            backoff.as_millis()
                        ),
                    );
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_ACCEPT_BACKOFF);
                }
            }
        }
    }
}

fn is_peer_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

/// An accepted connection, before its TLS handshake.
pub(crate) struct Incoming {
    stream: TcpStream,
    peer: SocketAddr,
    slot: OwnedSemaphorePermit,
    shared: Arc<Shared>,
}

impl Incoming {
    pub(crate) fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// The connection, ready for frames: after the TLS handshake when the
    /// server has TLS (within the idle timeout, at most 10 s). A failed
    /// handshake is a log line and `None`.
    pub(crate) async fn open(self) -> Option<FrameConn> {
        let Incoming {
            stream,
            peer,
            slot,
            shared,
        } = self;
        let io: Box<dyn Stream> = match &shared.tls {
            None => Box::new(stream),
            Some(tls) => {
                let deadline = shared
                    .limits
                    .idle_timeout
                    .map_or(MAX_HANDSHAKE, |t| t.min(MAX_HANDSHAKE));
                let handshake = tokio::time::timeout(deadline, tls.acceptor().accept(stream)).await;
                match handshake {
                    Ok(Ok(tls)) => Box::new(tls),
                    Ok(Err(e)) => {
                        Counters::bump(&shared.counters.handshakes_failed);
                        shared.log.line(
                            Kind::Peer,
                            format_args!("{peer}: TLS handshake failed: {e}; connection closed"),
                        );
                        return None;
                    }
                    Err(_) => {
                        Counters::bump(&shared.counters.handshakes_failed);
                        shared.log.line(
                            Kind::Peer,
                            format_args!(
                                "{peer}: no TLS handshake within {deadline:?}; connection closed"
                            ),
                        );
                        return None;
                    }
                }
            }
        };
        Some(FrameConn::new(io, peer, shared, slot))
    }
}

/// Accepts connections on `listener` and runs `handler` on each (in a task
/// of its own, holding its slot) until `stop` completes; returns the tasks
/// still running, for the caller to wait for or abort.
pub(crate) async fn serve<F, Fut>(
    server: &Server,
    listener: &TcpListener,
    stop: impl std::future::Future<Output = ()>,
    mut handler: F,
) -> tokio::task::JoinSet<()>
where
    F: FnMut(Incoming) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            incoming = server.accept(listener) => {
                tasks.spawn(handler(incoming));
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    tasks
}
