//! TLS on the TCP commands, as real processes on loopback, with
//! certificates made here by rcgen: a fleet CA that signs the servers' and
//! the clients' certificates, and a rogue CA that signs a client's
//! certificate nobody trusts. Shows that TLS carries frames through
//! `listen`, `send`, `relay` (both sides) and `view`, that mutual TLS
//! admits only holders of a fleet certificate, and that a plain-TCP client
//! or an untrusted certificate is refused (and `send` says so, exit 1).

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use support::{numbered_frame, within, Proc};

const DEADLINE: Duration = Duration::from_secs(90);

/// PEM files in a directory of their own.
struct Pki {
    ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
    rogue_cert: PathBuf,
    rogue_key: PathBuf,
    rogue_ca: PathBuf,
}

fn ca(name: &str) -> (rcgen::Certificate, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert, Issuer::new(params, key))
}

fn leaf(
    issuer: &Issuer<'static, KeyPair>,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let mut params =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    params.distinguished_name.push(
        DnType::CommonName,
        names.first().copied().unwrap_or("client"),
    );
    params.extended_key_usages = vec![usage];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

impl Pki {
    fn new(test: &str) -> Pki {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tls-{test}"));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let (fleet, fleet_issuer) = ca("fleet CA");
        let (rogue, rogue_issuer) = ca("rogue CA");
        let (sc, sk) = leaf(
            &fleet_issuer,
            &["localhost", "127.0.0.1"],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        let (cc, ck) = leaf(
            &fleet_issuer,
            &["sdr-17.fleet"],
            ExtendedKeyUsagePurpose::ClientAuth,
        );
        let (rc, rk) = leaf(
            &rogue_issuer,
            &["sdr-17.fleet"],
            ExtendedKeyUsagePurpose::ClientAuth,
        );
        Pki {
            ca: write("ca.pem", &fleet.pem()),
            server_cert: write("server.pem", &sc),
            server_key: write("server-key.pem", &sk),
            client_cert: write("client.pem", &cc),
            client_key: write("client-key.pem", &ck),
            rogue_cert: write("rogue.pem", &rc),
            rogue_key: write("rogue-key.pem", &rk),
            rogue_ca: write("rogue-ca.pem", &rogue.pem()),
        }
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Three frames, in a file.
fn frames_file(test: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tls-{test}-frames.mfb"));
    let mut bytes = Vec::new();
    for seq in 0..3 {
        bytes.extend(numbered_frame(4, seq, 1).encode().unwrap());
    }
    std::fs::write(&path, bytes).unwrap();
    path
}

/// `mframe listen` with the server's certificate; with `mutual`, clients
/// must hold a fleet certificate.
fn tls_listen(pki: &Pki, mutual: bool) -> (Proc, String) {
    let mut args = vec![
        "listen",
        "127.0.0.1:0",
        "--tls-cert",
        s(&pki.server_cert),
        "--tls-key",
        s(&pki.server_key),
    ];
    if mutual {
        args.extend(["--tls-client-ca", s(&pki.ca)]);
    }
    let p = Proc::spawn(&args);
    let addr = p.listening_on();
    (p, addr)
}

/// `--tls-ca` and the fleet client certificate.
fn fleet_client(pki: &Pki) -> [&str; 6] {
    [
        "--tls-ca",
        s(&pki.ca),
        "--tls-cert",
        s(&pki.client_cert),
        "--tls-key",
        s(&pki.client_key),
    ]
}

/// `mframe send ADDR FILE EXTRA...`: (exit code, stderr).
fn send(addr: &str, file: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["send", addr, s(file)];
    args.extend_from_slice(extra);
    let mut p = Proc::spawn(&args);
    let code = p.wait().code().unwrap_or(-1);
    (code, p.stderr_text())
}

#[test]
fn listen_over_tls_prints_what_send_sends_and_refuses_plain_tcp() {
    within(DEADLINE, || {
        let pki = Pki::new("listen");
        let file = frames_file("listen");
        let (mut listen, addr) = tls_listen(&pki, false);
        listen.stderr_line("TLS; at most");
        // Trusted: printed.
        let (code, err) = send(&addr, &file, &["--tls-ca", s(&pki.ca)]);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("sent 3 frames"), "{err}");
        let lines = listen.stdout_lines(3);
        assert!(lines[2].contains("\"counter\":2,"), "{lines:?}");
        // A client that does not trust the server's CA stops at the
        // handshake.
        let (code, err) = send(&addr, &file, &["--tls-ca", s(&pki.rogue_ca)]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("TLS handshake"), "{err}");
        // Plain TCP to a TLS server: refused, nothing printed, and `send`
        // does not call it a success.
        let (code, err) = send(&addr, &file, &[]);
        assert_eq!(code, 1, "{err}");
        assert!(!err.contains("sent 3 frames"), "{err}");
        let mut raw = TcpStream::connect(&addr).unwrap();
        raw.write_all(&numbered_frame(4, 9, 1).encode().unwrap())
            .unwrap();
        raw.set_read_timeout(Some(support::WAIT)).unwrap();
        let mut rest = Vec::new();
        let _ = raw.read_to_end(&mut rest);
        assert!(listen.stdout_quiet(Duration::from_millis(300)));
        listen.signal("INT");
        assert!(listen.wait().success());
        let text = listen.stderr_text();
        assert!(text.contains("TLS handshake failed"), "{text}");
        assert!(text.contains("stopped: 3 frames from"), "{text}");
    });
}

#[test]
fn mutual_tls_admits_only_holders_of_a_fleet_certificate() {
    within(DEADLINE, || {
        let pki = Pki::new("mutual");
        let file = frames_file("mutual");
        let (mut listen, addr) = tls_listen(&pki, true);
        listen.stderr_line("client certificates required");
        let (code, err) = send(&addr, &file, &fleet_client(&pki));
        assert_eq!(code, 0, "{err}");
        assert_eq!(listen.stdout_lines(3).len(), 3);
        // No certificate, or one the fleet CA did not sign: refused, and
        // `send` exits 1 naming the refusal.
        for (what, extra) in [
            ("no certificate", vec!["--tls-ca", s(&pki.ca)]),
            (
                "a rogue certificate",
                vec![
                    "--tls-ca",
                    s(&pki.ca),
                    "--tls-cert",
                    s(&pki.rogue_cert),
                    "--tls-key",
                    s(&pki.rogue_key),
                ],
            ),
        ] {
            let (code, err) = send(&addr, &file, &extra);
            assert_eq!(code, 1, "{what}: {err}");
            assert!(
                err.contains("refused") || err.contains("TLS handshake"),
                "{what}: {err}"
            );
            assert!(!err.contains("sent 3 frames"), "{what}: {err}");
        }
        assert!(listen.stdout_quiet(Duration::from_millis(300)));
        listen.signal("INT");
        assert!(listen.wait().success());
        let text = listen.stderr_text();
        assert_eq!(text.matches("TLS handshake failed").count(), 2, "{text}");
        assert!(text.contains("stopped: 3 frames from"), "{text}");
    });
}

#[test]
fn relay_speaks_tls_to_its_producers_and_to_its_consumers() {
    within(DEADLINE, || {
        let pki = Pki::new("relay");
        let file = frames_file("relay");
        // The consumer: TLS, clients must hold a fleet certificate.
        let (mut consumer, consumer_addr) = tls_listen(&pki, true);
        let mut relay = Proc::spawn(&[
            "relay",
            "--listen",
            "127.0.0.1:0",
            "--route",
            &format!("1={consumer_addr}"),
            "--tls-cert",
            s(&pki.server_cert),
            "--tls-key",
            s(&pki.server_key),
            "--tls-client-ca",
            s(&pki.ca),
            "--consumer-tls-ca",
            s(&pki.ca),
            "--consumer-tls-cert",
            s(&pki.client_cert),
            "--consumer-tls-key",
            s(&pki.client_key),
        ]);
        let addr = relay.listening_on();
        relay.stderr_line("(targets 1): connected");
        let (code, err) = send(&addr, &file, &fleet_client(&pki));
        assert_eq!(code, 0, "{err}");
        let lines = consumer.stdout_lines(3);
        assert!(lines[0].contains("\"counter\":0,"), "{lines:?}");
        // A producer without a fleet certificate gets nothing through.
        let (code, err) = send(&addr, &file, &["--tls-ca", s(&pki.ca)]);
        assert_eq!(code, 1, "{err}");
        assert!(consumer.stdout_quiet(Duration::from_millis(300)));
        relay.signal("INT");
        assert!(relay.wait().success());
        let r = support::route_report(&relay.stderr_text(), "1");
        assert_eq!((r.delivered, r.dropped), (3, 0));
        consumer.signal("INT");
        assert!(consumer.wait().success());
    });
}

#[test]
fn view_accepts_tls_producers() {
    within(DEADLINE, || {
        let pki = Pki::new("view");
        let file = frames_file("view");
        let mut view = Proc::spawn(&[
            "view",
            "127.0.0.1:0",
            "--tls-cert",
            s(&pki.server_cert),
            "--tls-key",
            s(&pki.server_key),
        ]);
        let url = view.stdout_line(support::WAIT).expect("the page's URL");
        let frames_addr = view.listening_on();
        let (code, err) = send(&frames_addr, &file, &["--tls-ca", s(&pki.ca)]);
        assert_eq!(code, 0, "{err}");
        let host = url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        support::wait_until("the frames on the page", || {
            let mut http = TcpStream::connect(&host).unwrap();
            write!(
                http,
                "GET /api/state HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut body = String::new();
            http.read_to_string(&mut body).unwrap();
            body.contains("\"frames\":3")
        });
        view.signal("TERM");
        view.wait();
    });
}
