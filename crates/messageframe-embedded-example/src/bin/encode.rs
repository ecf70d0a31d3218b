//! Encodes the message into a fixed-size buffer with the encode-only path
//! (`FrameEncoder`: no frame, no lookup index, no heap): what a sensor node
//! that only sends does. The encode code-size figure of docs/performance.md.

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use messageframe_embedded_example::{read_sensors, write};

#[entry]
fn main() -> ! {
    let mut out = [0u8; 256];
    let mut counter = 0;
    loop {
        let r = read_sensors(counter);
        let written = write(&mut out, &r);
        // Hand the bytes to "the radio".
        black_box((&out, written.ok()));
        counter += 1;
    }
}
