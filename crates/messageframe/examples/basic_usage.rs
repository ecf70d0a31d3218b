//! The quick start: build a frame, send it as bytes, read it back.
//!
//! Run with `cargo run --example basic_usage`.

use messageframe::{Frame, FrameView, Header};

#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MessageId {
    Telemetry = 1001,
}

#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MessageType {
    Data = 1,
}

impl From<MessageId> for i32 {
    fn from(id: MessageId) -> i32 {
        id as i32
    }
}

impl From<MessageType> for i32 {
    fn from(ty: MessageType) -> i32 {
        ty as i32
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Sender: message id and type from our own enums, source 50, target 99.
    let header = Header::new(MessageId::Telemetry, MessageType::Data, 50, 99).with_counter(1);
    let mut frame = Frame::new(header);
    frame.add("sensor_alpha", "voltage", 12.6);
    frame.add("sensor_alpha", "online", true);
    frame.add("device_core", "fw_version", "v3.2.1");
    frame.add("device_core", "uptime_s", 86_400);

    let mut buffer = Vec::new();
    frame.encode_into(&mut buffer)?;
    println!(
        "encoded {} parameters into {} bytes",
        frame.len(),
        buffer.len()
    );

    // Router: reads only the header to decide where the frame goes.
    let peeked = Header::peek(&buffer)?;
    println!(
        "route: message {} from {} to {}",
        peeked.message_id(),
        peeked.source(),
        peeked.target()
    );

    // Receiver: decode and read typed values back.
    let received = Frame::decode(&buffer)?;
    if let Some(v) = received
        .find("sensor_alpha", "voltage")
        .and_then(|v| v.as_f64())
    {
        println!("sensor_alpha.voltage = {v}");
    }
    if let Some(fw) = received
        .find("device_core", "fw_version")
        .and_then(|v| v.as_str())
    {
        println!("device_core.fw_version = {fw}");
    }
    // A type mismatch is None, never a panic.
    assert_eq!(
        received.find("device_core", "fw_version").unwrap().as_i64(),
        None
    );

    println!("all parameters, in insertion order:");
    for (device, param, value) in received.iter() {
        println!("  {device}.{param} = {value} ({})", value.value_type());
    }

    // Or read in place, without copying anything out of the buffer.
    let view = FrameView::new(&buffer)?;
    assert_eq!(
        view.find("device_core", "uptime_s")
            .and_then(|v| v.as_i64()),
        Some(86_400)
    );
    assert_eq!(received, frame);
    Ok(())
}
