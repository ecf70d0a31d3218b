//! What the TCP servers share: `listen`, `relay` (its producers' side) and
//! `view`'s TCP input accept strangers' connections through this module,
//! so that each of them has the same limits, with the same defaults and
//! the same messages (docs/security.md, "Network commands").
//!
//! - `server`: the accept loop. At most `--max-connections` peers at once
//!   (more are accepted and closed at once, with a log line); accept errors
//!   (out of descriptors: EMFILE) back off instead of spinning; the soft
//!   descriptor limit is raised to the hard one at start; TLS handshakes
//!   (with a deadline) when the server has a certificate.
//! - `conn`: a peer's frames. The read buffer grows only as bytes arrive
//!   (never to what a header announces), is charged to a process-wide
//!   budget before it grows and grown with `try_reserve`, so a peer that
//!   cannot be given memory loses its connection and the process goes on; a
//!   frame over `--max-frame-bytes` is refused when its header announces it;
//!   a peer that completes no frame for `--idle-timeout` is closed.
//! - `budget`: that budget; `log`: log lines at a bounded rate, with a
//!   count of those suppressed; [`tls`]: rustls configurations from PEM
//!   files, for servers and clients.

pub(crate) mod budget;
pub(crate) mod conn;
pub(crate) mod log;
mod rlimit;
pub(crate) mod server;
pub mod tls;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::failure::Failure;

/// Connections a server holds at once when `--max-connections` is not
/// given (fewer if the descriptor limit does not allow as many).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How long a peer may go without completing a frame, by default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// The largest frame a server accepts, by default: 16 MiB. Sixteen times
/// the largest frame of the benchmark scenarios (a 1 MiB IQ capture), and
/// small enough that sixteen peers sending the largest frames at once fit
/// the default buffer budget ([`DEFAULT_MAX_BUFFERED_BYTES`]).
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 << 20;

/// Bytes that the read buffers of all the connections of a process may
/// hold together, by default: 256 MiB.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 256 << 20;

/// The limits of a server (`listen`, `relay`, `view`'s TCP input).
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// Peers connected at once; more are closed as they arrive. `None`:
    /// [`DEFAULT_MAX_CONNECTIONS`], lowered to fit the descriptor limit.
    pub max_connections: Option<usize>,
    /// A peer that completes no frame for this long is closed (`None`:
    /// never).
    pub idle_timeout: Option<Duration>,
    /// The largest frame accepted, in bytes; a header announcing more
    /// closes the connection before the frame's bytes are read.
    pub max_frame_bytes: usize,
    /// Bytes the read buffers of every connection may hold together; a
    /// connection whose buffer would pass it is closed.
    pub max_buffered_bytes: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_connections: None,
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
        }
    }
}

/// The limits and the TLS options of a server, on the command line.
#[derive(Args, Debug, Clone)]
pub(crate) struct ServerArgs {
    /// Peers connected at once; more are closed as they arrive, with a log
    /// line [default: 1024, lowered to fit the descriptor limit].
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub(crate) max_connections: Option<usize>,
    /// Close a peer that completes no frame for this many seconds (0:
    /// never).
    #[arg(long, value_name = "SECONDS", default_value = "120", value_parser = parse_idle)]
    pub(crate) idle_timeout: IdleTimeout,
    /// The largest frame accepted (e.g. 16MiB, 1048576); a header that
    /// announces more closes its connection before its bytes are read.
    #[arg(long, value_name = "BYTES", default_value = "16MiB", value_parser = parse_bytes)]
    pub(crate) max_frame_bytes: usize,
    /// Bytes all connections' read buffers may hold together; a connection
    /// whose buffer would pass it is closed.
    #[arg(long, value_name = "BYTES", default_value = "256MiB", value_parser = parse_bytes)]
    pub(crate) max_buffered_bytes: usize,
    #[command(flatten)]
    pub(crate) tls: ServerTlsArgs,
}

/// `--idle-timeout`: seconds, or never.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdleTimeout(pub(crate) Option<Duration>);

impl ServerArgs {
    pub(crate) fn limits(&self) -> ServerLimits {
        ServerLimits {
            max_connections: self.max_connections,
            idle_timeout: self.idle_timeout.0,
            max_frame_bytes: self.max_frame_bytes,
            max_buffered_bytes: self.max_buffered_bytes,
        }
    }
}

/// A server's TLS: its certificate and key, and the CA its clients'
/// certificates must be signed by (mutual TLS).
#[derive(Args, Debug, Clone)]
pub(crate) struct ServerTlsArgs {
    /// Serve TLS with this certificate chain (PEM, the server's certificate
    /// first); needs --tls-key.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Accept only clients with a certificate signed by a CA of this PEM
    /// file (mutual TLS); needs --tls-cert.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub(crate) tls_client_ca: Option<PathBuf>,
}

impl ServerTlsArgs {
    /// The TLS configuration, if the server serves TLS.
    pub(crate) fn load(&self) -> Result<Option<tls::ServerTls>, Failure> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => {
                tls::ServerTls::from_pem_files(cert, key, self.tls_client_ca.as_deref())
                    .map(Some)
                    .map_err(Failure::Bad)
            }
            _ => Ok(None),
        }
    }
}

/// A client's TLS (`send`): the CA that signs the server's certificate, and
/// the client's own certificate when the server asks for one.
#[derive(Args, Debug, Clone)]
pub(crate) struct ClientTlsArgs {
    /// Connect with TLS, trusting the CAs of this PEM file (e.g. the fleet's
    /// CA; the system's bundle is /etc/ssl/certs/ca-certificates.crt on
    /// Debian).
    #[arg(long, value_name = "PEM")]
    pub(crate) tls_ca: Option<PathBuf>,
    /// Present this certificate chain (PEM) to servers that ask for one
    /// (mutual TLS); needs --tls-key and --tls-ca.
    #[arg(long, value_name = "PEM", requires_all = ["tls_key", "tls_ca"])]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub(crate) tls_key: Option<PathBuf>,
}

impl ClientTlsArgs {
    /// The TLS configuration, if the client connects with TLS.
    pub(crate) fn load(&self) -> Result<Option<tls::ClientTls>, Failure> {
        let Some(ca) = &self.tls_ca else {
            return Ok(None);
        };
        let identity = self.tls_cert.as_deref().zip(self.tls_key.as_deref());
        tls::ClientTls::from_pem_files(ca, identity)
            .map(Some)
            .map_err(Failure::Bad)
    }
}

/// A byte count: a number, optionally with a binary unit (`K`/`KiB`,
/// `M`/`MiB`, `G`/`GiB`; `B` allowed), e.g. `16MiB`, `512K`, `1048576`.
pub(crate) fn parse_bytes(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => {
            return Err(format!(
                "`{text}` is not a size (e.g. 1048576, 512KiB, 16MiB, 1GiB)"
            ))
        }
    };
    number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1usize << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{text}` is not a size (a number > 0, e.g. 16MiB)"))
}

/// `--max-connections`: at least 1.
fn parse_count(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("`{text}` is not a number of connections (>= 1)")),
    }
}

/// Seconds (fractions allowed), 0 and up, at most a day.
pub(crate) fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.0..=86_400.0).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!("`{text}` is not a number of seconds (0 to 86400)")),
    }
}

/// `--idle-timeout`: seconds, 0 for never.
fn parse_idle(text: &str) -> Result<IdleTimeout, String> {
    let d = parse_seconds(text)?;
    Ok(IdleTimeout((!d.is_zero()).then_some(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("1048576"), Ok(1 << 20));
        assert_eq!(parse_bytes("16MiB"), Ok(16 << 20));
        assert_eq!(parse_bytes("16M"), Ok(16 << 20));
        assert_eq!(parse_bytes("512 KiB"), Ok(512 << 10));
        assert_eq!(parse_bytes("1g"), Ok(1 << 30));
        for bad in [
            "",
            "0",
            "MiB",
            "1.5MiB",
            "-1",
            "12TB",
            "99999999999999999999",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn idle_timeouts_are_seconds_or_never() {
        assert_eq!(parse_idle("0").unwrap().0, None);
        assert_eq!(
            parse_idle("2.5").unwrap().0,
            Some(Duration::from_millis(2500))
        );
        assert!(parse_idle("-1").is_err());
        assert!(parse_idle("soon").is_err());
    }
}
