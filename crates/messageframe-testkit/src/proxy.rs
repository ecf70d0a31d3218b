//! A TCP proxy on loopback whose connections can be cut: the "cut
//! connection" of the fault tests, without root. Every connection accepted
//! is forwarded to the target; [`Proxy::cut`] closes all of them at once
//! (both sides, whatever is in flight is lost), and new connections are
//! accepted again afterwards.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

/// The proxy; stops accepting and cuts everything when dropped.
///
/// ```no_run
/// use messageframe_testkit::{NatsServer, Proxy, ServerOptions};
///
/// let server = NatsServer::start(ServerOptions::new());
/// let proxy = Proxy::start(server.port());
/// println!("connect to {}", proxy.url());
/// proxy.cut();
/// ```
#[derive(Debug)]
pub struct Proxy {
    port: u16,
    open: Arc<Mutex<Vec<TcpStream>>>,
    stopped: Arc<AtomicBool>,
    cuts: Arc<AtomicU64>,
}

impl Proxy {
    /// Forwards 127.0.0.1:(a free port) to 127.0.0.1:`target`.
    #[must_use]
    pub fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the proxy's port");
        let port = listener.local_addr().expect("the proxy's address").port();
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let open = Arc::new(Mutex::new(Vec::new()));
        let stopped = Arc::new(AtomicBool::new(false));
        {
            let open = open.clone();
            let stopped = stopped.clone();
            thread::spawn(move || {
                while !stopped.load(Ordering::Acquire) {
                    match listener.accept() {
                        Ok((client, _)) => {
                            let _ = client.set_nonblocking(false);
                            let Ok(server) = TcpStream::connect((Ipv4Addr::LOCALHOST, target))
                            else {
                                continue;
                            };
                            let mut list = open.lock().unwrap_or_else(PoisonError::into_inner);
                            for stream in [&client, &server] {
                                if let Ok(clone) = stream.try_clone() {
                                    list.push(clone);
                                }
                            }
                            drop(list);
                            pipe(&client, &server);
                            pipe(&server, &client);
                        }
                        Err(_) => thread::sleep(Duration::from_millis(5)),
                    }
                }
            });
        }
        Proxy {
            port,
            open,
            stopped,
            cuts: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The proxy's port.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `nats://127.0.0.1:PORT` of the proxy.
    #[must_use]
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Closes every connection open now (both directions); returns how
    /// many connections (pairs of sockets) were cut.
    pub fn cut(&self) -> usize {
        let mut list = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        for stream in list.iter() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        let pairs = list.len() / 2;
        list.clear();
        self.cuts.fetch_add(1, Ordering::Relaxed);
        pairs
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Release);
        self.cut();
    }
}

/// Copies `from` to `to` on a thread until either side closes.
fn pipe(from: &TcpStream, to: &TcpStream) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    thread::spawn(move || {
        let mut buffer = [0u8; 16 << 10];
        loop {
            match from.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buffer[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}
