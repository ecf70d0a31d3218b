//! Receives frames over TCP with the tokio codec and prints them.
//!
//! ```sh
//! cargo run -p messageframe --features tokio --example tcp_receiver -- 127.0.0.1:7878
//! cargo run -p messageframe --features tokio --example tcp_sender -- 127.0.0.1:7878 5
//! ```
//!
//! Each connection is read by its own task through a `FramedRead` with
//! [`FrameCodec`]: frames come out owned, their attachments sharing the
//! socket's read buffer. A malformed frame ends only its connection.

use futures_util::StreamExt;
use messageframe::codec::FrameCodec;
use tokio::net::TcpListener;
use tokio_util::codec::FramedRead;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7878".to_owned());
    let listener = TcpListener::bind(&addr).await?;
    eprintln!("listening on {}", listener.local_addr()?);
    loop {
        let (socket, peer) = listener.accept().await?;
        tokio::spawn(async move {
            let mut frames = FramedRead::new(socket, FrameCodec::new());
            let mut count = 0u64;
            while let Some(item) = frames.next().await {
                match item {
                    Ok(frame) => {
                        count += 1;
                        let h = frame.header();
                        println!(
                            "{peer}: frame {} from {} to {}: {} params, {} attachments",
                            h.counter(),
                            h.source(),
                            h.target(),
                            frame.len(),
                            frame.attachment_count()
                        );
                    }
                    Err(e) => {
                        eprintln!("{peer}: {e}; closing the connection");
                        return;
                    }
                }
            }
            eprintln!("{peer}: closed after {count} frames");
        });
    }
}
