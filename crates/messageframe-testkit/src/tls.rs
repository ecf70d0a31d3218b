//! Certificates for TLS tests, made on the spot with rcgen: a CA, a server
//! certificate for 127.0.0.1 and `localhost` signed by it, a client
//! certificate signed by it, and a client certificate signed by another CA
//! (one the server does not trust). PEM files in a temporary directory,
//! removed on drop.

use std::fs;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use tempfile::TempDir;

/// A CA and the certificates it signed, as PEM files.
///
/// ```no_run
/// use messageframe_testkit::{Certificates, NatsServer, ServerOptions};
///
/// let certs = Certificates::generate();
/// let server = NatsServer::start(ServerOptions::new().tls(&certs, true));
/// println!("trust {}", certs.ca().display());
/// ```
#[derive(Debug)]
pub struct Certificates {
    dir: TempDir,
}

impl Certificates {
    /// Makes the CA, the server and client certificates, and a client
    /// certificate of another CA.
    #[must_use]
    pub fn generate() -> Certificates {
        let dir = tempfile::Builder::new()
            .prefix("mf-certs-")
            .tempdir()
            .expect("create a temporary directory for certificates");
        let write = |name: &str, text: &str| {
            fs::write(dir.path().join(name), text).expect("write a PEM file");
        };
        let ca = make_ca("messageframe test CA");
        write("ca.pem", &ca.pem());
        let rogue = make_ca("someone else's CA");
        write("rogue-ca.pem", &rogue.pem());

        let (server, server_key) = leaf(
            &ca,
            "nats-server",
            vec!["127.0.0.1".to_owned(), "localhost".to_owned()],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        write("server.pem", &server);
        write("server-key.pem", &server_key);
        let (client, client_key) = leaf(
            &ca,
            "fleet-node",
            vec!["fleet-node".to_owned()],
            ExtendedKeyUsagePurpose::ClientAuth,
        );
        write("client.pem", &client);
        write("client-key.pem", &client_key);
        let (other, other_key) = leaf(
            &rogue,
            "stranger",
            vec!["stranger".to_owned()],
            ExtendedKeyUsagePurpose::ClientAuth,
        );
        write("rogue-client.pem", &other);
        write("rogue-client-key.pem", &other_key);
        Certificates { dir }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The CA certificate (PEM): what clients trust.
    #[must_use]
    pub fn ca(&self) -> PathBuf {
        self.file("ca.pem")
    }

    /// Another CA's certificate, which signed nothing the server has.
    #[must_use]
    pub fn rogue_ca(&self) -> PathBuf {
        self.file("rogue-ca.pem")
    }

    /// The server's certificate and key (for 127.0.0.1 and localhost).
    #[must_use]
    pub fn server(&self) -> (PathBuf, PathBuf) {
        (self.file("server.pem"), self.file("server-key.pem"))
    }

    /// A client certificate and key signed by [`ca`](Self::ca).
    #[must_use]
    pub fn client(&self) -> (PathBuf, PathBuf) {
        (self.file("client.pem"), self.file("client-key.pem"))
    }

    /// A client certificate and key signed by another CA.
    #[must_use]
    pub fn rogue_client(&self) -> (PathBuf, PathBuf) {
        (
            self.file("rogue-client.pem"),
            self.file("rogue-client-key.pem"),
        )
    }

    /// The directory holding the files.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

fn make_ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let key = KeyPair::generate().expect("generate a CA key");
    CertifiedIssuer::self_signed(params, key).expect("sign the CA certificate")
}

fn leaf(
    ca: &CertifiedIssuer<'static, KeyPair>,
    name: &str,
    names: Vec<String>,
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let mut params = CertificateParams::new(names).expect("certificate parameters");
    params.distinguished_name.push(DnType::CommonName, name);
    params.extended_key_usages = vec![usage];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let key = KeyPair::generate().expect("generate a key");
    let cert = params.signed_by(&key, ca).expect("sign the certificate");
    (cert.pem(), key.serialize_pem())
}
