//! Zero heap allocations on the steady-state hot path: fill → encode →
//! decode-into-existing on a reused frame and buffer, counted by a global
//! allocator that only counts on the measuring thread while armed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use messageframe::{FlatKey, Frame, FrameConfig, FrameView, Header};

struct Counting;

// Per thread: tests run in parallel, and each counts only its own work.
thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: the thread-locals may be gone while a thread shuts down.
    if ARMED.try_with(Cell::get).unwrap_or(false) {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        let _ = BYTES.try_with(|c| c.set(c.get() + size));
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations (count, bytes) made by `f` on this thread.
fn count<R>(f: impl FnOnce() -> R) -> (usize, usize, R) {
    let (a0, b0) = (ALLOCS.with(Cell::get), BYTES.with(Cell::get));
    ARMED.with(|a| a.set(true));
    let r = f();
    ARMED.with(|a| a.set(false));
    (ALLOCS.with(Cell::get) - a0, BYTES.with(Cell::get) - b0, r)
}

/// Makes the process's hash seed exist before anything is counted: its
/// first use allocates (once per process), which is no frame's doing, and
/// a test run alone would otherwise count it.
fn warm_up_hash_seed() {
    let mut frame = Frame::default();
    fill(&mut frame, &inputs(100));
    assert!(frame.contains("d3", "p99"));
}

/// The benchmark's parameters (SPEC 5.2), names and strings pre-built.
struct Inputs {
    devices: Vec<String>,
    params: Vec<String>,
    strings: Vec<String>,
}

fn inputs(n: usize) -> Inputs {
    Inputs {
        devices: (0..n).map(|k| format!("d{}", k % 8)).collect(),
        params: (0..n).map(|k| format!("p{k}")).collect(),
        strings: (0..n).map(|k| format!("value_{k}")).collect(),
    }
}

fn fill(frame: &mut Frame, inp: &Inputs) {
    for k in 0..inp.params.len() {
        let (d, p) = (&inp.devices[k], &inp.params[k]);
        match k % 4 {
            0 => frame.add(d, p, k as f64 * 1.5),
            1 => frame.add(d, p, k as i64 * 1000),
            2 => frame.add(d, p, k % 3 == 0),
            _ => frame.add(d, p, &inp.strings[k]),
        }
    }
}

#[test]
fn steady_state_fill_encode_decode_allocates_nothing() {
    for n in [4usize, 32, 127] {
        let inp = inputs(n);
        let mut frame = Frame::new(
            Header::builder()
                .message_id(200)
                .message_type(7)
                .source(1)
                .target(2)
                .build(),
        );
        let mut decoded = Frame::default();
        let mut buf = Vec::new();
        let last = (inp.devices[n - 1].clone(), inp.params[n - 1].clone());
        // Warm-up, the same work as measured below: containers (the lazily
        // built lookup index included) reach their working size.
        for _ in 0..2 {
            frame.clear();
            fill(&mut frame, &inp);
            buf.clear();
            frame.encode_into(&mut buf).unwrap();
            decoded.decode_from(&buf).unwrap();
            assert!(decoded.find(&last.0, &last.1).is_some());
        }
        for i in 0..10u64 {
            let (allocs, bytes, found) = count(|| {
                frame.clear();
                frame.header_mut().set_counter(i);
                fill(&mut frame, &inp);
                buf.clear();
                frame.encode_into(&mut buf).unwrap();
                decoded.decode_from(&buf).unwrap();
                decoded.find(&last.0, &last.1).is_some()
            });
            assert!(found);
            assert_eq!((allocs, bytes), (0, 0), "{n} params, iteration {i}");
        }
        assert_eq!(decoded, frame);
    }
}

#[test]
fn copied_attachments_reuse_their_buffers_in_and_out() {
    // The attachment scenario of SPEC 5.2: 4 parameters and 1 MiB that the
    // caller keeps, copied into the frame and out of the wire by decode_from.
    let inp = inputs(4);
    let capture = vec![0xABu8; 1 << 20];
    let mut frame = Frame::new(
        Header::builder()
            .message_id(200)
            .message_type(7)
            .source(1)
            .target(2)
            .build(),
    );
    let mut decoded = Frame::default();
    let mut buf = Vec::new();
    let mut cycle = |frame: &mut Frame, decoded: &mut Frame| {
        frame.clear();
        fill(frame, &inp);
        frame.add_attachment_copy("iq", &capture);
        buf.clear();
        frame.encode_into(&mut buf).unwrap();
        decoded.decode_from(&buf).unwrap();
        decoded.attachment("iq").map(|d| d.len())
    };
    for _ in 0..2 {
        assert_eq!(cycle(&mut frame, &mut decoded), Some(1 << 20));
    }
    for i in 0..5 {
        let (allocs, bytes, len) = count(|| cycle(&mut frame, &mut decoded));
        assert_eq!(len, Some(1 << 20));
        assert_eq!((allocs, bytes), (0, 0), "iteration {i}");
    }
    assert_eq!(decoded, frame);
}

#[test]
fn a_kept_clone_of_an_attachment_is_never_overwritten() {
    let mut frame = Frame::default();
    frame.add_attachment_copy("a", &[1u8; 64]);
    let kept = frame.attachment("a").unwrap().clone();
    frame.clear();
    frame.add_attachment_copy("a", &[2u8; 64]);
    assert_eq!(
        &kept[..],
        &[1u8; 64][..],
        "the clone still holds the first copy"
    );
    assert_eq!(&frame.attachment("a").unwrap()[..], &[2u8; 64][..]);

    // The same through decode_from: the decoded frame's data is the caller's
    // once cloned.
    let bytes = frame.encode().unwrap();
    let mut decoded = Frame::decode(&bytes).unwrap();
    let kept = decoded.attachment("a").unwrap().clone();
    frame.clear();
    frame.add_attachment_copy("a", &[3u8; 64]);
    decoded.decode_from(&frame.encode().unwrap()).unwrap();
    assert_eq!(&kept[..], &[2u8; 64][..]);
    assert_eq!(&decoded.attachment("a").unwrap()[..], &[3u8; 64][..]);
}

#[test]
fn view_and_header_peek_allocate_nothing() {
    let inp = inputs(127);
    let mut frame = Frame::default();
    fill(&mut frame, &inp);
    frame.add_attachment("iq", vec![0xAB; 1 << 20]);
    let bytes = frame.encode().unwrap();
    let (allocs, _, n) = count(|| {
        let view = FrameView::new(&bytes).unwrap();
        let header = Header::peek(&bytes).unwrap();
        assert_eq!(header, *frame.header());
        let found = view.find("d6", "p126").is_some();
        assert!(found);
        view.iter().count() + view.attachments().count()
    });
    assert_eq!(n, 128);
    assert_eq!(allocs, 0);
}

#[test]
fn flat_key_hot_loop_allocates_nothing() {
    let keys: Vec<FlatKey> = (0..64)
        .map(|k| FlatKey::new("sdr", &format!("ch{k}")).unwrap())
        .collect();
    let mut frame = Frame::default();
    for round in 0..3 {
        let (allocs, _, _) = count(|| {
            frame.clear();
            for (k, key) in keys.iter().enumerate() {
                frame.add_flat(key, (k * round) as i64);
            }
            for key in &keys {
                frame.set_flat(key, 1.5);
                assert!(frame.find_flat(key).is_some());
            }
        });
        if round > 0 {
            assert_eq!(allocs, 0, "round {round}");
        }
    }
}

#[test]
fn the_sizing_hint_removes_all_growth() {
    warm_up_hash_seed();
    for n in [4usize, 127, 150, 1024] {
        let inp = inputs(n);
        let mut frame = Frame::with_config(Header::default(), FrameConfig::for_params(n));
        let (allocs, bytes, ()) = count(|| fill(&mut frame, &inp));
        assert_eq!(
            (allocs, bytes),
            (0, 0),
            "filling {n} params after a hint of {n}"
        );
        assert_eq!(frame.len(), n);
    }
}

/// A new frame holds its first 4 entries and 64 bytes of keys and strings
/// in place (issue 23): a fresh 4-parameter build + encode + decode
/// allocates once, for the encoded bytes (5 times before: the entries and
/// the text arena of both frames). Past that, the decoder sizes a new
/// frame's entries and text arena once each from the input: growing the
/// arena by doubling from nothing took 12 allocations to decode 1,024
/// parameters.
#[test]
fn a_fresh_small_round_trip_allocates_only_the_encoded_bytes() {
    warm_up_hash_seed();
    let inp = inputs(4);
    let (built, _, frame) = count(|| {
        let mut frame = Frame::new(Header::default());
        fill(&mut frame, &inp);
        frame
    });
    assert_eq!(built, 0, "4 params in a new frame: all in place");
    let (encoded, _, bytes) = count(|| frame.encode().unwrap());
    assert_eq!(encoded, 1, "the encoded Vec");
    let (decoded_allocs, _, decoded) = count(|| Frame::decode(&bytes).unwrap());
    assert_eq!(decoded_allocs, 0, "4 params decoded into a new frame");
    assert_eq!(decoded, frame);
    assert!(built + encoded + decoded_allocs <= 2, "issue 23's bound");
    // A fifth parameter, or more text than the frame holds in place, moves
    // the storage to the heap, once.
    let mut five = frame.clone();
    let (allocs, _, ()) = count(|| five.add("d4", "p4", 4));
    assert_eq!(allocs, 1, "the entries spill");
    let mut long = Frame::new(Header::default());
    let device = "d".repeat(60);
    let (allocs, _, ()) = count(|| long.add(&device, "p", "and a value past 64 bytes"));
    assert_eq!(allocs, 1, "the text spills");
    for n in [32usize, 1024] {
        let inp = inputs(n);
        let mut frame = Frame::new(Header::default());
        fill(&mut frame, &inp);
        let bytes = frame.encode().unwrap();
        let (allocs, allocated, decoded) = count(|| Frame::decode(&bytes).unwrap());
        assert_eq!(decoded, frame);
        // The entries, and the text arena once: at 32 bytes a parameter
        // the estimate holds these keys and strings.
        assert_eq!(allocs, 2, "decoding {n} params");
        assert!(
            allocated <= 32 * n + bytes.len(),
            "decoding {n} params allocated {allocated} bytes"
        );
    }
}

#[test]
fn a_fresh_frame_with_one_attachment_allocates_its_store_and_its_copy() {
    // The store's box and the data: its slot and a name of up to 64 bytes
    // live in the box (a slot vector and a name String were two more
    // allocations on each side before).
    warm_up_hash_seed();
    let inp = inputs(4);
    let capture = vec![0x5Au8; 4096];
    let (built, _, frame) = count(|| {
        let mut frame = Frame::new(Header::default());
        fill(&mut frame, &inp);
        frame.add_attachment_copy("spectrum", &capture);
        frame
    });
    assert_eq!(built, 2, "the store and the copy");
    let bytes = frame.encode().unwrap();
    let (decoded_allocs, _, decoded) = count(|| Frame::decode(&bytes).unwrap());
    assert_eq!(decoded_allocs, 2, "the store and the copy");
    assert_eq!(decoded, frame);
    // Shared: a `Bytes` made from a `Vec` allocates its reference count on
    // its first clone (the attachment's slice of it), so clone it once
    // first to count the decode's own allocations only.
    let buffer = messageframe::Bytes::from(bytes.clone());
    drop(buffer.clone());
    let (shared_allocs, _, shared) = count(|| Frame::decode_shared(&buffer).unwrap());
    assert_eq!(shared_allocs, 1, "the store");
    assert_eq!(shared, frame);
    // A second attachment moves both slots to a vector, once.
    let mut two = frame.clone();
    let second = messageframe::Bytes::from_static(&[1, 2, 3]);
    let (allocs, _, ()) = count(|| two.add_attachment("second", second));
    assert_eq!(allocs, 1, "the slot vector");
    assert_eq!(
        two.attachments()
            .map(|(n, d)| (n, d.len()))
            .collect::<Vec<_>>(),
        [("spectrum", 4096), ("second", 3)]
    );
}

#[test]
fn a_reused_frame_past_128_params_also_stops_allocating() {
    let inp = inputs(1024);
    let mut frame = Frame::default();
    let mut decoded = Frame::default();
    let mut buf = Vec::new();
    for round in 0..3 {
        let (allocs, _, ()) = count(|| {
            frame.clear();
            fill(&mut frame, &inp);
            buf.clear();
            frame.encode_into(&mut buf).unwrap();
            decoded.decode_from(&buf).unwrap();
        });
        if round > 0 {
            assert_eq!(allocs, 0, "round {round}");
        } else {
            assert!(
                allocs > 0,
                "the counter works: the first round grows the frame"
            );
        }
    }
}

/// Hostile length claims are checked against the remaining input before
/// anything is reserved: decoding fails and allocates only the error.
#[test]
fn huge_length_claims_fail_without_a_large_allocation() {
    let header: &[u8] = &[0x93, 0x98, 1, 2, 3, 4, 5, 6, 1, 0];
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "map32 claiming 4 billion entries",
            [
                header,
                &[0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, b'k', 0x92, 0x0a, 0x01],
            ]
            .concat(),
        ),
        (
            "bin32 claiming 4 GiB",
            [
                header,
                &[0x80, 0x91, 0x92, 0xa1, b'n', 0xc6, 0xff, 0xff, 0xff, 0xff],
            ]
            .concat(),
        ),
        (
            "str32 claiming 4 GiB",
            [
                header,
                &[0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 0x92, 0x0a, 0x01, 0x90],
            ]
            .concat(),
        ),
        (
            "array32 of attachments claiming 4 billion",
            [
                header,
                &[0x80, 0xdd, 0xff, 0xff, 0xff, 0xff, 0x92, 0xa1, b'n', 0xc4],
            ]
            .concat(),
        ),
        (
            "top-level array32 claiming 4 billion",
            vec![
                0xdd, 0xff, 0xff, 0xff, 0xff, 0x98, 1, 2, 3, 4, 5, 6, 1, 0, 0x80, 0x90, 0xc0, 0xc0,
                0xc0, 0xc0,
            ],
        ),
        (
            "unknown value: nested array16 headers",
            [
                header,
                &[
                    0x81, 0xa1, b'k', 0x92, 0x63, 0xdc, 0xff, 0xff, 0xdc, 0xff, 0xff, 0xdc, 0xff,
                    0xff, 0xdc, 0xff, 0xff, 0xdc,
                ],
            ]
            .concat(),
        ),
    ];
    for (what, input) in &cases {
        assert!(input.len() <= 28, "{what}: {} bytes", input.len());
        let mut reused = Frame::default();
        let (_, owned_bytes, r) = count(|| Frame::decode(input).map(drop));
        assert!(r.is_err(), "{what}");
        let (_, into_bytes, r) = count(|| reused.decode_from(input));
        assert!(r.is_err(), "{what}");
        let (view_allocs, view_bytes, r) = count(|| FrameView::new(input).map(drop));
        assert!(r.is_err(), "{what}");
        for (decoder, bytes) in [
            ("owned", owned_bytes),
            ("into", into_bytes),
            ("view", view_bytes),
        ] {
            assert!(
                bytes < 1024,
                "{what}: {decoder} decode allocated {bytes} bytes"
            );
        }
        assert!(
            view_allocs <= 2,
            "{what}: the view allocates only the error"
        );
    }
}
