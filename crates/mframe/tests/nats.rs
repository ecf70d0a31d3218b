//! `mframe pub`, `sub`, `record` and `replay` as real processes against
//! real `nats-server`s on loopback, started by messageframe-testkit (on
//! ports they pick; killed when the test ends). Without nats-server the
//! tests fail and say how to install it; they never skip. Every wait is
//! bounded (support::WAIT), every process killed if a test leaves it
//! running.

mod support;

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use messageframe::{Frame, Header};
use messageframe_nats::async_nats;
use messageframe_testkit::{NatsServer, ServerOptions};
use support::{numbered_frame, run_to_end, Proc, Run, WAIT};

/// Runs `mframe ARGS` with `stdin` to its end, within [`WAIT`] (killed and
/// failed otherwise).
fn run(args: &[&str], stdin: &[u8]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mframe"));
    command.args(args);
    run_to_end(command, stdin)
}

/// A fresh directory for one test's files.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mframe-nats-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Every golden frame of the C++ interop set, sorted by name.
fn golden_frames() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../messageframe/tests/data/interop");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mfb"))
        .collect();
    paths.sort();
    assert_eq!(paths.len(), 11, "every interop frame is found");
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

fn header(frame: &[u8]) -> Header {
    Header::peek(frame).unwrap()
}

/// What `mframe dump ARGS` prints for these frames.
fn dump(frames: &[Vec<u8>], args: &[&str]) -> Vec<String> {
    run(&[&["dump"], args].concat(), &frames.concat())
        .ok()
        .lines()
}

/// `mframe sub URL ARGS`, once it has said that it is subscribed.
fn sub(url: &str, args: &[&str]) -> Proc {
    let proc = Proc::spawn(&[&["sub", url], args].concat());
    proc.stderr_line("subscribed to");
    proc
}

/// Frame `counter` of a test's own stream, timestamped `counter` ms apart.
fn frame(counter: u64, target: u32) -> Vec<u8> {
    let mut frame = Frame::new(
        Header::new(100, 7, 60, target)
            .with_counter(counter)
            .with_timestamp(1_700_000_000_000 + counter),
    );
    frame.add("gps", "fix", counter as i64);
    frame.encode().expect("the frame encodes")
}

fn counters(lines: &[String]) -> Vec<u64> {
    lines
        .iter()
        .map(|l| {
            let json: serde_json::Value = serde_json::from_str(l).unwrap();
            json["header"]["counter"].as_u64().unwrap()
        })
        .collect()
}

/// The durable consumers of a stream, asked of the server.
fn consumers(url: &str, stream: &str) -> BTreeSet<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = async_nats::connect(url).await.unwrap();
        let js = async_nats::jetstream::new(client);
        let stream = js.get_stream(stream).await.unwrap();
        stream.consumer_names().map(Result::unwrap).collect().await
    })
}

#[test]
fn every_golden_frame_goes_from_pub_to_sub_byte_exact_through_header_filters() {
    let server = NatsServer::start(ServerOptions::new());
    let url = server.url();
    let mut frames = golden_frames();
    let mut negative = Frame::new(Header::new(7, -5, 60, 61));
    negative.add("t", "v", 1i64);
    frames.push(negative.encode().expect("the frame encodes"));

    // (target, type, source) filters; each sub also gets a sentinel made
    // to pass its filter (777 in the open fields), published last: a frame
    // a filter should have kept out would show up before it.
    let filters: [(Option<u32>, Option<i32>, Option<u32>); 7] = [
        (None, None, None),
        (Some(4), None, None),
        (None, Some(1), None),
        (None, None, Some(3)),
        (Some(4), Some(1), Some(3)),
        (Some(99), None, Some(50)),
        (None, Some(-5), None),
    ];
    for (k, (t, m, s)) in filters.iter().enumerate() {
        let header = Header::new(
            9000 + k as i32,
            m.unwrap_or(777),
            s.unwrap_or(777),
            t.unwrap_or(777),
        );
        frames.push(Frame::new(header).encode().expect("the frame encodes"));
    }
    let passes = |(t, m, s): (Option<u32>, Option<i32>, Option<u32>), h: &Header| {
        t.is_none_or(|t| t == h.target())
            && m.is_none_or(|m| m == h.message_type())
            && s.is_none_or(|s| s == h.source())
    };

    let mut subs = Vec::new();
    for &(t, m, s) in &filters {
        let expected: Vec<Vec<u8>> = frames
            .iter()
            .filter(|f| passes((t, m, s), &header(f)))
            .cloned()
            .collect();
        let mut args = vec![
            "--prefix".to_owned(),
            "golden".to_owned(),
            "--with-data".to_owned(),
        ];
        args.extend(t.map(|t| format!("--target={t}")));
        args.extend(m.map(|m| format!("--type={m}")));
        args.extend(s.map(|s| format!("--source={s}")));
        args.extend(["--count".to_owned(), expected.len().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        subs.push((sub(&url, &args), expected, args.join(" ")));
    }
    // The unfiltered sub gets everything; filters each get some, never none.
    assert_eq!(subs[0].1.len(), frames.len());
    assert!(subs.iter().all(|(_, e, _)| e.len() >= 2));

    let dir = scratch("golden");
    let file = write(&dir, "golden.mfb", &frames.concat());
    let publish = run(&["pub", &url, "--prefix", "golden", &file], b"").ok();
    assert!(
        publish.stderr.contains(&format!(
            "published {} frames to {url} under prefix `golden` ({} bytes)",
            frames.len(),
            frames.concat().len()
        )),
        "{}",
        publish.stderr
    );
    assert!(publish.stdout.is_empty(), "stdout carries only frames");

    for (mut sub, expected, args) in subs {
        let lines = sub.stdout_lines(expected.len());
        assert!(sub.wait().success(), "sub {args}: {}", sub.stderr_text());
        assert!(
            sub.stdout_rest().is_empty(),
            "sub {args}: nothing after --count"
        );
        // The lines are dump's, byte for byte...
        assert_eq!(lines, dump(&expected, &["--with-data"]), "sub {args}");
        // ...and `encode` turns them back into the very bytes published.
        let encoded = run(&["encode"], (lines.join("\n") + "\n").as_bytes()).ok();
        assert_eq!(encoded.stdout, expected.concat(), "sub {args} | encode");
        assert!(
            sub.stderr_text().contains(&format!(
                "sub: stopped: {} frames, 0 malformed",
                expected.len()
            )),
            "{}",
            sub.stderr_text()
        );
    }
}

#[test]
fn sub_prints_like_dump_and_pub_publishes_stdin_as_it_arrives() {
    let server = NatsServer::start(ServerOptions::new());
    let url = server.url();
    let golden = golden_frames();
    // The default prefix, and --pretty.
    let mut pretty = sub(&url, &["--pretty", "--count", "2"]);
    assert!(pretty
        .stderr_text()
        .contains("subscribed to `frames.*.*.*`"));
    let mut json = sub(&url, &["--target", "99"]);
    let mut publish = Proc::spawn(&["pub", &url, "-"]);
    // basic.mfb (target 99): it arrives while pub's stdin stays open.
    publish.write_stdin(&golden[1]);
    let line = json.stdout_line(WAIT).expect("a frame published live");
    assert_eq!(vec![line], dump(&golden[1..2], &[]));
    publish.write_stdin(&golden[0]);
    assert!(publish.wait().success(), "{}", publish.stderr_text());
    assert!(publish.stderr_text().contains("pub: published 2 frames to"));
    // The pretty view numbers frames as dump does for a stream.
    assert!(pretty.wait().success());
    let expected = dump(&[golden[1].clone(), golden[0].clone()], &["--pretty"]);
    assert_eq!(pretty.stdout_rest(), expected);
    json.signal("INT");
    assert!(json.wait().success());
    assert!(json
        .stderr_text()
        .ends_with("sub: stopped: 1 frame, 0 malformed payloads skipped"));
}

#[test]
fn a_malformed_payload_is_reported_with_its_subject_and_sub_goes_on() {
    let server = NatsServer::start(ServerOptions::new());
    let url = server.url();
    let mut sub = sub(&url, &["--prefix", "mal", "--count", "1"]);
    let good = numbered_frame(3, 9, 4).encode().expect("the frame encodes");
    let mut cut = good.clone();
    cut.truncate(good.len() - 3);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = async_nats::connect(&url).await.unwrap();
        client
            .publish("mal.4.2.3", b"not a frame".to_vec().into())
            .await
            .unwrap();
        client.publish("mal.4.2.3", cut.into()).await.unwrap();
        client.publish("mal.4.2.3", good.into()).await.unwrap();
        client.flush().await.unwrap();
    });
    let line = sub
        .stdout_line(WAIT)
        .expect("the good frame after the bad ones");
    assert!(
        line.contains("\"counter\":9,\"source\":3,\"target\":4"),
        "{line}"
    );
    assert!(sub.wait().success());
    let err = sub.stderr_text();
    let bad: Vec<&str> = err.lines().filter(|l| l.contains("malformed")).collect();
    assert_eq!(bad.len(), 3, "{err}");
    assert!(
        bad[0].starts_with("mframe: sub: malformed frame on subject `mal.4.2.3`: "),
        "{err}"
    );
    assert!(bad[0].ends_with("(skipped)"), "{err}");
    assert!(bad[1].contains("truncated"), "{err}");
    assert!(
        bad[2].contains("sub: stopped: 1 frame, 2 malformed payloads skipped"),
        "{err}"
    );
}

#[test]
fn record_to_a_file_then_replay_it_to_stdout_a_file_and_nats() {
    let server = NatsServer::start(ServerOptions::new());
    let url = server.url();
    let dir = scratch("record-file");
    let recording = dir.join("rec.mfb");
    let recording = recording.to_str().unwrap();
    // Frames 0..6 alternate targets 1 and 2; the recorder keeps target 2.
    let all: Vec<Vec<u8>> = (0..6).map(|c| frame(c * 150, 1 + (c % 2) as u32)).collect();
    let kept: Vec<Vec<u8>> = all
        .iter()
        .filter(|f| header(f).target() == 2)
        .cloned()
        .collect();
    let mut record = Proc::spawn(&[
        "record", &url, "--prefix", "rf", "--target", "2", "-o", recording, "--count", "3",
    ]);
    record.stderr_line("subscribed to `rf.2.*.*`");
    let input = write(&dir, "all.mfb", &all.concat());
    run(&["pub", &url, "--prefix", "rf", &input], b"").ok();
    assert!(record.wait().success(), "{}", record.stderr_text());
    assert!(record.stderr_text().contains(&format!(
        "record: recorded 3 frames ({} bytes) to {recording}, 0 malformed payloads skipped",
        kept.concat().len()
    )));
    assert_eq!(std::fs::read(recording).unwrap(), kept.concat());

    // To stdout: dump's lines, with the filters and --with-data.
    let replay = run(&["replay", recording, "--with-data"], b"").ok();
    assert_eq!(replay.lines(), dump(&kept, &["--with-data"]));
    assert!(replay.stderr.contains(&format!(
        "replay: replayed 3 of 3 frames from {recording} to stdout"
    )));
    let one = run(
        &[
            "replay", recording, "--source", "60", "--type", "7", "--target", "9",
        ],
        b"",
    )
    .ok();
    assert!(one.lines().is_empty());
    // From stdin to a file, and to stdout as frames.
    let copy = dir.join("copy.mfb");
    run(
        &["replay", "-", "-o", copy.to_str().unwrap()],
        &kept.concat(),
    )
    .ok();
    assert_eq!(std::fs::read(&copy).unwrap(), kept.concat());
    let piped = run(&["replay", recording, "-o", "-"], b"").ok();
    assert_eq!(piped.stdout, kept.concat());
    // To NATS under another prefix (--prefix names it, from a file).
    let mut copies = sub(&url, &["--prefix", "rf-copy", "--count", "3"]);
    let sent = run(
        &["replay", recording, "--to", &url, "--prefix", "rf-copy"],
        b"",
    )
    .ok();
    assert!(
        sent.stderr.contains("to nats://127.0.0.1:"),
        "{}",
        sent.stderr
    );
    assert!(
        sent.stderr.contains("under prefix `rf-copy`"),
        "{}",
        sent.stderr
    );
    assert_eq!(copies.stdout_lines(3), dump(&kept, &[]));
    assert!(copies.wait().success());

    // --pace original keeps the header timestamps' spacing (300 ms from
    // the first to the last kept frame): it cannot take less.
    let started = Instant::now();
    let paced = run(&["replay", recording, "--pace", "original"], b"").ok();
    assert_eq!(counters(&paced.lines()), [150, 450, 750]);
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn record_into_jetstream_then_replay_from_a_sequence_and_a_time() {
    let server = NatsServer::start(ServerOptions::new().jetstream());
    let url = server.url();
    let created = run(&["record", &url, "--prefix", "js", "--stream", "REC"], b"").ok();
    assert!(created
        .stderr
        .contains("record: created stream `REC` capturing `js.>`"));
    assert!(created.stderr.contains("stream `REC` holds no frames"));

    let dir = scratch("record-stream");
    let first: Vec<Vec<u8>> = (0..3).map(|c| frame(c, 1 + (c % 2) as u32)).collect();
    let second: Vec<Vec<u8>> = (3..6).map(|c| frame(c, 1 + (c % 2) as u32)).collect();
    let file = write(&dir, "first.mfb", &first.concat());
    run(&["pub", &url, "--prefix", "js", &file], b"").ok();
    // The server stores frames with its own clock (this machine's): a
    // moment on either side of `since` keeps the two batches apart.
    thread::sleep(Duration::from_millis(300));
    let since = time::OffsetDateTime::from(SystemTime::now())
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    thread::sleep(Duration::from_millis(300));
    let file = write(&dir, "second.mfb", &second.concat());
    run(&["pub", &url, "--prefix", "js", &file], b"").ok();
    let everything = [first.clone(), second.clone()].concat();

    let stream = ["replay", &url, "--stream", "REC", "--prefix", "js"];
    let all = run(&stream, b"").ok();
    assert_eq!(all.lines(), dump(&everything, &[]));
    assert!(
        all.stderr.contains(
            "replay: replayed 6 frames (sequences 1..=6) from stream `REC` to stdout, 0 malformed"
        ),
        "{}",
        all.stderr
    );
    let from_seq = run(&[&stream[..], &["--from-seq", "5"]].concat(), b"").ok();
    assert_eq!(counters(&from_seq.lines()), [4, 5]);
    let from_time = run(&[&stream[..], &["--from-time", &since]].concat(), b"").ok();
    assert_eq!(counters(&from_time.lines()), [3, 4, 5], "from {since}");
    let filtered = run(
        &[&stream[..], &["--from-seq", "2", "--target", "2"]].concat(),
        b"",
    )
    .ok();
    assert_eq!(counters(&filtered.lines()), [1, 3, 5]);
    let out = dir.join("out.mfb");
    run(&[&stream[..], &["-o", out.to_str().unwrap()]].concat(), b"").ok();
    assert_eq!(std::fs::read(&out).unwrap(), everything.concat());
    // Each of those replays read through a consumer of its own, deleted
    // when it ended.
    assert_eq!(consumers(&url, "REC"), BTreeSet::new());

    // Republished under another prefix, outside the recorded one.
    let mut copies = sub(&url, &["--prefix", "js-copy", "--count", "6"]);
    run(
        &[&stream[..], &["--to", &url, "--to-prefix", "js-copy"]].concat(),
        b"",
    )
    .ok();
    assert_eq!(copies.stdout_lines(6), dump(&everything, &[]));
    assert!(copies.wait().success());
    // Never into the recorded prefix: that would record every frame again.
    for to_prefix in [
        &[][..],
        &["--to-prefix", "js"],
        &["--to-prefix", "js.again"],
    ] {
        let refused = run(&[&stream[..], &["--to", &url], to_prefix].concat(), b"");
        assert_eq!(refused.code(), Some(2), "{to_prefix:?}: {}", refused.stderr);
        assert!(
            refused.stderr.contains("record every"),
            "{}",
            refused.stderr
        );
    }

    // A named durable is kept and resumes where it stopped.
    let durable = [&stream[..], &["--durable", "keep"]].concat();
    assert_eq!(
        counters(&run(&durable, b"").ok().lines()),
        [0, 1, 2, 3, 4, 5]
    );
    let file = write(&dir, "third.mfb", &frame(6, 1));
    run(&["pub", &url, "--prefix", "js", &file], b"").ok();
    assert_eq!(counters(&run(&durable, b"").ok().lines()), [6]);
    assert_eq!(consumers(&url, "REC"), BTreeSet::from(["keep".to_owned()]));

    // The stream exists now: its settings are kept.
    let again = run(
        &[
            "record",
            &url,
            "--prefix",
            "js",
            "--stream",
            "REC",
            "--max-age",
            "1h",
        ],
        b"",
    )
    .ok();
    assert!(
        again
            .stderr
            .contains("stream `REC` exists and captures `js.>`; its own settings are kept"),
        "{}",
        again.stderr
    );
    assert!(again.stderr.contains("holds 7 frames"), "{}", again.stderr);
    // Wrong names and prefixes are clear errors.
    let missing = run(&["replay", &url, "--stream", "NOPE"], b"");
    assert_eq!(missing.code(), Some(1));
    assert!(
        missing
            .stderr
            .contains("there is no JetStream stream `NOPE`"),
        "{}",
        missing.stderr
    );
    let wrong = run(&["replay", &url, "--stream", "REC"], b"");
    assert_eq!(wrong.code(), Some(1));
    assert!(
        wrong.stderr.contains("(its prefix: --prefix js)"),
        "{}",
        wrong.stderr
    );
}

#[test]
fn sub_reports_a_server_restart_and_frames_flow_again() {
    let mut server = NatsServer::start(ServerOptions::new());
    let url = server.url();
    let mut sub = sub(&url, &["--prefix", "re"]);
    let dir = scratch("restart");
    let file = write(
        &dir,
        "one.mfb",
        &numbered_frame(1, 0, 1).encode().expect("the frame encodes"),
    );
    run(&["pub", &url, "--prefix", "re", &file], b"").ok();
    sub.stdout_line(WAIT).expect("a frame before the restart");

    server.kill();
    sub.stderr_line("mframe: nats: disconnected");
    thread::sleep(Duration::from_millis(300));
    server.restart();
    sub.stderr_line("mframe: nats: reconnected");
    // The subscription is renewed as the client reconnects; publish until
    // a frame gets through (bounded).
    let deadline = Instant::now() + WAIT;
    loop {
        run(&["pub", &url, "--prefix", "re", &file], b"").ok();
        if sub.stdout_line(Duration::from_millis(200)).is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "no frame after the restart");
    }
    sub.signal("TERM");
    assert!(sub.wait().success());
    assert!(sub.stdout_rest().len() <= 1);
    // The cause of the failed attempts, once (issue 24: "client error:
    // nats: IO error" ten times, no cause); the count with the
    // reconnection.
    let err = sub.stderr_text();
    assert_eq!(
        err.matches("nats: cannot reconnect: nats://127.0.0.1:")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("Connection refused"), "{err}");
    assert!(!err.contains("client error"), "{err}");
    assert!(err.contains("failed before)"), "{err}");
}

#[test]
fn pub_stops_at_a_frame_over_max_payload_naming_the_limit_or_at_an_invalid_frame() {
    let server = NatsServer::start(ServerOptions::new().max_payload(4096));
    let url = server.url();
    let small = numbered_frame(1, 0, 1).encode().expect("the frame encodes");
    let mut big = Frame::new(Header::new(1, 2, 1, 1).with_counter(1));
    big.add_attachment("blob", vec![0u8; 5000]);
    let big = big.encode().expect("the frame encodes");
    let mut sub = sub(&url, &["--count", "1"]);
    let dir = scratch("max-payload");
    let file = write(
        &dir,
        "big.mfb",
        &[small.clone(), big.clone(), small.clone()].concat(),
    );
    for args in [
        vec!["pub", &url, &file],
        vec!["replay", &file, "--to", &url],
    ] {
        let refused = run(&args, b"");
        assert_eq!(refused.code(), Some(1), "{args:?}");
        assert_eq!(
            refused.stderr.trim_end(),
            format!(
                "mframe: {file}: frame 1 (starts at byte {}): frame of {} bytes exceeds the \
                 server's max_payload of 4096 bytes and was not sent: raise `max_payload` in the \
                 nats-server configuration (for example `max_payload: 8MB`; the server accepts at \
                 most 64MB) or send smaller frames",
                small.len(),
                big.len()
            ),
            "{args:?}"
        );
    }
    // The frame before the big one was published.
    let line = sub.stdout_line(WAIT).expect("the frame before the big one");
    assert!(line.contains("\"counter\":0,\"source\":1,"), "{line}");
    assert!(sub.wait().success());

    // An invalid frame stops pub with validate's message, after the frames
    // before it (read from stdin here, the `--type -5` form of a filter).
    let mut sub = Proc::spawn(&["sub", &url, "--type", "-5", "--count", "1"]);
    sub.stderr_line("subscribed to `frames.*.-5.*`");
    let good = Frame::new(Header::new(1, -5, 1, 1))
        .encode()
        .expect("the frame encodes");
    let input = [&good[..], b"\x00garbage"].concat();
    let invalid = run(&["pub", &url, "-"], &input);
    assert_eq!(invalid.code(), Some(1));
    assert_eq!(
        invalid.stderr.trim_end(),
        format!(
            "mframe: <stdin>: frame 1 (starts at byte {0}): expected an array, found marker 0x00 at byte {0} (in frame)",
            good.len()
        )
    );
    assert!(sub
        .stdout_line(WAIT)
        .unwrap()
        .contains("\"message_type\":-5,"));
    assert!(sub.wait().success());
}

#[test]
fn bad_urls_prefixes_and_unreachable_servers_are_clear_errors() {
    for url in [
        "http://127.0.0.1:4222",
        "127.0.0.1:4222",
        "nats://",
        "nats://:4222",
        "nats://h:99999",
    ] {
        for args in [
            vec!["sub", url],
            vec!["pub", url, "-"],
            vec!["record", url, "-o", "x"],
            vec!["replay", "-", "--to", url],
        ] {
            let refused = run(&args, b"");
            assert_eq!(refused.code(), Some(2), "{args:?}: {}", refused.stderr);
            assert!(
                refused.stderr.contains(&format!("invalid value '{url}'")),
                "{}",
                refused.stderr
            );
        }
    }
    let refused = run(&["sub", "nats://127.0.0.1:4222", "--prefix", "a.>"], b"");
    assert_eq!(refused.code(), Some(2));
    assert!(
        refused
            .stderr
            .contains("invalid subject prefix `a.>`: `>` at byte 2"),
        "{}",
        refused.stderr
    );
    for args in [
        &["record", "nats://127.0.0.1:4222"][..],
        &[
            "record",
            "nats://127.0.0.1:4222",
            "--stream",
            "S",
            "--target",
            "1",
        ],
        &["record", "nats://127.0.0.1:4222", "--stream", "a.b"],
        &["replay", "x.mfb", "--from-seq", "3"],
        &["replay", "nats://127.0.0.1:4222"],
    ] {
        assert_eq!(run(args, b"").code(), Some(2), "{args:?}");
    }

    // Port 0 is never listened on: refused at once.
    let refused = run(&["sub", "nats://127.0.0.1:0"], b"");
    assert_eq!(refused.code(), Some(1));
    assert!(
        refused
            .stderr
            .starts_with("mframe: cannot connect to nats://127.0.0.1:0: "),
        "{}",
        refused.stderr
    );
    // A server that accepts and never speaks: given up after the timeout.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("nats://{}", silent.local_addr().unwrap());
    for args in [vec!["pub", &silent_url, "-"], vec!["sub", &silent_url]] {
        let timed_out = run(&[&args[..], &["--connect-timeout", "0.5"]].concat(), b"");
        assert_eq!(timed_out.code(), Some(1));
        assert_eq!(
            timed_out.stderr.trim_end(),
            format!("mframe: cannot connect to {silent_url}: no NATS server answered within 0.5 s (--connect-timeout)")
        );
    }
    // JetStream is not enabled on this server.
    let server = NatsServer::start(ServerOptions::new());
    let no_js = run(&["record", &server.url(), "--stream", "S"], b"");
    assert_eq!(no_js.code(), Some(1));
    assert!(
        no_js.stderr.contains("is JetStream enabled on the server?"),
        "{}",
        no_js.stderr
    );
}

#[test]
fn a_following_replay_goes_on_until_ctrl_c_and_leaves_no_consumer_behind() {
    let server = NatsServer::start(ServerOptions::new().jetstream());
    let url = server.url();
    // A stream with settings of its own: in memory, at most 2 frames.
    let created = run(
        &[
            "record",
            &url,
            "--prefix",
            "live",
            "--stream",
            "LIVE",
            "--memory",
            "--max-frames",
            "2",
        ],
        b"",
    )
    .ok();
    assert!(
        created.stderr.contains("created stream `LIVE`"),
        "{}",
        created.stderr
    );
    let dir = scratch("follow");
    let file = write(
        &dir,
        "three.mfb",
        &[frame(0, 1), frame(1, 1), frame(2, 1)].concat(),
    );
    run(&["pub", &url, "--prefix", "live", &file], b"").ok();
    let mut replay = Proc::spawn(&[
        "replay", &url, "--stream", "LIVE", "--prefix", "live", "--follow",
    ]);
    // The oldest frame was dropped (--max-frames 2).
    assert_eq!(counters(&replay.stdout_lines(2)), [1, 2]);
    assert_eq!(consumers(&url, "LIVE").len(), 1);
    // A frame recorded now shows up too; the server URL may list several
    // servers (here one that refuses, then the real one).
    let cluster = format!("nats://127.0.0.1:0,{url}");
    let file = write(&dir, "fourth.mfb", &frame(3, 1));
    run(&["pub", &cluster, "--prefix", "live", &file], b"").ok();
    assert_eq!(counters(&replay.stdout_lines(1)), [3]);
    replay.signal("INT");
    assert!(replay.wait().success(), "{}", replay.stderr_text());
    assert!(replay
        .stderr_text()
        .contains("replay: replayed 3 frames (sequences 2..=4) from stream `LIVE` to stdout"));
    assert_eq!(consumers(&url, "LIVE"), BTreeSet::new());
}

#[test]
fn credentials_in_the_url_log_in_and_are_never_printed() {
    let frame = numbered_frame(5, 1, 6).encode().expect("the frame encodes");
    for (options, good, bad) in [
        (
            ServerOptions::new().user_password("ground", "s3cret"),
            "ground:s3cret@",
            "ground:wrong@",
        ),
        (ServerOptions::new().token("t0ken"), "t0ken@", "other@"),
    ] {
        let server = NatsServer::start(options);
        let port = server.port();
        let url = format!("nats://{good}127.0.0.1:{port}");
        let mut sub = sub(&url, &["--count", "1"]);
        run(&["pub", &url, "-"], &frame).ok();
        assert!(sub.stdout_line(WAIT).unwrap().contains("\"source\":5,"));
        assert!(sub.wait().success());
        let printed = sub.stderr_text();
        assert!(
            printed.contains(&format!("on nats://127.0.0.1:{port}")),
            "{printed}"
        );
        assert!(!printed.contains(good), "{printed}");

        let refused = run(&["sub", &format!("nats://{bad}127.0.0.1:{port}")], b"");
        assert_eq!(refused.code(), Some(1));
        assert!(
            refused.stderr.contains("authorization violation"),
            "{}",
            refused.stderr
        );
        let anonymous = run(&["sub", &format!("nats://127.0.0.1:{port}")], b"");
        assert_eq!(anonymous.code(), Some(1));
    }
}
