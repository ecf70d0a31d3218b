//! The stream path's steady state allocates nothing: `FrameReader::read_frame`
//! into a reused frame and `FrameWriter::write_frame`, counted by a global
//! allocator that only counts on the measuring thread while armed.

// `FrameReader` and `FrameWriter` need `std`; the run without it
// (.ci/run) leaves this file out.
#![cfg(feature = "std")]

#[path = "support/stream.rs"]
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io;

use messageframe::{Frame, FrameReader, FrameWriter};

struct Counting;

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

fn note() {
    if ARMED.try_with(Cell::get).unwrap_or(false) {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let before = ALLOCS.with(Cell::get);
    ARMED.with(|a| a.set(true));
    let r = f();
    ARMED.with(|a| a.set(false));
    (ALLOCS.with(Cell::get) - before, r)
}

#[test]
fn reading_into_a_reused_frame_allocates_nothing_in_the_steady_state() {
    // Same shape, different contents: parameters, strings, an unknown
    // value, and an attachment (copied into the buffer the frame kept).
    let frames: Vec<Frame> = (0..400)
        .map(|i| {
            let mut f = support::sample_frame(7, 24, 1, 3000);
            f.header_mut().set_counter(i);
            f
        })
        .collect();
    let mut stream = Vec::new();
    for f in &frames {
        f.encode_into(&mut stream).expect("the frame encodes");
    }
    let mut reader = FrameReader::new(&stream[..]);
    let mut frame = Frame::default();
    for _ in 0..8 {
        assert!(reader.read_frame(&mut frame).unwrap());
    }
    let (count, read) = allocations(|| {
        let mut n = 0;
        while reader.read_frame(&mut frame).unwrap() {
            n += 1;
        }
        n
    });
    assert_eq!(read, frames.len() - 8);
    assert_eq!(frame, frames[frames.len() - 1]);
    assert_eq!(count, 0, "{count} allocations for {read} frames");
}

#[test]
fn writing_allocates_nothing_in_the_steady_state() {
    let frame = support::sample_frame(3, 32, 1, 2000);
    let mut writer = FrameWriter::new(io::sink());
    for _ in 0..100 {
        writer.write_frame(&frame).unwrap();
    }
    let (count, ()) = allocations(|| {
        for _ in 0..1000 {
            writer.write_frame(&frame).unwrap();
        }
        writer.flush().unwrap();
    });
    assert_eq!(count, 0);
}
