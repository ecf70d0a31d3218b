//! The NATS commands at their edges, as real processes against real
//! `nats-server`s (messageframe-testkit): credentials and TLS, passwords
//! never printed, header filters that a subject cannot fool, a stdout that
//! never reads. The faults under `pub` (restart, cut connection, a killed
//! cluster node, a partition) are in nats_faults.rs.

mod support;

use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use messageframe::{Frame, Header};
use messageframe_nats::async_nats;
use messageframe_testkit::{Certificates, NatsServer, NkeyUser, Operator, ServerOptions};
use support::{numbered_frame, run_to_end, Proc, Run, WAIT};

/// `mframe ARGS` with `stdin` and extra environment variables (none of
/// the caller's NATS credentials), bounded.
fn mframe(args: &[&str], env: &[(&str, &str)], stdin: &[u8]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mframe"));
    command
        .args(args)
        .env_remove("NATS_USER")
        .env_remove("NATS_PASSWORD")
        .env_remove("NATS_TOKEN")
        .envs(env.iter().copied());
    run_to_end(command, stdin)
}

fn text(out: &Run) -> String {
    out.text()
}

fn one_frame() -> Vec<u8> {
    numbered_frame(5, 1, 6).encode().expect("the frame encodes")
}

/// Options and environment variables of one attempt to log in.
type Attempt<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);

/// Publishes one frame with `login` and checks a subscriber with the same
/// `login` gets it; then that `refused` options are refused (exit 1).
fn logs_in(url: &str, login: &[&str], env: &[(&str, &str)], refused: &[Attempt<'_>]) {
    let args: Vec<&str> = [&["sub", url, "--count", "1"][..], login].concat();
    let mut sub = Proc::spawn_env(&args, env);
    sub.stderr_line("subscribed to");
    let published = mframe(&[&["pub", url, "-"][..], login].concat(), env, &one_frame());
    assert!(published.status.success(), "{}", text(&published));
    assert!(sub.stdout_line(WAIT).unwrap().contains("\"source\":5,"));
    assert!(sub.wait().success(), "{}", sub.stderr_text());
    for (options, env) in refused {
        let out = mframe(
            &[&["pub", url, "-"][..], options].concat(),
            env,
            &one_frame(),
        );
        assert_eq!(out.status.code(), Some(1), "{options:?}: {}", text(&out));
        assert!(out.stderr.contains("cannot connect to"), "{}", text(&out));
    }
}

#[test]
fn tls_with_a_ca_and_client_certificates_lets_in_only_the_fleet() {
    let certs = Certificates::generate();
    let server = NatsServer::start(ServerOptions::new().tls(&certs, true));
    let url = server.url();
    let ca = certs.ca().display().to_string();
    let (cert, key) = certs.client();
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let (rogue_cert, rogue_key) = certs.rogue_client();
    let (rogue_cert, rogue_key) = (
        rogue_cert.display().to_string(),
        rogue_key.display().to_string(),
    );
    let rogue_ca = certs.rogue_ca().display().to_string();
    logs_in(
        &url,
        &["--tls-ca", &ca, "--tls-cert", &cert, "--tls-key", &key],
        &[],
        &[
            // No client certificate: the server refuses.
            (&["--tls-ca", &ca], &[]),
            // A certificate of another CA: refused.
            (
                &[
                    "--tls-ca",
                    &ca,
                    "--tls-cert",
                    &rogue_cert,
                    "--tls-key",
                    &rogue_key,
                ],
                &[],
            ),
            // The server's certificate is not trusted by this CA.
            (
                &[
                    "--tls-ca",
                    &rogue_ca,
                    "--tls-cert",
                    &cert,
                    "--tls-key",
                    &key,
                ],
                &[],
            ),
            // No TLS at all.
            (&[], &[]),
        ],
    );
    // A certificate without its key is a usage error; a missing file too.
    let out = mframe(&["pub", &url, "--tls-cert", &cert, "-"], &[], b"");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = mframe(
        &["pub", &url, "--tls-ca", "/nonexistent/ca.pem", "-"],
        &[],
        b"",
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cannot read `/nonexistent/ca.pem`"));
    println!("tls: 1 client with a fleet certificate admitted; 4 without (none, another CA's, an untrusted server, no TLS) refused");
}

#[test]
fn an_nkey_seed_and_a_creds_file_log_in() {
    let dir = tempfile::tempdir().unwrap();
    let user = NkeyUser::generate();
    let seed = dir.path().join("user.nk");
    std::fs::write(&seed, format!("# a user seed\n{}\n", user.seed())).unwrap();
    let other = NkeyUser::generate();
    let other_seed = dir.path().join("other.nk");
    std::fs::write(&other_seed, other.seed()).unwrap();
    let server = NatsServer::start(ServerOptions::new().nkey_user(&user));
    let (seed, other_seed) = (seed.display().to_string(), other_seed.display().to_string());
    logs_in(
        &server.url(),
        &["--nkey", &seed],
        &[],
        &[(&["--nkey", &other_seed], &[]), (&[], &[])],
    );

    // Decentralized auth: operator, account and user JWTs; the user's
    // .creds file.
    let operator = Operator::generate();
    let creds = dir.path().join("user.creds");
    std::fs::write(&creds, operator.creds()).unwrap();
    let server = NatsServer::start(ServerOptions::new().operator(&operator));
    let creds = creds.display().to_string();
    // Another operator's user, and no credentials: refused.
    let stranger = Operator::generate();
    let stranger_creds = dir.path().join("stranger.creds");
    std::fs::write(&stranger_creds, stranger.creds()).unwrap();
    let stranger_creds = stranger_creds.display().to_string();
    logs_in(
        &server.url(),
        &["--creds", &creds],
        &[],
        &[(&["--creds", &stranger_creds], &[]), (&[], &[])],
    );
    // Neither file's secret is ever printed.
    let out = mframe(
        &["pub", &server.url(), "--creds", &stranger_creds, "-"],
        &[],
        b"",
    );
    assert!(!text(&out).contains(&stranger.creds()[40..80]));
}

#[test]
fn user_password_and_token_come_from_the_environment() {
    let server = NatsServer::start(ServerOptions::new().user_password("ground", "s3cretpw"));
    logs_in(
        &server.url(),
        &[],
        &[("NATS_USER", "ground"), ("NATS_PASSWORD", "s3cretpw")],
        &[
            (
                &[],
                &[("NATS_USER", "ground"), ("NATS_PASSWORD", "wrongpw")],
            ),
            (&[], &[]),
        ],
    );
    // Half a login is a usage error.
    let out = mframe(
        &["pub", &server.url(), "-"],
        &[("NATS_USER", "ground")],
        b"",
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("NATS_USER is set but NATS_PASSWORD is not"));

    let server = NatsServer::start(ServerOptions::new().token("t0kenvalue"));
    logs_in(
        &server.url(),
        &[],
        &[("NATS_TOKEN", "t0kenvalue")],
        &[(&[], &[("NATS_TOKEN", "other")])],
    );
}

#[test]
fn a_bad_password_never_appears_in_any_output() {
    const SECRET: &str = "Hunter2Secret";
    let server = NatsServer::start(ServerOptions::new().user_password("ground", "rightpw"));
    let port = server.port();
    let mut outputs = Vec::new();
    // A well-formed URL with a wrong password: refused by the server.
    let url = format!("nats://ground:{SECRET}@127.0.0.1:{port}");
    for args in [
        vec!["pub", &url, "-"],
        vec!["sub", &url],
        vec!["record", &url, "-o", "/dev/null"],
        vec!["replay", "-", "--to", &url],
    ] {
        let out = mframe(&args, &[], &one_frame());
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("authorization violation"),
            "{}",
            text(&out)
        );
        outputs.push(out);
    }
    // Malformed URLs holding the password: clap's usage errors.
    for bad in [
        format!("nats://ground:{SECRET}@127.0.0.1:99999"),
        format!("http://ground:{SECRET}@127.0.0.1:{port}"),
        format!("nats://ground:{SECRET}@"),
        format!("nats://{SECRET}@:4222"),
        format!("nats://ground:{SECRET}@127.0.0.1:{port},nats://x:{SECRET}@:1"),
    ] {
        for args in [
            vec!["pub", &bad, "-"],
            vec!["sub", &bad],
            vec!["replay", "-", "--to", &bad],
            vec!["replay", &bad, "--stream", "S"],
        ] {
            let out = mframe(&args, &[], b"");
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
            assert!(text(&out).contains("***"), "{}", text(&out));
            outputs.push(out);
        }
    }
    // From the environment.
    let out = mframe(
        &["sub", &server.url()],
        &[("NATS_USER", "ground"), ("NATS_PASSWORD", SECRET)],
        b"",
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    outputs.push(out);
    let out = mframe(&["pub", &server.url(), "-"], &[("NATS_TOKEN", SECRET)], b"");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    outputs.push(out);
    // A good login whose connection breaks: events and reports.
    let mut server = server;
    let good = format!("nats://ground:rightpw@127.0.0.1:{port}");
    let mut sub = Proc::spawn(&["sub", &good]);
    sub.stderr_line("subscribed to");
    server.kill();
    sub.stderr_line("cannot reconnect");
    sub.signal("TERM");
    assert!(sub.wait().success());
    let sub_text = sub.stderr_text();
    assert!(!sub_text.contains("rightpw"), "{sub_text}");
    for out in &outputs {
        assert!(!text(out).contains(SECRET), "{}", text(out));
    }
    println!(
        "redaction: {} runs with a wrong or malformed password, none printed it",
        outputs.len()
    );
}

/// A frame whose header says (target, type, source), published raw on
/// `subject`.
fn raw_publish(url: &str, subject: &str, frame: &[u8]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = async_nats::connect(url).await.unwrap();
        client
            .publish(subject.to_owned(), frame.to_vec().into())
            .await
            .unwrap();
        client.flush().await.unwrap();
    });
}

#[test]
fn a_subject_that_contradicts_the_header_does_not_pass_the_filters() {
    let server = NatsServer::start(ServerOptions::new().jetstream());
    let url = server.url();
    mframe(
        &["record", &url, "--prefix", "hf", "--stream", "HF"],
        &[],
        b"",
    );
    let liar = Frame::new(Header::new(1, 7, 60, 5).with_counter(1))
        .encode()
        .unwrap();
    let honest = Frame::new(Header::new(1, 7, 60, 9).with_counter(2))
        .encode()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("rec.mfb").display().to_string();
    let mut sub = Proc::spawn(&[
        "sub", &url, "--prefix", "hf", "--target", "9", "--count", "1",
    ]);
    sub.stderr_line("subscribed to");
    let mut record = Proc::spawn(&[
        "record", &url, "--prefix", "hf", "--target", "9", "-o", &recording, "--count", "1",
    ]);
    record.stderr_line("subscribed to");
    // Target 5 in the header, published under target 9's subject.
    raw_publish(&url, "hf.9.7.60", &liar);
    raw_publish(&url, "hf.9.7.60", &honest);
    let line = sub.stdout_line(WAIT).unwrap();
    assert!(line.contains("\"counter\":2,"), "{line}");
    assert!(sub.wait().success());
    assert!(record.wait().success());
    for (proc, name) in [(&sub, "sub"), (&record, "record")] {
        let err = proc.stderr_text();
        assert!(
            err.contains(
                "has target 5, type 7, source 60 in its header, which the filters do not pass"
            ),
            "{name}: {err}"
        );
        assert!(
            err.contains("1 frame skipped whose header does not pass the filters"),
            "{name}: {err}"
        );
    }
    assert_eq!(std::fs::read(&recording).unwrap(), honest);
    let replay = mframe(
        &[
            "replay", &url, "--stream", "HF", "--prefix", "hf", "--target", "9",
        ],
        &[],
        b"",
    );
    assert!(replay.status.success(), "{}", text(&replay));
    let lines = String::from_utf8_lossy(&replay.stdout);
    assert_eq!(lines.lines().count(), 1, "{lines}");
    assert!(lines.contains("\"counter\":2,"));
    assert!(text(&replay).contains("1 frame skipped whose header does not pass the filters"));
}

/// The resident memory of a process, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[test]
fn sub_with_a_stdout_nobody_reads_stays_bounded_and_ends_on_sigterm_with_its_report() {
    let server = NatsServer::start(ServerOptions::new());
    let url = server.url();
    // stdout is a pipe nobody reads: it fills (64 KiB), then every write
    // blocks.
    let mut child = Command::new(env!("CARGO_BIN_EXE_mframe"))
        .args(["sub", &url, "--prefix", "st", "--max-pending", "2000000"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + WAIT;
    loop {
        let line = rx.recv_timeout(WAIT).expect("sub says it is subscribed");
        if line.contains("subscribed to") {
            break;
        }
        assert!(Instant::now() < deadline);
    }
    // 300 MB of frames: 30,000 of 10 kB.
    let frames = 30_000u64;
    let mut frame = Frame::new(Header::new(1, 2, 3, 4));
    frame.add_attachment("blob", vec![0xAB; 10_000]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut peak = 0;
    rt.block_on(async {
        let client = async_nats::connect(&url).await.unwrap();
        for i in 0..frames {
            let mut f = frame.clone();
            f.header_mut().set_counter(i);
            client
                .publish("st.4.2.3", f.encode().unwrap().into())
                .await
                .unwrap();
            if i % 1000 == 0 {
                client.flush().await.unwrap();
                peak = peak.max(rss(child.id()));
            }
        }
        client.flush().await.unwrap();
    });
    thread::sleep(Duration::from_millis(300));
    peak = peak.max(rss(child.id()));
    let sent = Instant::now();
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "sub did not end within 5 s of SIGTERM"
        );
        thread::sleep(Duration::from_millis(20));
    };
    let took = sent.elapsed();
    assert!(status.success(), "{status:?}");
    let report: Vec<String> = rx.try_iter().collect();
    let report = report.join("\n");
    assert!(report.contains("sub: stopped"), "{report}");
    assert!(
        report.contains("dropped because the output did not keep up"),
        "{report}"
    );
    println!(
        "stalled stdout: {frames} frames of 10 kB published ({} MB); sub's peak RSS {} MB \
         (--max-pending 2 MB); ended {} ms after SIGTERM; report: {report}",
        frames * 10_000 / 1_000_000,
        peak / 1_000_000,
        took.as_millis()
    );
    assert!(peak < 150_000_000, "peak RSS {peak} bytes");
}

#[test]
fn a_replay_into_a_stdout_nobody_reads_waits_and_ends_on_sigterm_with_its_report() {
    let server = NatsServer::start(ServerOptions::new().jetstream());
    let url = server.url();
    let created = mframe(
        &["record", &url, "--prefix", "rp", "--stream", "RP"],
        &[],
        b"",
    );
    assert!(created.status.success(), "{}", text(&created));
    // 2,000 frames of 10 kB: 20 MB recorded.
    let mut input = Vec::new();
    for i in 0..2_000u64 {
        let mut frame = Frame::new(Header::new(1, 2, 3, 4).with_counter(i));
        frame.add_attachment("blob", vec![0xCD; 10_000]);
        input.extend(frame.encode().unwrap());
    }
    let published = mframe(&["pub", &url, "--prefix", "rp", "-"], &[], &input);
    assert!(published.status.success(), "{}", text(&published));
    let mut replay = Proc::spawn_blocked_stdout(&[
        "replay",
        &url,
        "--stream",
        "RP",
        "--prefix",
        "rp",
        "--max-pending",
        "1000000",
    ]);
    // It fills the pipe and the queue, then waits.
    thread::sleep(Duration::from_millis(1500));
    let peak = rss(replay.pid());
    let sent = Instant::now();
    replay.signal("TERM");
    let status = replay.wait();
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert!(status.success(), "{status:?}: {}", replay.stderr_text());
    let err = replay.stderr_text();
    assert!(err.contains("replay: replayed"), "{err}");
    assert!(
        err.contains("received but not written (the output was blocked)"),
        "{err}"
    );
    println!(
        "replay into a blocked stdout: 2,000 frames of 10 kB in the stream, peak RSS {} MB \
         (--max-pending 1 MB), ended {} ms after SIGTERM: {}",
        peak / 1_000_000,
        took.as_millis(),
        err.lines().last().unwrap_or_default()
    );
    assert!(peak < 100_000_000, "{peak}");
}
