//! Fault injection on the TCP commands, as real processes on loopback: what
//! an operator's network does to a relay and its listeners (a consumer
//! that restarts, comes late or stops reading; peers that exhaust
//! descriptors, sit idle, announce huge frames; a stdout that blocks).
//! Each test says what was sent, delivered, dropped and lost, and prints
//! its figures on a `FIGURES` line (`cargo test -p mframe --test faults --
//! --nocapture`), the source of docs/security.md's table. Every test has a
//! hard deadline ([`support::within`]).

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use messageframe::{Frame, FrameReader, FrameWriter};
use support::{
    cpu_seconds, figures, free_listener, numbered_frame, peak_rss_bytes, route_report, wait_until,
    within, Proc,
};

const DEADLINE: Duration = Duration::from_secs(90);

/// The `"counter":N` of a JSON line from `mframe listen`.
fn counter_of(line: &str) -> u64 {
    let at = line.find("\"counter\":").expect("a counter") + "\"counter\":".len();
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Frames `from..to`; frame `seq` goes to target 1 or 2, alternately.
fn send_frames(writer: &mut FrameWriter<TcpStream>, from: u64, to: u64) {
    for seq in from..to {
        writer
            .write_frame(&numbered_frame(1, seq, 1 + (seq % 2) as u32))
            .expect("the relay reads");
    }
    writer.flush().unwrap();
}

fn relay(routes: &[String], extra: &[&str]) -> Proc {
    let mut args = vec!["relay", "--listen", "127.0.0.1:0"];
    for r in routes {
        args.push("--route");
        args.push(r);
    }
    args.extend_from_slice(extra);
    Proc::spawn(&args)
}

#[test]
fn a_restarted_consumer_gets_every_frame_sent_while_it_was_down() {
    within(DEADLINE, || {
        const PART: u64 = 3_000;
        let mut c1 = Proc::spawn(&["listen", "127.0.0.1:0"]);
        let a1 = c1.listening_on();
        let mut victim = Proc::spawn(&["listen", "127.0.0.1:0"]);
        let a2 = victim.listening_on();
        let mut relay = relay(&[format!("1={a1}"), format!("2={a2}")], &[]);
        let addr = relay.listening_on();
        let mut producer = FrameWriter::new(TcpStream::connect(&addr).unwrap());

        // Part 0 while consumer 2 is up: printed by it.
        send_frames(&mut producer, 0, PART);
        let first: Vec<u64> = victim
            .stdout_lines(PART as usize / 2)
            .iter()
            .map(|l| counter_of(l))
            .collect();
        // Killed (SIGKILL: no goodbye); the relay notices from the socket.
        victim.signal("KILL");
        victim.wait();
        // (It closed the connection, or reset it.)
        relay.stderr_line_with(&[&format!("consumer {a2} (targets 2): "), "retrying in"]);
        // Part 1 while it is down: queued.
        send_frames(&mut producer, PART, 2 * PART);
        thread::sleep(Duration::from_millis(300));
        // Back on the same address.
        let mut reborn = Proc::spawn(&["listen", &a2]);
        reborn.listening_on();
        relay.stderr_line(&format!("consumer {a2} (targets 2): reconnected"));
        // Part 2 once it is back.
        send_frames(&mut producer, 2 * PART, 3 * PART);
        let later: Vec<u64> = reborn
            .stdout_lines(PART as usize)
            .iter()
            .map(|l| counter_of(l))
            .collect();
        let route1: Vec<u64> = c1
            .stdout_lines(3 * PART as usize / 2)
            .iter()
            .map(|l| counter_of(l))
            .collect();
        drop(producer);
        relay.signal("INT");
        assert!(relay.wait().success());
        let report = relay.stderr_text();
        let r1 = route_report(&report, "1");
        let r2 = route_report(&report, "2");
        // Every frame of route 2, exactly once, in order, across the two
        // lives of its consumer; route 1 untouched.
        let odd = |range: std::ops::Range<u64>| range.filter(|s| s % 2 == 1).collect::<Vec<_>>();
        assert_eq!(first, odd(0..PART));
        assert_eq!(later, odd(PART..3 * PART));
        assert_eq!(
            route1,
            (0..3 * PART).filter(|s| s % 2 == 0).collect::<Vec<_>>()
        );
        assert_eq!((r1.delivered, r1.dropped), (3 * PART / 2, 0), "{report}");
        assert_eq!((r2.delivered, r2.dropped), (3 * PART / 2, 0), "{report}");
        assert_eq!(r2.reconnects, 1, "{report}");
        let received = (first.len() + later.len()) as u64;
        figures(
            "consumer_restart",
            &[
                ("sent", (3 * PART / 2).to_string()),
                ("sent_while_down", (PART / 2).to_string()),
                ("delivered", r2.delivered.to_string()),
                ("dropped", r2.dropped.to_string()),
                ("received", received.to_string()),
                ("lost", (r2.delivered - received).to_string()),
                ("reconnects", r2.reconnects.to_string()),
            ],
        );
        c1.signal("INT");
        reborn.signal("INT");
        c1.wait();
        reborn.wait();
    });
}

#[test]
fn a_consumer_killed_under_load_loses_only_what_was_in_flight_to_it() {
    within(DEADLINE, || {
        const FRAMES: u64 = 20_000;
        let victim = Proc::spawn(&["listen", "127.0.0.1:0"]);
        let consumer_addr = victim.listening_on();
        let mut relay = relay(&[format!("1={consumer_addr}")], &[]);
        let addr = relay.listening_on();
        // Frames at about 25,000 a second, all to target 1.
        let producer = thread::spawn(move || {
            let mut w = FrameWriter::new(TcpStream::connect(&addr).unwrap());
            for seq in 0..FRAMES {
                w.write_frame(&numbered_frame(1, seq, 1)).unwrap();
                if seq % 500 == 499 {
                    w.flush().unwrap();
                    thread::sleep(Duration::from_millis(20));
                }
            }
            w.flush().unwrap();
        });
        let mut received: Vec<u64> = victim
            .stdout_lines(4_000)
            .iter()
            .map(|l| counter_of(l))
            .collect();
        let mut victim = victim;
        victim.signal("KILL");
        victim.wait();
        // What the first life printed before it died.
        while let Some(line) = victim.stdout_line(Duration::from_millis(200)) {
            received.push(counter_of(&line));
        }
        let first_life = received.len();
        let mut reborn = Proc::spawn(&["listen", &consumer_addr]);
        reborn.listening_on();
        producer.join().unwrap();
        // Everything the relay had once the consumer was back.
        relay.stderr_line("reconnected");
        let mut last_seen = Instant::now();
        while last_seen.elapsed() < Duration::from_secs(2) {
            if let Some(line) = reborn.stdout_line(Duration::from_millis(100)) {
                received.push(counter_of(&line));
                if received.last() == Some(&(FRAMES - 1)) {
                    break;
                }
                last_seen = Instant::now();
            }
        }
        relay.signal("INT");
        assert!(relay.wait().success());
        let r = route_report(&relay.stderr_text(), "1");
        // Never twice, always in order, across both lives.
        assert!(
            received.windows(2).all(|w| w[0] < w[1]),
            "order or duplicates"
        );
        assert_eq!(
            received.last(),
            Some(&(FRAMES - 1)),
            "the last frame arrives"
        );
        assert_eq!(r.delivered + r.dropped, FRAMES, "every frame accounted for");
        let got = received.len() as u64;
        assert!(
            got <= r.delivered,
            "{got} received, {} delivered",
            r.delivered
        );
        let lost = r.delivered - got;
        // In flight when it died: its socket buffer and its own stdout
        // queue, at most a few MiB of 60-byte frames.
        assert!(lost < FRAMES / 2, "{lost} lost");
        figures(
            "consumer_killed_under_load",
            &[
                ("sent", FRAMES.to_string()),
                ("delivered", r.delivered.to_string()),
                ("dropped", r.dropped.to_string()),
                ("dropped_connection_lost", r.connection_lost.to_string()),
                ("received_first_life", first_life.to_string()),
                ("received", got.to_string()),
                ("lost_in_flight", lost.to_string()),
                ("reconnects", r.reconnects.to_string()),
            ],
        );
        reborn.signal("INT");
        reborn.wait();
    });
}

#[test]
fn a_relay_started_before_its_consumer_delivers_once_it_comes() {
    within(DEADLINE, || {
        const FRAMES: u64 = 2_000;
        // A free port, nobody on it yet.
        let port = free_listener().local_addr().unwrap().port();
        let consumer_addr = format!("127.0.0.1:{port}");
        let mut relay = Proc::spawn(&[
            "relay",
            "--listen",
            "127.0.0.1:0",
            "--default",
            &consumer_addr,
        ]);
        let addr = relay.listening_on();
        relay.stderr_line("cannot connect");
        let mut producer = FrameWriter::new(TcpStream::connect(&addr).unwrap());
        send_frames(&mut producer, 0, FRAMES);
        drop(producer);
        thread::sleep(Duration::from_millis(500));
        let mut consumer = Proc::spawn(&["listen", &consumer_addr]);
        consumer.listening_on();
        let got: Vec<u64> = consumer
            .stdout_lines(FRAMES as usize)
            .iter()
            .map(|l| counter_of(l))
            .collect();
        assert_eq!(got, (0..FRAMES).collect::<Vec<_>>());
        relay.signal("INT");
        assert!(relay.wait().success());
        let r = route_report(&relay.stderr_text(), "default");
        assert_eq!((r.delivered, r.dropped, r.reconnects), (FRAMES, 0, 0));
        figures(
            "late_consumer",
            &[
                ("sent", FRAMES.to_string()),
                ("delivered", r.delivered.to_string()),
                ("dropped", r.dropped.to_string()),
                ("received", got.len().to_string()),
                ("lost", (r.delivered - got.len() as u64).to_string()),
            ],
        );
        consumer.signal("INT");
        consumer.wait();
    });
}

/// A consumer that accepts every connection and never reads. At the end,
/// [`Stuck::drain`] reads what each connection's kernel buffer held: the
/// whole frames that reached it.
struct Stuck {
    addr: String,
    held: Arc<Mutex<Vec<TcpStream>>>,
    accepted: Arc<AtomicUsize>,
}

impl Stuck {
    fn start() -> Stuck {
        let listener = free_listener();
        let addr = listener.local_addr().unwrap().to_string();
        let held = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (h, a) = (held.clone(), accepted.clone());
        thread::spawn(move || {
            for socket in listener.incoming() {
                let Ok(socket) = socket else { return };
                a.fetch_add(1, Ordering::SeqCst);
                h.lock().unwrap().push(socket);
            }
        });
        Stuck {
            addr,
            held,
            accepted,
        }
    }

    /// Whole frames in the held connections' buffers.
    fn drain(&self) -> u64 {
        let mut frames = 0;
        for socket in self.held.lock().unwrap().drain(..) {
            socket
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut reader = FrameReader::new(socket);
            // Each connection ends inside a frame, or cleanly.
            while let Ok(Some(_)) = reader.read_raw() {
                frames += 1;
            }
        }
        frames
    }
}

#[test]
fn a_stuck_consumer_loses_only_its_own_frames_and_they_are_counted() {
    within(DEADLINE, || {
        const FRAMES: u64 = 6_000;
        let stuck = Stuck::start();
        let mut good = Proc::spawn(&["listen", "127.0.0.1:0"]);
        let good_addr = good.listening_on();
        let mut relay = relay(
            &[format!("1={}", stuck.addr), format!("2={good_addr}")],
            &["--route-buffer", "4MiB", "--write-timeout", "1"],
        );
        let addr = relay.listening_on();
        // Target 1 (stuck): frames with an 8 KiB attachment, 48 MiB in all;
        // target 2: small frames.
        let mut producer = FrameWriter::new(TcpStream::connect(&addr).unwrap());
        let mut big = numbered_frame(1, 0, 1);
        big.add_attachment("iq", vec![0x5a; 8 << 10]);
        let started = Instant::now();
        for seq in 0..FRAMES {
            big.header_mut().set_counter(seq);
            producer.write_frame(&big).unwrap();
            producer.write_frame(&numbered_frame(1, seq, 2)).unwrap();
        }
        producer.flush().unwrap();
        let sent_in = started.elapsed();
        // Route 2 gets every frame, in order, while route 1 is stuck.
        let got: Vec<u64> = good
            .stdout_lines(FRAMES as usize)
            .iter()
            .map(|l| counter_of(l))
            .collect();
        let route2_done = started.elapsed();
        assert_eq!(got, (0..FRAMES).collect::<Vec<_>>());
        // The write timeout cuts the stuck connection, and the relay
        // connects again (to a consumer that still does not read).
        wait_until("a reconnection", || {
            stuck.accepted.load(Ordering::SeqCst) >= 2
        });
        drop(producer);
        // Stop, and stop again: no waiting for the stuck queue to flush.
        relay.signal("INT");
        thread::sleep(Duration::from_millis(300));
        relay.signal("INT");
        assert!(relay.wait().success());
        let report = relay.stderr_text();
        let r1 = route_report(&report, "1");
        let r2 = route_report(&report, "2");
        let reached = stuck.drain();
        assert_eq!((r2.delivered, r2.dropped), (FRAMES, 0), "{report}");
        // Route 1: every frame accounted for; most dropped for want of
        // room; "delivered" ones are those written whole to a connection
        // before it was cut, of which `reached` got to the consumer's
        // kernel (it read none of them).
        assert_eq!(r1.delivered + r1.dropped, FRAMES, "{report}");
        assert!(r1.queue_full > FRAMES / 2, "{report}");
        assert!(r1.reconnects >= 1, "{report}");
        assert!(reached <= r1.delivered, "{reached} > {}", r1.delivered);
        // What the kernel buffers of a loopback connection hold, at most.
        assert!((r1.delivered << 13) < (64 << 20), "{report}");
        figures(
            "stuck_consumer",
            &[
                ("sent_stuck_route", FRAMES.to_string()),
                ("delivered", r1.delivered.to_string()),
                ("dropped_queue_full", r1.queue_full.to_string()),
                ("dropped_connection_lost", r1.connection_lost.to_string()),
                ("dropped_at_shutdown", r1.shutdown.to_string()),
                ("in_consumer_kernel_buffers", reached.to_string()),
                ("read_by_consumer", "0".to_owned()),
                ("reconnects", r1.reconnects.to_string()),
                ("other_route_sent", FRAMES.to_string()),
                ("other_route_received", got.len().to_string()),
                ("sent_in_ms", sent_in.as_millis().to_string()),
                ("other_route_done_ms", route2_done.as_millis().to_string()),
            ],
        );
        good.signal("INT");
        good.wait();
    });
}

/// Opens `n` connections to `addr` that send nothing (a connection the
/// kernel cannot queue within 2 s is given up).
fn idle_peers(addr: &str, n: usize) -> Vec<TcpStream> {
    let addr: std::net::SocketAddr = addr.parse().unwrap();
    (0..n)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok())
        .collect()
}

/// Stderr bytes so far.
fn log_bytes(p: &Proc) -> usize {
    p.stderr_log
        .lock()
        .unwrap()
        .iter()
        .map(|l| l.len() + 1)
        .sum()
}

#[test]
fn descriptor_exhaustion_costs_bounded_cpu_and_log() {
    within(DEADLINE, || {
        // More than the 128 descriptors, fewer than what they and the
        // kernel's accept queue (128) hold: more would wait in SYN retries.
        const PEERS: usize = 200;
        const WINDOW: Duration = Duration::from_secs(4);
        // `listen` with a --max-connections its 128 descriptors cannot
        // hold (accept fails with EMFILE); `relay` with the default, which
        // it fits under the limit.
        let mut listen = Proc::spawn_limited(
            &["--nofile=128:128"],
            &["listen", "127.0.0.1:0", "--max-connections", "1000"],
        );
        let listen_addr = listen.listening_on();
        let mut relay = Proc::spawn_limited(
            &["--nofile=128:128"],
            &[
                "relay",
                "--listen",
                "127.0.0.1:0",
                "--default",
                "127.0.0.1:9",
            ],
        );
        let relay_addr = relay.listening_on();
        let clamped = relay.stderr_line("connections at once");
        assert!(clamped.contains("at most 64 connections"), "{clamped}");
        let (cpu0, log0) = (
            (cpu_seconds(listen.pid()), cpu_seconds(relay.pid())),
            (log_bytes(&listen), log_bytes(&relay)),
        );
        let peers_l = idle_peers(&listen_addr, PEERS);
        let peers_r = idle_peers(&relay_addr, PEERS);
        assert_eq!((peers_l.len(), peers_r.len()), (PEERS, PEERS));
        thread::sleep(WINDOW);
        let cpu = (
            cpu_seconds(listen.pid()) - cpu0.0,
            cpu_seconds(relay.pid()) - cpu0.1,
        );
        let log = (log_bytes(&listen) - log0.0, log_bytes(&relay) - log0.1);
        let text = listen.stderr_text();
        assert!(text.contains("cannot accept a connection"), "{text}");
        assert!(text.contains("Too many open files"), "{text}");
        assert!(
            relay.stderr_text().contains("refused"),
            "{}",
            relay.stderr_text()
        );
        // A core spinning would be ~4 CPU-seconds; a line per failed
        // accept, megabytes.
        for (what, cpu, log) in [("listen", cpu.0, log.0), ("relay", cpu.1, log.1)] {
            assert!(cpu < 0.8, "{what}: {cpu} CPU-s in {WINDOW:?}");
            assert!(log < 64 << 10, "{what}: {log} bytes of log in {WINDOW:?}");
        }
        // The crowd leaves; a real sender gets through.
        drop(peers_l);
        drop(peers_r);
        let frame = numbered_frame(5, 0, 1).encode().unwrap();
        let mut sender = None;
        wait_until(
            "a connection after the crowd",
            || match TcpStream::connect(&listen_addr) {
                Ok(mut s) => {
                    s.write_all(&frame).unwrap();
                    sender = Some(s);
                    true
                }
                Err(_) => false,
            },
        );
        let line = listen
            .stdout_line(support::WAIT)
            .expect("the sender's frame");
        assert!(line.contains("\"source\":5,"), "{line}");
        drop(sender);
        listen.signal("INT");
        relay.signal("INT");
        assert!(listen.wait().success());
        assert!(relay.wait().success());
        figures(
            "descriptor_exhaustion",
            &[
                ("nofile", "128".to_owned()),
                ("idle_peers", PEERS.to_string()),
                ("window_s", WINDOW.as_secs().to_string()),
                ("listen_cpu_s", format!("{:.2}", cpu.0)),
                ("listen_log_bytes", log.0.to_string()),
                ("relay_cpu_s", format!("{:.2}", cpu.1)),
                ("relay_log_bytes", log.1.to_string()),
            ],
        );
    });
}

#[test]
fn an_idle_crowd_is_held_to_max_connections_and_closed_by_the_idle_timeout() {
    within(DEADLINE, || {
        let mut listen = Proc::spawn(&[
            "listen",
            "127.0.0.1:0",
            "--max-connections",
            "20",
            "--idle-timeout",
            "1",
        ]);
        let addr = listen.listening_on();
        let started = Instant::now();
        // A peer that trickles bytes of a frame it never completes is idle
        // too: the timeout counts complete frames, not bytes.
        let mut slow = TcpStream::connect(&addr).unwrap();
        let frame = numbered_frame(3, 0, 1).encode().unwrap();
        let trickle = thread::spawn(move || {
            for &b in &frame[..frame.len() - 1] {
                if slow.write_all(&[b]).is_err() {
                    return true;
                }
                thread::sleep(Duration::from_millis(100));
            }
            false
        });
        thread::sleep(Duration::from_millis(100));
        let mut peers = idle_peers(&addr, 50);
        // Every peer's connection ends: refused at once, or closed idle.
        let mut ended = Vec::new();
        for p in &mut peers {
            p.set_read_timeout(Some(support::WAIT)).unwrap();
            let mut buf = [0u8; 1];
            let n = p.read(&mut buf).unwrap_or(0);
            assert_eq!(n, 0);
            ended.push(started.elapsed());
        }
        let all_closed = started.elapsed();
        assert!(
            all_closed < Duration::from_secs(10),
            "closed after {all_closed:?}"
        );
        wait_until("the trickler cut off", || trickle.is_finished());
        assert!(
            trickle.join().unwrap(),
            "the trickle was cut before its frame was complete"
        );
        listen.signal("INT");
        assert!(listen.wait().success());
        let text = listen.stderr_text();
        let report = text.lines().last().unwrap().to_owned();
        let refused: u64 = number_before(&report, " refused");
        let idle: u64 = number_before(&report, " closed idle");
        assert!(refused >= 30, "{report}");
        assert_eq!(refused + idle, 51, "{report}");
        assert!(
            text.contains("no complete frame for 1 s (--idle-timeout)"),
            "{text}"
        );
        figures(
            "idle_crowd",
            &[
                ("peers", "51".to_owned()),
                ("max_connections", "20".to_owned()),
                ("idle_timeout_s", "1".to_owned()),
                ("refused", refused.to_string()),
                ("closed_idle", idle.to_string()),
                ("all_closed_ms", all_closed.as_millis().to_string()),
            ],
        );
    });
}

/// The number just before `what` in `line`.
fn number_before(line: &str, what: &str) -> u64 {
    let at = line
        .find(what)
        .unwrap_or_else(|| panic!("{what:?} in {line}"));
    line[..at]
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// A frame header (source 1, target 1) announcing one attachment of `len`
/// bytes, and nothing after it.
fn bomb_header(len: u32) -> Vec<u8> {
    let mut f = Frame::new(messageframe::Header::new(1, 2, 1, 1));
    f.add_attachment("iq", vec![0u8; 1]);
    let mut bytes = f.encode().unwrap();
    // The attachment's data: bin8 of 1 byte (0xc4 0x01 0x00) at the end.
    let at = bytes.len() - 3;
    assert_eq!(&bytes[at..at + 2], &[0xc4, 0x01]);
    bytes.truncate(at);
    bytes.push(0xc6);
    bytes.extend_from_slice(&len.to_be_bytes());
    bytes
}

#[test]
fn length_bombs_are_refused_before_any_large_allocation() {
    within(DEADLINE, || {
        // A 768 MiB address space: the runtime's threads and their malloc
        // arenas fit, three 256 MiB reservations do not.
        let mut listen = Proc::spawn_limited(
            &["--as=805306368"],
            &["listen", "127.0.0.1:0", "--max-buffered-bytes", "64MiB"],
        );
        let addr = listen.listening_on();
        // 1. Sixteen peers announce 250 MiB attachments: over
        //    --max-frame-bytes (16 MiB), refused on the header.
        let mut bombs: Vec<TcpStream> = (0..16)
            .map(|_| {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.write_all(&bomb_header(250 << 20)).unwrap();
                s
            })
            .collect();
        for b in &mut bombs {
            b.set_read_timeout(Some(support::WAIT)).unwrap();
            assert_eq!(b.read(&mut [0u8; 1]).unwrap_or(0), 0, "closed");
        }
        let after_bombs = peak_rss_bytes(listen.pid());
        // 2. Sixteen peers announce 15 MiB (allowed) and each send 6 MiB of
        //    it: 96 MiB wanted, 64 MiB of budget; the buffers grow only as
        //    bytes come, and the peers past the budget are closed.
        let chunk = vec![0u8; 6 << 20];
        let senders: Vec<_> = (0..16)
            .map(|_| {
                let addr = addr.clone();
                let chunk = chunk.clone();
                thread::spawn(move || {
                    let mut s = TcpStream::connect(&addr).unwrap();
                    s.write_all(&bomb_header(15 << 20)).unwrap();
                    let _ = s.write_all(&chunk);
                    s
                })
            })
            .collect();
        let held: Vec<TcpStream> = senders.into_iter().map(|h| h.join().unwrap()).collect();
        thread::sleep(Duration::from_millis(500));
        let peak = peak_rss_bytes(listen.pid());
        // 3. Still serving.
        let frame = numbered_frame(9, 0, 1).encode().unwrap();
        let mut ok = TcpStream::connect(&addr).unwrap();
        ok.write_all(&frame).unwrap();
        let line = listen
            .stdout_line(support::WAIT)
            .expect("a frame after the bombs");
        assert!(line.contains("\"source\":9,"), "{line}");
        drop(held);
        drop(ok);
        listen.signal("INT");
        assert!(listen.wait().success(), "{}", listen.stderr_text());
        let text = listen.stderr_text();
        assert_eq!(
            text.matches("decode limit `max_frame_bytes` exceeded")
                .count(),
            16,
            "{text}"
        );
        assert!(text.contains("(--max-frame-bytes is 16777216)"), "{text}");
        assert!(
            text.contains("would pass --max-buffered-bytes (67108864)"),
            "{text}"
        );
        let closed_budget = number_before(
            text.lines().last().unwrap(),
            " closed for want of buffer memory",
        );
        assert!(closed_budget >= 1, "{text}");
        assert!(after_bombs < 40 << 20, "{} MiB", after_bombs >> 20);
        // The budget and what the runtime itself holds.
        assert!(peak < (64 + 48) << 20, "peak RSS {} MiB", peak >> 20);
        figures(
            "length_bombs",
            &[
                ("headers_announcing_250MiB", "16".to_owned()),
                ("refused_on_header", "16".to_owned()),
                ("peak_rss_after_bombs_MiB", (after_bombs >> 20).to_string()),
                ("peers_sending_6MiB_of_15MiB", "16".to_owned()),
                ("budget_MiB", "64".to_owned()),
                ("closed_for_budget", closed_budget.to_string()),
                ("peak_rss_MiB", (peak >> 20).to_string()),
                ("address_space_limit_MiB", "768".to_owned()),
            ],
        );
    });
}

#[test]
fn listen_with_a_blocked_stdout_stays_bounded_and_stops_on_sigterm() {
    within(DEADLINE, || {
        // stdout is a pipe nobody reads.
        let mut child = Command::new(env!("CARGO_BIN_EXE_mframe"))
            .args(["listen", "127.0.0.1:0", "--with-data"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _unread = child.stdout.take();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let log = log.clone();
            thread::spawn(move || {
                let mut r = std::io::BufReader::new(stderr);
                let mut line = String::new();
                while std::io::BufRead::read_line(&mut r, &mut line).unwrap_or(0) > 0 {
                    log.lock().unwrap().push_str(&line);
                    let _ = tx.send(line.clone());
                    line.clear();
                }
            });
        }
        let addr = rx
            .iter()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("mframe: listening on ")
                    .map(str::to_owned)
            })
            .unwrap();
        // 64 KiB frames, as fast as the listener takes them.
        let mut frame = numbered_frame(1, 0, 1);
        frame.add_attachment("iq", vec![7u8; 64 << 10]);
        let bytes = frame.encode().unwrap();
        let written = Arc::new(AtomicUsize::new(0));
        let w = written.clone();
        let producer = thread::spawn(move || {
            let mut s = TcpStream::connect(&addr).unwrap();
            for _ in 0..2_000 {
                if s.write_all(&bytes).is_err() {
                    return;
                }
                w.fetch_add(1, Ordering::SeqCst);
            }
        });
        // The producer stalls: stdout's pipe, the 8 MiB queue and the
        // sockets are full.
        let last = support::wait_stalled(&written, Duration::from_millis(700));
        let rss = peak_rss_bytes(child.id());
        let stop = Instant::now();
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                stop.elapsed() < Duration::from_secs(5),
                "no exit after SIGTERM"
            );
            thread::sleep(Duration::from_millis(20));
        };
        let took = stop.elapsed();
        assert!(status.success());
        assert!(took < Duration::from_secs(3), "{took:?}");
        drop(producer);
        thread::sleep(Duration::from_millis(100));
        let text = log.lock().unwrap().clone();
        assert!(
            text.contains("frames not written: stdout did not take them"),
            "{text}"
        );
        // 64 KiB frames are 85 KiB JSON lines: the queue holds 8 MiB of
        // them, the sockets a few MiB of frames.
        assert!(rss < 64 << 20, "peak RSS {} MiB", rss >> 20);
        figures(
            "blocked_stdout",
            &[
                ("frames_accepted_by_socket", last.to_string()),
                ("peak_rss_MiB", (rss >> 20).to_string()),
                ("sigterm_to_exit_ms", took.as_millis().to_string()),
            ],
        );
    });
}

#[test]
fn relay_stats_are_quiet_when_nothing_changes() {
    within(DEADLINE, || {
        let (consumer, _) = (free_listener(), ());
        let addr = consumer.local_addr().unwrap().to_string();
        let mut relay = relay(&[format!("1={addr}")], &["--stats"]);
        relay.listening_on();
        // One line when it starts, then silence (the next comes after
        // 10 s of nothing).
        assert!(relay.stdout_line(support::WAIT).is_some());
        assert!(relay.stdout_quiet(Duration::from_millis(3_500)));
        relay.signal("INT");
        assert!(relay.wait().success());
    });
}
