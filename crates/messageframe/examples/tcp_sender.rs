//! Sends frames over TCP with the tokio codec.
//!
//! ```sh
//! cargo run -p messageframe --features tokio --example tcp_receiver -- 127.0.0.1:7878
//! cargo run -p messageframe --features tokio --example tcp_sender -- 127.0.0.1:7878 5
//! ```
//!
//! [`FrameCodec`] encodes each `&Frame` straight into the `FramedWrite`'s
//! buffer; `feed` queues frames and `flush` (or `send` for the last one)
//! writes them out together.

use futures_util::SinkExt;
use messageframe::codec::FrameCodec;
use messageframe::{Frame, Header};
use tokio::net::TcpStream;
use tokio_util::codec::FramedWrite;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:7878".to_owned());
    let count: u64 = args.next().map_or(Ok(10), |n| n.parse())?;

    let socket = TcpStream::connect(&addr).await?;
    let mut sink = FramedWrite::new(socket, FrameCodec::new());
    // One frame, reused: cleared and refilled for every message.
    let mut frame = Frame::new(Header::new(1001, 1, 50, 99));
    for i in 0..count {
        frame.clear();
        frame.header_mut().set_counter(i);
        frame.header_mut().update_timestamp();
        frame.add("sdr_1", "rx_gain", 25.0 + i as f64);
        frame.add("sdr_1", "locked", i % 2 == 0);
        frame.add_attachment("iq", vec![i as u8; 4096]);
        sink.feed(&frame).await?;
    }
    sink.flush().await?;
    eprintln!("sent {count} frames to {addr}");
    Ok(())
}
