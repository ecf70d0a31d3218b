//! TLS for the TCP commands, with rustls and its `ring` provider.
//!
//! TLS wraps the stream, so the framing code never knows (tokio-rustls'
//! design). A server ([`ServerTls`]) presents a certificate chain from a PEM
//! file, and with a client CA it requires every client to present a
//! certificate signed by that CA (mutual TLS: only holders of a fleet
//! certificate can send). A client ([`ClientTls`]) trusts the CAs of a PEM
//! file, checks that the server's certificate names the host it dialled,
//! and presents its own certificate when it has one.
//!
//! `ring` rather than `aws-lc-rs` (rustls' default): ring builds from
//! crates.io with a C compiler alone, where aws-lc-rs needs cmake (and
//! nasm or clang on some targets) on a fresh machine; and async-nats
//! already brings rustls with ring into the tree.

use std::io;
use std::net::{IpAddr, TcpStream as StdTcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::rustls::crypto::{ring, CryptoProvider};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{
    self, ClientConfig, ClientConnection, ProtocolVersion, RootCertStore, ServerConfig, StreamOwned,
};
use tokio_rustls::{TlsAcceptor, TlsConnector};

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read certificates from {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{} holds no PEM certificate", path.display()));
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| format!("cannot read a private key from {}: {e}", path.display()))
}

fn roots(path: &Path) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(path)? {
        roots
            .add(cert)
            .map_err(|e| format!("{}: not a CA certificate: {e}", path.display()))?;
    }
    Ok(roots)
}

/// A server's TLS: its certificate and key, and optionally the CA its
/// clients' certificates must be signed by.
#[derive(Clone)]
pub struct ServerTls {
    acceptor: TlsAcceptor,
    mutual: bool,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("mutual", &self.mutual)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Reads the certificate chain (`cert`, the server's own first) and its
    /// key (`key`) from PEM files; with `client_ca`, clients must present a
    /// certificate signed by one of the CAs in that PEM file.
    ///
    /// # Errors
    ///
    /// A file that cannot be read or holds no certificate or key, a key
    /// that does not match the certificate.
    pub fn from_pem_files(
        cert: &Path,
        key: &Path,
        client_ca: Option<&Path>,
    ) -> Result<Self, String> {
        let chain = certificates(cert)?;
        let key = private_key(key)?;
        let provider = provider();
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?;
        let builder = match client_ca {
            Some(ca) => {
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca)?), provider)
                        .build()
                        .map_err(|e| format!("{}: {e}", ca.display()))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let config = builder
            .with_single_cert(chain, key)
            .map_err(|e| format!("{} and its key: {e}", cert.display()))?;
        Ok(ServerTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            mutual: client_ca.is_some(),
        })
    }

    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// How the listening line describes it.
    pub(crate) fn describe(&self) -> &'static str {
        if self.mutual {
            "TLS, client certificates required"
        } else {
            "TLS"
        }
    }
}

/// A client's TLS: the CAs it trusts, and its own certificate if it has
/// one.
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls").finish_non_exhaustive()
    }
}

impl ClientTls {
    /// Trusts the CAs of the PEM file `ca`; presents `identity`
    /// (certificate chain, key: PEM files) to servers that ask for one.
    ///
    /// # Errors
    ///
    /// A file that cannot be read or holds no certificate or key.
    pub fn from_pem_files(ca: &Path, identity: Option<(&Path, &Path)>) -> Result<Self, String> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots(ca)?);
        let config = match identity {
            Some((cert, key)) => builder
                .with_client_auth_cert(certificates(cert)?, private_key(key)?)
                .map_err(|e| format!("{} and its key: {e}", cert.display()))?,
            None => builder.with_no_client_auth(),
        };
        Ok(ClientTls {
            config: Arc::new(config),
        })
    }

    /// The name the server's certificate must hold: the host of `addr`
    /// (`host:port`, `[v6]:port`), a DNS name or an IP address.
    pub(crate) fn server_name(addr: &str) -> io::Result<ServerName<'static>> {
        let host = match addr.rsplit_once(':') {
            Some((host, port)) if port.parse::<u16>().is_ok() => host,
            _ => addr,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(ServerName::IpAddress(ip.into()));
        }
        ServerName::try_from(host.to_owned()).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{host:?} is not a host name TLS can check: {e}"),
            )
        })
    }

    /// The TLS handshake over `tcp`, connected to `addr`, and the
    /// server's first word after it ([`ACCEPTED_WITHIN`]).
    pub(crate) async fn connect(
        &self,
        tcp: TcpStream,
        addr: &str,
    ) -> io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let mut stream = TlsConnector::from(self.config.clone())
            .connect(Self::server_name(addr)?, tcp)
            .await?;
        let (tcp, conn) = stream.get_mut();
        if conn.protocol_version() == Some(ProtocolVersion::TLSv1_3) {
            let first_word = async {
                loop {
                    tcp.readable().await?;
                    match conn.read_tls(&mut TryRead(tcp)) {
                        Ok(0) => return Err(closed_after_handshake()),
                        Ok(_) => {
                            return conn
                                .process_new_packets()
                                .map(drop)
                                .map_err(io::Error::other)
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                }
            };
            // A server that says nothing within the delay (no session
            // tickets) has not refused us either.
            if let Ok(said) = tokio::time::timeout(ACCEPTED_WITHIN, first_word).await {
                said?;
            }
        }
        Ok(stream)
    }

    /// The TLS handshake over a blocking `tcp` (for `send`), completed
    /// before this returns.
    pub(crate) fn connect_blocking(
        &self,
        tcp: StdTcpStream,
        addr: &str,
    ) -> io::Result<StreamOwned<ClientConnection, StdTcpStream>> {
        let conn = ClientConnection::new(self.config.clone(), Self::server_name(addr)?)
            .map_err(io::Error::other)?;
        let mut stream = StreamOwned::new(conn, tcp);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock)?;
        }
        if stream.conn.protocol_version() == Some(ProtocolVersion::TLSv1_3) {
            let before = stream.sock.read_timeout()?;
            stream.sock.set_read_timeout(Some(ACCEPTED_WITHIN))?;
            match stream.conn.read_tls(&mut stream.sock) {
                Ok(0) => return Err(closed_after_handshake()),
                Ok(_) => {
                    stream
                        .conn
                        .process_new_packets()
                        .map_err(io::Error::other)?;
                }
                // Nothing said within the delay: not refused either.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(e),
            }
            stream.sock.set_read_timeout(before)?;
        }
        Ok(stream)
    }
}

/// How long a TLS 1.3 client waits, after its handshake, for the server's
/// first word. In TLS 1.3 the client's handshake is done before the server
/// has checked the client's certificate: a server that refuses it says so
/// (an alert) after the client thinks it is connected. rustls servers send
/// session tickets once they accept the client, so the first record after
/// the handshake tells which; without this wait, frames written to a
/// server that refused us would look sent.
const ACCEPTED_WITHIN: Duration = Duration::from_secs(2);

fn closed_after_handshake() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "the server closed the connection right after the TLS handshake",
    )
}

/// `io::Read` over a tokio socket's non-blocking `try_read`, for rustls'
/// `read_tls`.
struct TryRead<'a>(&'a TcpStream);

impl io::Read for TryRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

/// Whether `e` is a TLS alert sent by the peer (e.g. it refused our
/// certificate), as rustls reports it through `io::Error`.
pub(crate) fn peer_alert(e: &io::Error) -> Option<String> {
    let inner = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    match inner {
        rustls::Error::AlertReceived(alert) => Some(format!("{alert:?}")),
        _ => None,
    }
}
