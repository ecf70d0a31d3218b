//! `mframe view`'s edges, as a real process, without a browser: its memory
//! when small kept attachments ride on large frames, its answers to pages
//! of other origins, its security headers, and a WebSocket message cut
//! inside a UTF-8 character.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use messageframe::Frame;
use support::{figures, numbered_frame, proc_status_kib, wait_until, within, Proc};

const DEADLINE: Duration = Duration::from_secs(90);

/// A viewer fed over TCP: (process, page host:port, frames address).
fn viewer(extra: &[&str]) -> (Proc, String, String) {
    let mut args = vec!["view", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let view = Proc::spawn(&args);
    let url = view.stdout_line(support::WAIT).expect("the page's URL");
    let frames = view.listening_on();
    let host = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    (view, host, frames)
}

/// `GET path` with extra header lines: (status, headers, body).
fn get(host: &str, path: &str, headers: &str) -> (u16, String, String) {
    let mut http = TcpStream::connect(host).unwrap();
    write!(
        http,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    http.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_owned())
}

#[test]
fn small_kept_attachments_do_not_keep_large_frames_alive() {
    within(DEADLINE, || {
        const FRAMES: u64 = 12;
        let (mut view, host, frames) = viewer(&[]);
        let mut producer = TcpStream::connect(&frames).unwrap();
        for i in 0..FRAMES {
            let mut f = numbered_frame(1, i, 1);
            // 14 MiB (over --max-attachment: listed, not kept) and 1 KiB
            // (kept) in one frame.
            f.add_attachment("big", vec![1u8; 14 << 20]);
            f.add_attachment(&format!("small{i}"), vec![2u8; 1 << 10]);
            producer.write_all(&f.encode().unwrap()).unwrap();
        }
        wait_until("every frame on the page", || {
            get(&host, "/api/state", "")
                .2
                .contains(&format!("\"frames\":{FRAMES}"))
        });
        let rss = proc_status_kib(view.pid(), "VmRSS:") << 10;
        let peak = support::peak_rss_bytes(view.pid());
        // A kept slice of each frame would hold 12 x 14 MiB.
        assert!(rss < 64 << 20, "{} MiB resident", rss >> 20);
        let (status, _, body) = get(&host, "/api/attachment?id=12", "");
        assert_eq!(status, 200);
        assert_eq!(body.len(), 1 << 10);
        drop(producer);
        view.signal("TERM");
        view.wait();
        figures(
            "view_attachments",
            &[
                ("frames", FRAMES.to_string()),
                ("frame_MiB", "14".to_owned()),
                ("kept_attachments", FRAMES.to_string()),
                ("rss_after_MiB", (rss >> 20).to_string()),
                ("peak_rss_MiB", (peak >> 20).to_string()),
            ],
        );
    });
}

#[test]
fn only_the_pages_own_origin_is_answered_and_every_response_has_the_security_headers() {
    within(DEADLINE, || {
        let (mut view, host, _) = viewer(&[]);
        let port: u16 = host.rsplit(':').next().unwrap().parse().unwrap();
        for path in ["/", "/assets/app.js", "/api/state"] {
            let (status, head, _) = get(&host, path, "");
            assert_eq!(status, 200, "{path}");
            assert!(head.contains("x-content-type-options: nosniff"), "{head}");
            assert!(head.contains("x-frame-options: deny"), "{head}");
            assert!(
                head.contains("content-security-policy: default-src 'none'; script-src 'self'"),
                "{head}"
            );
        }
        let own = format!("Origin: http://{host}\r\n");
        assert_eq!(get(&host, "/api/state", &own).0, 200);
        // A page another local program serves, on another port.
        let other_port = format!("Origin: http://127.0.0.1:{}\r\n", port.wrapping_add(1));
        let (status, head, _) = get(&host, "/api/state", &other_port);
        assert_eq!(status, 403);
        assert!(head.contains("x-frame-options: deny"), "{head}");
        let upgrade = format!(
            "{other_port}Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        );
        let mut http = TcpStream::connect(&host).unwrap();
        write!(http, "GET /ws HTTP/1.1\r\nHost: {host}\r\n{upgrade}\r\n").unwrap();
        let mut line = String::new();
        BufReader::new(&http).read_line(&mut line).unwrap();
        assert!(line.starts_with("HTTP/1.1 403"), "{line}");
        view.signal("TERM");
        view.wait();
    });
}

/// A WebSocket client, by hand: the upgrade, masked text frames out,
/// text frames in.
struct Ws {
    stream: TcpStream,
}

impl Ws {
    fn connect(host: &str) -> Ws {
        let mut stream = TcpStream::connect(host).unwrap();
        write!(
            stream,
            "GET /ws HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        )
        .unwrap();
        // The response's head, byte by byte (a frame may follow it).
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut b = [0u8; 1];
            stream.read_exact(&mut b).unwrap();
            head.push(b[0]);
        }
        let head = String::from_utf8(head).unwrap();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        stream.set_read_timeout(Some(support::WAIT)).unwrap();
        Ws { stream }
    }

    fn send_text(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut frame = vec![0x81u8, 0x80 | 127];
        frame.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        let mask = [0x12u8, 0x34, 0x56, 0x78];
        frame.extend_from_slice(&mask);
        frame.extend(bytes.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame).unwrap();
    }

    /// The next text message, or `None` if the connection ends.
    fn recv_text(&mut self) -> Option<String> {
        loop {
            let mut head = [0u8; 2];
            self.stream.read_exact(&mut head).ok()?;
            let len = match head[1] & 0x7f {
                126 => {
                    let mut l = [0u8; 2];
                    self.stream.read_exact(&mut l).ok()?;
                    u64::from(u16::from_be_bytes(l))
                }
                127 => {
                    let mut l = [0u8; 8];
                    self.stream.read_exact(&mut l).ok()?;
                    u64::from_be_bytes(l)
                }
                n => u64::from(n),
            };
            let mut payload = vec![0u8; len as usize];
            self.stream.read_exact(&mut payload).ok()?;
            match head[0] & 0x0f {
                0x1 => return String::from_utf8(payload).ok(),
                0x8 => return None,
                _ => {}
            }
        }
    }
}

#[test]
fn a_websocket_message_cut_inside_a_character_is_no_panic() {
    within(DEADLINE, || {
        let (mut view, host, frames) = viewer(&[]);
        let mut ws = Ws::connect(&host);
        let first = ws.recv_text().expect("the first update");
        assert!(first.contains("\"frames\":0"), "{first}");
        // 80 KB of two-byte characters after one byte: the server reads the
        // first 64 KiB, and byte 65,536 is inside a character.
        let text = format!("x{}", "é".repeat(40_000));
        assert!(!text.is_char_boundary(64 << 10));
        ws.send_text(&text);
        // The page's connection lives on: a frame sent now is pushed to it.
        let mut producer = TcpStream::connect(&frames).unwrap();
        let f: Frame = numbered_frame(1, 0, 1);
        producer.write_all(&f.encode().unwrap()).unwrap();
        let next = ws.recv_text().expect("an update after the long message");
        assert!(next.contains("\"frames\":1"), "{next}");
        view.signal("TERM");
        view.wait();
        assert!(
            !view.stderr_text().contains("panicked"),
            "{}",
            view.stderr_text()
        );
    });
}
