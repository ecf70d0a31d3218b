//! Builds a reused `Frame` and encodes it into a fixed-size buffer: the
//! same message as `encode`, through the frame (its entry table, text arena
//! and lookup index), for the code-size comparison of docs/performance.md.

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use messageframe::Frame;
use messageframe_embedded_example::{fill, init_heap, read_sensors};

#[entry]
fn main() -> ! {
    init_heap();
    let mut frame = Frame::default();
    let mut out = [0u8; 256];
    let mut counter = 0;
    loop {
        let r = read_sensors(counter);
        // One frame reused: after the first message, filling it again
        // allocates nothing.
        fill(&mut frame, &r);
        let written = frame.encode_to_buf(&mut &mut out[..]);
        // Hand the bytes to "the radio".
        black_box((&out, written.ok()));
        counter += 1;
    }
}
