//! `mframe` on live streams, as real processes on loopback ports: `dump`
//! reading a pipe, `listen`, `send`, and the relay's routing, errors and
//! report. Every wait is bounded (support::WAIT); ports are picked by
//! binding port 0.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use messageframe::{FrameReader, Header};
use serde_json::Value;
use support::{free_listener, numbered_frame, Proc};

fn interop(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../messageframe/tests/data/interop")
            .join(format!("{name}.mfb")),
    )
    .unwrap()
}

/// Several interop frames back to back, written to a file.
fn stream_file(name: &str) -> (PathBuf, Vec<u8>, usize) {
    let names = ["basic", "sdr", "all_types", "strings", "empty", "doubles"];
    let bytes: Vec<u8> = names.iter().flat_map(|n| interop(n)).collect();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mframe-net-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stream.mfb");
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes, names.len())
}

fn dump_of(path: &Path, args: &[&str]) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mframe"))
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn dump_prints_each_frame_of_a_pipe_as_soon_as_it_is_complete() {
    let a = numbered_frame(1, 0, 5).encode().expect("the frame encodes");
    let b = interop("sdr");
    let mut dump = Proc::spawn(&["dump"]);
    dump.write_stdin(&a);
    // The pipe is still open: the frame shows anyway.
    let line = dump.stdout_line(support::WAIT).expect("the first frame");
    let json: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(json["header"]["source"], 1);
    // Half a frame prints nothing; the rest completes it.
    dump.write_stdin(&b[..b.len() / 2]);
    assert!(dump.stdout_quiet(Duration::from_millis(300)));
    dump.write_stdin(&b[b.len() / 2..]);
    let line = dump.stdout_line(support::WAIT).expect("the second frame");
    assert!(line.contains("\"rx_gain\""), "{line}");
    assert!(dump.wait().success());
    assert_eq!(dump.stderr_text(), "");
}

#[test]
fn header_and_validate_read_a_pipe_frame_by_frame() {
    let mut header = Proc::spawn(&["header"]);
    header.write_stdin(&numbered_frame(3, 7, 9).encode().expect("the frame encodes"));
    let line = header.stdout_line(support::WAIT).expect("a header");
    assert!(
        line.contains("\"counter\":7,\"source\":3,\"target\":9"),
        "{line}"
    );
    assert!(header.wait().success());
    // `header --first` returns once the header is read, even if the pipe
    // stays open.
    let mut first = Proc::spawn(&["header", "--first"]);
    let frame = interop("sdr");
    first.write_stdin(&frame[..40]);
    let line = first.stdout_line(support::WAIT).expect("the first header");
    assert!(line.contains("\"message_id\":1002"), "{line}");
    assert!(first.wait().success());
}

#[test]
fn listen_prints_what_send_sends_exactly_as_dump_does() {
    let (path, bytes, count) = stream_file("listen");
    for style in [&[][..], &["--with-data"], &["--pretty"]] {
        let mut args = vec!["listen", "127.0.0.1:0"];
        args.extend_from_slice(style);
        let mut listen = Proc::spawn(&args);
        let addr = listen.listening_on();
        let mut send = Proc::spawn(&["send", &addr, path.to_str().unwrap()]);
        assert!(send.wait().success(), "{}", send.stderr_text());
        assert!(send.stderr_text().contains(&format!(
            "sent {count} frames ({} bytes) to {addr}",
            bytes.len()
        )));
        let expected = dump_of(&path, &[&["dump"][..], style].concat());
        let got = listen.stdout_lines(expected.len());
        assert_eq!(got, expected, "listen {style:?}");
        listen.stderr_line(&format!("closed after {count} frames"));
        listen.signal("INT");
        assert!(listen.wait().success());
        assert!(
            listen.stdout_rest().is_empty(),
            "stdout carries only frames"
        );
        let err = listen.stderr_text();
        assert!(err.contains(": connected"), "{err}");
        assert!(
            err.contains(&format!("stopped: {count} frames from 1 connection")),
            "{err}"
        );
    }
}

#[test]
fn send_forwards_a_pipe_live_and_listen_takes_many_connections() {
    let mut listen = Proc::spawn(&["listen", "127.0.0.1:0"]);
    let addr = listen.listening_on();
    let mut send = Proc::spawn(&["send", &addr, "-"]);
    for seq in 0..3 {
        send.write_stdin(
            &numbered_frame(7, seq, 1)
                .encode()
                .expect("the frame encodes"),
        );
        // Each frame reaches the listener while send's input stays open.
        let line = listen.stdout_line(support::WAIT).expect("a live frame");
        assert!(line.contains(&format!("\"counter\":{seq},")), "{line}");
    }
    // A second sender at the same time.
    let mut other = Proc::spawn(&["send", &addr, "-"]);
    other.write_stdin(&numbered_frame(8, 0, 1).encode().expect("the frame encodes"));
    let line = listen
        .stdout_line(support::WAIT)
        .expect("the other sender's frame");
    assert!(line.contains("\"source\":8,"), "{line}");
    assert!(other.wait().success());
    assert!(send.wait().success());
    assert!(send.stderr_text().contains("sent 3 frames"));
    listen.signal("TERM");
    assert!(listen.wait().success());
}

#[test]
fn send_refuses_an_invalid_frame_after_sending_those_before_it() {
    let mut listen = Proc::spawn(&["listen", "127.0.0.1:0"]);
    let addr = listen.listening_on();
    let good = numbered_frame(1, 0, 1).encode().expect("the frame encodes");
    let mut input = good.clone();
    input.extend_from_slice(b"\x00garbage");
    let mut send = Proc::spawn(&["send", &addr, "-"]);
    send.write_stdin(&input);
    let status = send.wait();
    assert_eq!(status.code(), Some(1));
    let expected = format!(
        "mframe: <stdin>: frame 1 (starts at byte {}): expected an array, found marker 0x00 at byte {} (in frame)",
        good.len(),
        good.len()
    );
    assert_eq!(send.stderr_text(), expected);
    let line = listen.stdout_line(support::WAIT).expect("the valid frame");
    assert!(line.contains("\"source\":1,"));
    listen.signal("INT");
    assert!(listen.wait().success());
}

#[test]
fn send_to_a_closed_port_fails() {
    // Port 0 is never listened on: a refused connection every time (a port
    // freed by this test could be taken by another one running alongside).
    let addr = "127.0.0.1:0";
    let mut send = Proc::spawn(&["send", addr, "-"]);
    assert_eq!(send.wait().code(), Some(1));
    assert!(send
        .stderr_text()
        .starts_with(&format!("mframe: cannot connect to {addr}: ")));
}

#[test]
fn listen_closes_only_the_connection_that_sends_a_malformed_frame() {
    let mut listen = Proc::spawn(&["listen", "127.0.0.1:0"]);
    let addr = listen.listening_on();
    let mut bad = TcpStream::connect(&addr).unwrap();
    let mut good = TcpStream::connect(&addr).unwrap();
    let first = numbered_frame(1, 0, 1).encode().expect("the frame encodes");
    bad.write_all(&first).unwrap();
    listen
        .stdout_line(support::WAIT)
        .expect("the bad sender's valid frame");
    // A header that is a map.
    let mut broken = numbered_frame(1, 1, 1).encode().expect("the frame encodes");
    broken[1] = 0x88;
    bad.write_all(&broken).unwrap();
    let line = listen.stderr_line("connection closed");
    let peer = bad.local_addr().unwrap();
    assert_eq!(
        line,
        format!(
            "mframe: {peer}: frame 1 (starts at byte {}): expected an array, found marker 0x88 at byte {} (in header field `timestamp`); connection closed",
            first.len(),
            first.len() + 1
        )
    );
    // The listener closed that connection...
    bad.set_read_timeout(Some(support::WAIT)).unwrap();
    assert_eq!(bad.read(&mut [0u8; 16]).unwrap(), 0);
    // ...and no other.
    for seq in 0..5 {
        good.write_all(
            &numbered_frame(2, seq, 1)
                .encode()
                .expect("the frame encodes"),
        )
        .unwrap();
    }
    for seq in 0..5 {
        let line = listen
            .stdout_line(support::WAIT)
            .expect("the good sender's frames");
        assert!(
            line.contains(&format!("\"counter\":{seq},\"source\":2,")),
            "{line}"
        );
    }
    drop(good);
    listen.signal("INT");
    assert!(listen.wait().success());
}

/// A consumer: accepts the relay's connection and collects the frames'
/// headers until the relay closes it; `seen` counts them as they come.
fn consumer() -> (String, Arc<AtomicUsize>, thread::JoinHandle<Vec<Header>>) {
    let listener = free_listener();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    let handle = thread::spawn(move || {
        let (socket, _) = listener.accept().unwrap();
        socket.set_read_timeout(Some(support::WAIT)).unwrap();
        let mut reader = FrameReader::new(socket);
        let mut headers = Vec::new();
        while let Some((header, _)) = reader.read_raw().expect("valid frames from the relay") {
            headers.push(header);
            count.fetch_add(1, Ordering::SeqCst);
        }
        headers
    });
    (addr, seen, handle)
}

#[test]
fn relay_routes_by_target_reports_and_prints_stats() {
    let (c1, _, h1) = consumer();
    let (c2, _, h2) = consumer();
    let mut relay = Proc::spawn(&[
        "relay",
        "--listen",
        "127.0.0.1:0",
        "--route",
        &format!("1={c1}"),
        "--route",
        &format!("3={c1}"),
        "--default",
        &c2,
        "--stats",
    ]);
    let addr = relay.listening_on();
    let mut producer = TcpStream::connect(&addr).unwrap();
    for seq in 0..30 {
        producer
            .write_all(
                &numbered_frame(1, seq, (seq % 4) as u32)
                    .encode()
                    .expect("the frame encodes"),
            )
            .unwrap();
    }
    drop(producer);
    // Stats: one line per route every second, on stdout.
    let mut stats = Vec::new();
    while stats.len() < 3 {
        stats.push(relay.stdout_line(support::WAIT).expect("a stats line"));
    }
    assert!(
        stats[0].starts_with(&format!("route 1 -> {c1}: ")),
        "{stats:?}"
    );
    assert!(
        stats[1].starts_with(&format!("route 3 -> {c1}: ")),
        "{stats:?}"
    );
    assert!(
        stats[2].starts_with(&format!("route default -> {c2}: ")),
        "{stats:?}"
    );
    assert!(stats
        .iter()
        .all(|l| l.contains(" frames/s, ") && l.contains(" MB/s ")));
    // Until every frame is delivered: targets 1 and 3 share consumer 1, the
    // others (0, 2) go to the default.
    let totals = ["total 8 frames", "total 7 frames", "total 15 frames"];
    while !stats.iter().zip(totals).all(|(l, t)| l.contains(t)) {
        stats = (0..3)
            .map(|_| relay.stdout_line(support::WAIT).expect("a stats line"))
            .collect();
    }
    relay.signal("INT");
    assert!(relay.wait().success());
    let report = relay.stderr_text();
    for line in [
        format!("mframe: relay: route 1 -> {c1}: 8 frames ("),
        format!("mframe: relay: route 3 -> {c1}: 7 frames ("),
        format!("mframe: relay: route default -> {c2}: 15 frames ("),
        "mframe: relay: 0 frames unroutable; 1 producer connection, 0 closed for invalid frames"
            .to_owned(),
    ] {
        assert!(report.contains(&line), "{line:?} not in {report}");
    }
    let to_c1: Vec<u64> = h1.join().unwrap().iter().map(Header::counter).collect();
    let to_c2: Vec<u64> = h2.join().unwrap().iter().map(Header::counter).collect();
    let expected = |keep: fn(u64) -> bool| (0..30).filter(|&s| keep(s)).collect::<Vec<u64>>();
    assert_eq!(to_c1, expected(|s| s % 4 == 1 || s % 4 == 3));
    assert_eq!(to_c2, expected(|s| s % 2 == 0));
}

#[test]
fn relay_closes_only_a_producer_with_a_malformed_frame_and_counts_unroutable_frames() {
    let (c1, seen, h1) = consumer();
    let mut relay = Proc::spawn(&[
        "relay",
        "--listen",
        "127.0.0.1:0",
        "--route",
        &format!("1={c1}"),
    ]);
    let addr = relay.listening_on();
    let mut bad = TcpStream::connect(&addr).unwrap();
    let mut good = TcpStream::connect(&addr).unwrap();
    let first = numbered_frame(9, 0, 1).encode().expect("the frame encodes");
    bad.write_all(&first).unwrap();
    bad.write_all(b"\xc1 not a frame").unwrap();
    let line = relay.stderr_line("connection closed");
    let peer = bad.local_addr().unwrap();
    assert_eq!(
        line,
        format!(
            "mframe: relay: producer {peer}: frame 1 (starts at byte {0}): expected an array, found marker 0xc1 at byte {0} (in frame); connection closed",
            first.len()
        )
    );
    for seq in 0..10 {
        good.write_all(
            &numbered_frame(2, seq, 1 + (seq % 2) as u32)
                .encode()
                .expect("the frame encodes"),
        )
        .unwrap();
    }
    drop(good);
    let line = relay.stderr_line("no route for target 2");
    assert!(
        line.ends_with("its frames are counted as unroutable"),
        "{line}"
    );
    // Once the routed frames are delivered, stop it.
    support::wait_until("the routed frames", || seen.load(Ordering::SeqCst) == 6);
    relay.signal("INT");
    assert!(relay.wait().success());
    let report = relay.stderr_text();
    assert!(
        report.contains("mframe: relay: 5 frames unroutable; 2 producer connections, 1 closed for invalid frames"),
        "{report}"
    );
    let got: Vec<(u32, u64)> = h1
        .join()
        .unwrap()
        .iter()
        .map(|h| (h.source(), h.counter()))
        .collect();
    let mut expected = vec![(9, 0)];
    expected.extend((0..10).filter(|s| s % 2 == 0).map(|s| (2, s)));
    assert_eq!(got, expected);
}

#[test]
fn relay_and_listen_usage_errors_exit_2_and_bad_addresses_exit_1() {
    for args in [
        &["relay", "--listen", "127.0.0.1:0"][..],
        &[
            "relay",
            "--listen",
            "127.0.0.1:0",
            "--route",
            "x=127.0.0.1:1",
        ],
        &["relay", "--listen", "127.0.0.1:0", "--route", "1"],
        &["relay", "--route", "1=127.0.0.1:1"],
        &["listen"],
        &["listen", "127.0.0.1:0", "--pretty", "--with-data"],
        &["send"],
    ] {
        let mut p = Proc::spawn(args);
        assert_eq!(p.wait().code(), Some(2), "{args:?}: {}", p.stderr_text());
    }
    // A consumer nobody listens on: the relay starts all the same and
    // keeps trying (the fault tests show it delivering once the consumer
    // comes).
    let closed = "127.0.0.1:0";
    let mut relay = Proc::spawn(&[
        "relay",
        "--listen",
        "127.0.0.1:0",
        "--route",
        &format!("1={closed}"),
    ]);
    relay.listening_on();
    let line = relay.stderr_line("cannot connect");
    assert!(
        line.starts_with(&format!(
            "mframe: relay: consumer {closed} (targets 1): cannot connect: "
        )),
        "{line}"
    );
    relay.signal("TERM");
    assert_eq!(relay.wait().code(), Some(0), "{}", relay.stderr_text());
    let mut listen = Proc::spawn(&["listen", "256.0.0.1:1"]);
    assert_eq!(listen.wait().code(), Some(1));
    assert!(listen
        .stderr_text()
        .starts_with("mframe: cannot listen on 256.0.0.1:1: "));
}
