//! Encode (the encode-only path), then read what was received: the header
//! peek of a router, and the validating zero-copy decode (`FrameView`) with
//! lookups, as a node that also receives commands does, without a heap.
//! The encode + decode + view code-size figure of docs/performance.md
//! (`full_frame` does the same with an owned `Frame` and its decoder).

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use messageframe::{FrameView, Header};
use messageframe_embedded_example::{read_sensors, write};

#[entry]
fn main() -> ! {
    let mut out = [0u8; 256];
    let mut counter = 0;
    loop {
        let r = read_sensors(counter);
        let Ok(len) = write(&mut out, &r) else {
            continue;
        };
        let wire = black_box(&out[..len]);

        // A router's look at the header only.
        let target = Header::peek(wire).map(|h| h.target()).ok();
        // The decode: checks the whole frame, borrows everything.
        let (voltage, fw_len) = match FrameView::new(wire) {
            Ok(v) => (
                v.find("sensor_alpha", "voltage").and_then(|v| v.as_f64()),
                v.find("device_core", "fw_version")
                    .and_then(|v| v.as_str())
                    .map(str::len),
            ),
            Err(_) => (None, None),
        };
        black_box((target, voltage, fw_len));
        counter += 1;
    }
}
