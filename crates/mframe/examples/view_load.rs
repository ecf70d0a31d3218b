//! `mframe view` under load: a real viewer process fed over loopback TCP at
//! a fixed frame rate, with a real headless chromium showing its page (two
//! parameters charted), for a bounded time. Reports what the viewer
//! received, its CPU time and resident memory (from /proc/PID/stat and
//! /proc/PID/status), and how many updates the page got per second.
//!
//! ```text
//! cargo build --release -p mframe
//! cargo run --release -p mframe --example view_load -- [--rate 50000] [--seconds 10] [--params 32] [--fresh-keys]
//! ```
//!
//! `--fresh-keys` gives every frame new parameter names (32 new keys a
//! frame): the viewer keeps `--max-keys` rows (10,000) and counts the rest
//! as dropped, so its memory must stay flat however many keys arrive.
//! The viewer binary is target/release/mframe (`--mframe PATH` for
//! another). Needs chromium (scripts/test installs it).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use chromiumoxide::{Browser, Page};
use futures_util::StreamExt;
use messageframe::{FlatKey, Frame, Header};
use messageframe_testkit::Chromium;

struct Options {
    rate: u64,
    seconds: u64,
    params: usize,
    fresh_keys: bool,
    mframe: PathBuf,
}

fn options() -> Options {
    let mut o = Options {
        rate: 50_000,
        seconds: 10,
        params: 32,
        fresh_keys: false,
        mframe: std::env::current_exe()
            .ok()
            .and_then(|p| Some(p.parent()?.parent()?.join("mframe")))
            .unwrap_or_else(|| PathBuf::from("target/release/mframe")),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--rate" => o.rate = value().parse().expect("--rate N"),
            "--seconds" => o.seconds = value().parse::<u64>().expect("--seconds N").clamp(1, 120),
            "--params" => o.params = value().parse().expect("--params N"),
            "--fresh-keys" => o.fresh_keys = true,
            "--mframe" => o.mframe = PathBuf::from(value()),
            other => panic!("unknown argument {other}"),
        }
    }
    o
}

/// CPU time (user + system, in clock ticks) of a process.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // The command name may hold spaces: the fields count from its `)`.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    // utime and stime are fields 14 and 15 of stat(5), 12 and 13 here.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Resident memory (VmRSS, KiB) of a process.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}

fn clock_ticks_per_second() -> f64 {
    let out = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .expect("getconf CLK_TCK");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(100.0)
}

/// Sends frames at `rate` a second until `stop`, counting them in `sent`.
fn produce(addr: String, o: &Options, stop: &AtomicBool, sent: &AtomicU64) {
    let mut socket = TcpStream::connect(&addr).expect("the viewer accepts");
    socket.set_nodelay(true).ok();
    let keys: Vec<FlatKey> = (0..o.params)
        .map(|k| FlatKey::new(&format!("d{}", k % 8), &format!("p{k}")).unwrap())
        .collect();
    let mut frame = Frame::new(Header::new(200, 7, 1, 2));
    let mut out = Vec::with_capacity(1 << 20);
    let started = Instant::now();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let due = (started.elapsed().as_secs_f64() * o.rate as f64) as u64;
        if n >= due {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        // Caught up in batches of at most 1,000 frames.
        let batch = (due - n).min(1_000);
        out.clear();
        for _ in 0..batch {
            frame.clear();
            let h = frame.header_mut();
            h.update_timestamp();
            h.set_counter(n);
            for (k, key) in keys.iter().enumerate() {
                let x = n as f64 * 0.001 + k as f64;
                if o.fresh_keys {
                    let fresh =
                        FlatKey::new(key.device(), &format!("{}_{n}", key.param())).unwrap();
                    frame.add_flat(&fresh, x.sin());
                } else if k % 2 == 0 {
                    frame.add_flat(key, x.sin());
                } else {
                    frame.add_flat(key, (n as i64) + k as i64);
                }
            }
            // Appends: the batch is one write.
            frame.encode_into(&mut out).unwrap();
            n += 1;
        }
        if socket.write_all(&out).is_err() {
            break;
        }
        sent.store(n, Ordering::Relaxed);
    }
}

async fn eval_u64(page: &Page, js: &str) -> u64 {
    page.evaluate(js)
        .await
        .ok()
        .and_then(|r| r.into_value::<u64>().ok())
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let o = options();
    assert!(
        o.mframe.exists(),
        "{} is missing: cargo build --release -p mframe (or --mframe PATH)",
        o.mframe.display()
    );
    let mut viewer: Child = Command::new(&o.mframe)
        .args(["view", "127.0.0.1:0", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mframe starts");
    let pid = viewer.id();
    let (lines_tx, lines_rx) = mpsc::channel::<String>();
    let stderr = viewer.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let frames_addr = loop {
        let line = lines_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the viewer says where it listens");
        if let Some(addr) = line.strip_prefix("mframe: view: frames: listening on ") {
            break addr.to_owned();
        }
    };
    let mut url = String::new();
    BufReader::new(viewer.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let url = url.trim().to_owned();

    let chromium = Chromium::start();
    let (mut browser, mut handler) = Browser::connect(chromium.ws_url())
        .await
        .expect("CDP connects");
    let events = tokio::spawn(async move { while handler.next().await.is_some() {} });
    let page = browser
        .new_page(url.as_str())
        .await
        .expect("the page opens");

    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let producer = {
        let (stop, sent) = (stop.clone(), sent.clone());
        let o = Options {
            mframe: o.mframe.clone(),
            ..o
        };
        let addr = frames_addr.clone();
        std::thread::spawn(move || produce(addr, &o, &stop, &sent))
    };
    // Two parameters charted once their rows are listed (a double and an
    // int; with --fresh-keys the first two rows).
    let deadline = Instant::now() + Duration::from_secs(10);
    while eval_u64(&page, "document.querySelectorAll('#rows tbody tr').length").await < 2 {
        assert!(Instant::now() < deadline, "the page never listed the rows");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eval_u64(&page, "(() => { const r = document.querySelectorAll('#rows tbody tr'); r[0].click(); r[1].click(); return 1; })()").await;

    let tck = clock_ticks_per_second();
    let t0 = Instant::now();
    let cpu0 = cpu_ticks(pid);
    let sent0 = sent.load(Ordering::Relaxed);
    let updates0 = eval_u64(&page, "window.mframeView.updates").await;
    let mut rss = Vec::new();
    for _ in 0..o.seconds {
        tokio::time::sleep(Duration::from_secs(1)).await;
        rss.push(rss_kib(pid));
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let cpu = (cpu_ticks(pid) - cpu0) as f64 / tck;
    let frames = sent.load(Ordering::Relaxed) - sent0;
    let updates = eval_u64(&page, "window.mframeView.updates").await - updates0;
    let points = eval_u64(&page, "window.mframeView.charts[0].plot.data[0].length").await;
    stop.store(true, Ordering::Relaxed);
    producer.join().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let received = eval_u64(&page, "window.mframeView.last.frames").await;
    let tracked = eval_u64(&page, "window.mframeView.last.tracked").await;
    let dropped = eval_u64(&page, "window.mframeView.last.dropped_values").await;
    let total_sent = sent.load(Ordering::Relaxed);

    println!(
        "mframe view under load: {} s measured, {} params a frame{}",
        o.seconds,
        o.params,
        if o.fresh_keys {
            ", fresh keys in every frame"
        } else {
            ""
        }
    );
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| frames sent / s (target {}) | {:.0} |",
        o.rate,
        frames as f64 / elapsed
    );
    println!("| frames received by the viewer (of sent) | {received} of {total_sent} |");
    println!(
        "| viewer CPU, % of one core | {:.0} % |",
        100.0 * cpu / elapsed
    );
    println!(
        "| viewer RSS, KiB, each second | {} |",
        rss.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("| page updates / s | {:.1} |", updates as f64 / elapsed);
    println!("| chart points on the page | {points} |");
    println!("| rows tracked / values dropped | {tracked} / {dropped} |");

    browser.close().await.ok();
    events.abort();
    drop(chromium);
    let _ = viewer.kill();
    let _ = viewer.wait();
}
