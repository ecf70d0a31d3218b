//! The relay under load, as a real process on loopback: 4 producers ×
//! 50,000 frames to 2 consumers. Each frame carries its producer's id
//! (`source`) and its sequence number (`counter`); consumers check that
//! every frame arrives exactly once and in per-producer order. Bounded in
//! count (200,000 frames of about 60 bytes) and in time (every wait ends
//! within support::WAIT).

mod support;

use std::collections::HashMap;
use std::io::BufWriter;
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use messageframe::{FrameReader, FrameWriter};
use support::{free_listener, numbered_frame, peak_rss_bytes, wait_until, Proc};

const PRODUCERS: u32 = 4;
const FRAMES: u64 = 50_000;

/// Producer `p`'s frame `seq` goes to target 1 or 2, alternately.
fn target_of(seq: u64) -> u32 {
    1 + (seq % 2) as u32
}

/// A consumer that checks, for its target, that each producer's frames come
/// exactly once and in order. Returns the number of frames per producer.
fn checking_consumer(
    target: u32,
) -> (
    String,
    Arc<AtomicUsize>,
    thread::JoinHandle<HashMap<u32, u64>>,
) {
    let listener = free_listener();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    let handle = thread::spawn(move || {
        let (socket, _) = listener.accept().unwrap();
        socket.set_read_timeout(Some(support::WAIT)).unwrap();
        let mut reader = FrameReader::new(socket);
        // Per producer: the next sequence number expected.
        let mut next: HashMap<u32, u64> = HashMap::new();
        while let Some((h, _)) = reader.read_raw().expect("valid frames from the relay") {
            assert_eq!(h.target(), target, "a frame for another consumer");
            let expected = next.entry(h.source()).or_insert(u64::from(target - 1));
            assert_eq!(
                h.counter(),
                *expected,
                "producer {}: frame out of order, lost or duplicated",
                h.source()
            );
            *expected += 2;
            count.fetch_add(1, Ordering::SeqCst);
        }
        next.into_iter()
            .map(|(p, n)| (p, (n - u64::from(target - 1)) / 2))
            .collect()
    });
    (addr, seen, handle)
}

/// Producer `id`: sends frames `from..to` to the relay.
fn produce(writer: &mut FrameWriter<BufWriter<TcpStream>>, id: u32, from: u64, to: u64) {
    for seq in from..to {
        writer
            .write_frame(&numbered_frame(id, seq, target_of(seq)))
            .expect("the relay reads");
    }
    writer.flush().unwrap();
}

fn connect(addr: &str) -> FrameWriter<BufWriter<TcpStream>> {
    FrameWriter::new(BufWriter::new(TcpStream::connect(addr).unwrap()))
}

/// The report line of one route, from the relay's stderr: (delivered,
/// dropped).
fn route_report(report: &str, target: u32) -> (u64, u64) {
    let r = support::route_report(report, &target.to_string());
    (r.delivered, r.dropped)
}

#[test]
fn relay_under_load_delivers_every_frame_exactly_once_in_order() {
    let (c1, seen1, h1) = checking_consumer(1);
    let (c2, seen2, h2) = checking_consumer(2);
    let mut relay = Proc::spawn(&[
        "relay",
        "--listen",
        "127.0.0.1:0",
        "--route",
        &format!("1={c1}"),
        "--route",
        &format!("2={c2}"),
    ]);
    let addr = relay.listening_on();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|id| {
            let addr = addr.clone();
            thread::spawn(move || produce(&mut connect(&addr), id, 0, FRAMES))
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    let per_consumer = (PRODUCERS as u64 * FRAMES / 2) as usize;
    wait_until("every frame delivered", || {
        seen1.load(Ordering::SeqCst) == per_consumer && seen2.load(Ordering::SeqCst) == per_consumer
    });
    relay.signal("INT");
    assert!(relay.wait().success());
    for h in [h1, h2] {
        let counts = h.join().unwrap();
        assert_eq!(counts.len(), PRODUCERS as usize);
        assert!(counts.values().all(|&n| n == FRAMES / 2), "{counts:?}");
    }
    let report = relay.stderr_text();
    for target in [1, 2] {
        assert_eq!(
            route_report(&report, target),
            (per_consumer as u64, 0),
            "{report}"
        );
    }
    assert!(
        report.contains("0 frames unroutable; 4 producer connections, 0 closed"),
        "{report}"
    );
}

#[test]
fn with_when_full_block_a_stalled_consumer_slows_its_producer_and_the_relay_memory_stays_bounded() {
    use std::io::Write;
    use std::time::Duration;

    // 128 MiB of 1 KiB frames, numbered.
    const TOTAL: usize = 128 << 20;
    let mut frame = numbered_frame(0, 0, 1);
    frame.add_attachment("data", vec![0x5a; 1000]);
    let per_frame = frame.encoded_len();
    let count = (TOTAL / per_frame) as u64;
    let listener = free_listener();
    let consumer_addr = listener.local_addr().unwrap().to_string();
    let resume = Arc::new(Barrier::new(2));
    let resume_consumer = resume.clone();
    let received = Arc::new(AtomicUsize::new(0));
    let seen = received.clone();
    let consumer = thread::spawn(move || {
        let (socket, _) = listener.accept().unwrap();
        // Stall until the test has seen the producer stall.
        resume_consumer.wait();
        socket.set_read_timeout(Some(support::WAIT)).unwrap();
        let mut reader = FrameReader::new(socket);
        let mut next = 0u64;
        while let Some((h, _)) = reader.read_raw().unwrap() {
            assert_eq!(h.counter(), next, "in order, exactly once");
            next += 1;
            seen.fetch_add(1, Ordering::SeqCst);
        }
        next
    });
    // Backpressure instead of drops; a queue of 4 MiB; the consumer stalls
    // for a few seconds, well within the write timeout.
    let mut relay = Proc::spawn(&[
        "relay",
        "--listen",
        "127.0.0.1:0",
        "--route",
        &format!("1={consumer_addr}"),
        "--when-full",
        "block",
        "--route-buffer",
        "4MiB",
        "--write-timeout",
        "120",
    ]);
    let addr = relay.listening_on();
    let written = Arc::new(AtomicUsize::new(0));
    let progress = written.clone();
    let producer = thread::spawn(move || {
        let mut socket = TcpStream::connect(&addr).unwrap();
        let mut batch = Vec::new();
        let mut frame = frame;
        for seq in 0..count {
            frame.header_mut().set_counter(seq);
            frame.encode_into(&mut batch).expect("the frame encodes");
            if batch.len() >= 256 << 10 || seq + 1 == count {
                socket.write_all(&batch).unwrap();
                progress.fetch_add(batch.len(), Ordering::SeqCst);
                batch.clear();
            }
        }
    });
    // The producer runs until the consumer's queue and the sockets' buffers
    // are full, then blocks: it has not written more after a quiet second.
    let last = support::wait_stalled(&written, Duration::from_millis(1000));
    // The relay's 4 MiB queue, its read buffer, and the kernel's socket
    // buffers on both hops: far less than what the producer wants to send.
    assert!(
        last < 32 << 20,
        "{} MiB written before the stall",
        last >> 20
    );
    resume.wait();
    producer.join().unwrap();
    wait_until("every frame delivered", || {
        received.load(Ordering::SeqCst) as u64 == count
    });
    // Everything passed through a relay whose memory never held more than
    // a bounded part of it.
    let peak = peak_rss_bytes(relay.pid());
    assert!(
        peak < 48 << 20,
        "relay peak RSS {} MiB for {} MiB relayed",
        peak >> 20,
        (count as usize * per_frame) >> 20
    );
    relay.signal("INT");
    assert!(relay.wait().success());
    assert_eq!(consumer.join().unwrap(), count);
}

#[test]
fn ctrl_c_flushes_the_queued_frames_before_the_relay_exits() {
    // `--when-full block`, so that the queue is full (not dropping) when
    // Ctrl-C comes.
    use std::io::Write;
    use std::time::Duration;

    let mut frame = numbered_frame(0, 0, 1);
    frame.add_attachment("data", vec![0x5a; 1000]);
    let listener = free_listener();
    let consumer_addr = listener.local_addr().unwrap().to_string();
    let resume = Arc::new(Barrier::new(2));
    let resume_consumer = resume.clone();
    let consumer = thread::spawn(move || {
        let (socket, _) = listener.accept().unwrap();
        resume_consumer.wait();
        socket.set_read_timeout(Some(support::WAIT)).unwrap();
        let mut reader = FrameReader::new(socket);
        let mut next = 0u64;
        while let Some((h, _)) = reader.read_raw().unwrap() {
            assert_eq!(h.counter(), next, "in order, exactly once");
            next += 1;
        }
        next
    });
    let mut relay = Proc::spawn(&[
        "relay",
        "--listen",
        "127.0.0.1:0",
        "--route",
        &format!("1={consumer_addr}"),
        "--stats",
        "--when-full",
        "block",
        "--route-buffer",
        "4MiB",
        "--write-timeout",
        "120",
    ]);
    let addr = relay.listening_on();
    let written = Arc::new(AtomicUsize::new(0));
    let progress = written.clone();
    let producer = thread::spawn(move || {
        let mut socket = TcpStream::connect(&addr).unwrap();
        let mut batch = Vec::new();
        let mut frame = frame;
        // Far more than the queue and the sockets hold; the relay stops
        // reading at Ctrl-C, and this write then fails.
        for seq in 0..65_536 {
            frame.header_mut().set_counter(seq);
            frame.encode_into(&mut batch).expect("the frame encodes");
            if batch.len() >= 64 << 10 {
                if socket.write_all(&batch).is_err() {
                    return;
                }
                progress.fetch_add(batch.len(), Ordering::SeqCst);
                batch.clear();
            }
        }
    });
    support::wait_stalled(&written, Duration::from_millis(1000));
    // What the relay had written to the (stalled) consumer's socket when
    // it was stopped, from its --stats line.
    let mut before = relay.stdout_line(support::WAIT).expect("a stats line");
    while let Some(line) = relay.stdout_line(Duration::from_millis(10)) {
        before = line;
    }
    let total = |line: &str| -> u64 {
        let at = line.find("(total ").unwrap() + "(total ".len();
        line[at..].split(' ').next().unwrap().parse().unwrap()
    };
    let written_before = total(&before);
    relay.signal("INT");
    thread::sleep(Duration::from_millis(300));
    resume.wait();
    assert!(relay.wait().success());
    let received = consumer.join().unwrap();
    producer.join().unwrap();
    let report = relay.stderr_text();
    let (delivered, undelivered) = route_report(&report, 1);
    assert_eq!((delivered, undelivered), (received, 0), "{report}");
    // The queue held frames at Ctrl-C, and they were written after it.
    assert!(
        delivered > written_before,
        "{delivered} delivered, {written_before} before Ctrl-C"
    );
}
