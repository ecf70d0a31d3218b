//! Encode through a `Frame`, then decode and read: the owned decode into a
//! reused `Frame`, the zero-copy view and the header peek. The owned
//! counterpart of `full`, for the code-size comparison of
//! docs/performance.md.

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use messageframe::{Frame, FrameView, Header};
use messageframe_embedded_example::{fill, init_heap, read_sensors};

#[entry]
fn main() -> ! {
    init_heap();
    let mut frame = Frame::default();
    let mut received = Frame::default();
    let mut out = [0u8; 256];
    let mut counter = 0;
    loop {
        let r = read_sensors(counter);
        fill(&mut frame, &r);
        let Ok(len) = frame.encode_to_buf(&mut &mut out[..]) else {
            continue;
        };
        let wire = black_box(&out[..len]);

        // A router's look at the header only.
        let target = Header::peek(wire).map(|h| h.target()).ok();
        // The owned decode, into a reused frame.
        let voltage = match received.decode_from(wire) {
            Ok(()) => received
                .find("sensor_alpha", "voltage")
                .and_then(|v| v.as_f64()),
            Err(_) => None,
        };
        // The zero-copy view.
        let fw_len = FrameView::new(wire).ok().and_then(|v| {
            v.find("device_core", "fw_version")
                .and_then(|v| v.as_str())
                .map(str::len)
        });
        black_box((target, voltage, fw_len));
        counter += 1;
    }
}
