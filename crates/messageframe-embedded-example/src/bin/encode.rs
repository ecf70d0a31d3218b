//! Builds a frame and encodes it into a fixed-size buffer: what a sensor
//! node does. (Encode only: the code-size figure of docs/performance.md.)

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use messageframe::{Frame, Header};
use messageframe_embedded_example::{init_heap, read_sensors, FW_VERSION};

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
        frame.clear();
        frame.set_header(
            Header::builder()
                .message_id(1001)
                .message_type(1)
                .source(50)
                .target(99)
                .counter(r.counter)
                .timestamp(r.timestamp)
                .build(),
        );
        frame.add("sensor_alpha", "voltage", r.voltage);
        frame.add("device_core", "fw_version", FW_VERSION);
        frame.add("device_core", "uptime_s", r.uptime_s);
        frame.add("device_core", "ok", r.ok);
        frame.add_attachment_copy("raw", &r.samples);
        let written = frame.encode_to_buf(&mut &mut out[..]);
        // Hand the bytes to "the radio".
        black_box((&out, written.ok()));
        counter += 1;
    }
}
