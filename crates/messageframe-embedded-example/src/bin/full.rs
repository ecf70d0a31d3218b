//! Encode, then decode and read: the owned decode, the zero-copy view and
//! the header peek, as a node that also receives commands does. (The
//! encode + decode + view code-size figure of docs/performance.md.)

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use messageframe::{Frame, FrameView, Header};
use messageframe_embedded_example::{init_heap, read_sensors, FW_VERSION};

#[entry]
fn main() -> ! {
    init_heap();
    let mut frame = Frame::default();
    let mut received = Frame::default();
    let mut out = [0u8; 256];
    let mut counter = 0;
    loop {
        let r = read_sensors(counter);
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
