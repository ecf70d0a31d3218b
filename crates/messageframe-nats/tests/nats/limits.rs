//! The server's max_payload: refused before sending, with an error that
//! names the limit and how to raise it.

use messageframe::{Frame, Header};
use messageframe_nats::{ArchiveConfig, Error};
use messageframe_testkit::{NatsServer, ServerOptions};

use crate::support::connect;

fn frame_with_attachment(bytes: usize) -> Frame {
    let mut frame = Frame::new(Header::new(1, 2, 3, 4));
    frame.add_attachment("iq", vec![0xAB; bytes]);
    frame
}

fn assert_names_the_limit(err: &Error, size: usize, max: usize) {
    match err {
        Error::PayloadTooLarge {
            size: s,
            max_payload,
        } => {
            assert_eq!((*s, *max_payload), (size, max));
        }
        other => panic!("expected PayloadTooLarge, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&format!("max_payload of {max} bytes")),
        "{text}"
    );
    assert!(text.contains("nats-server configuration"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_over_the_default_1_mib_limit_fails_before_sending() {
    let server = NatsServer::start(ServerOptions::new().jetstream());
    let client = connect(&[server.url()], "big").await;
    assert_eq!(client.max_payload(), 1 << 20);

    let frame = frame_with_attachment(1 << 20);
    let size = frame.encoded_len();
    let err = client.publish(&frame).await.unwrap_err();
    assert_names_the_limit(&err, size, 1 << 20);
    let err = client
        .publish_bytes(frame.encode().expect("the frame encodes"))
        .await
        .unwrap_err();
    assert_names_the_limit(&err, size, 1 << 20);

    let archive = client.archive(ArchiveConfig::new("BIG")).await.unwrap();
    let err = archive.publish(&frame).await.unwrap_err();
    assert_names_the_limit(&err, size, 1 << 20);
    assert_eq!(archive.state().await.unwrap().frames, 0);

    // Just under the limit goes through, and the connection is unharmed.
    let fits = frame_with_attachment((1 << 20) - 64);
    assert!(fits.encoded_len() <= 1 << 20);
    client.publish(&fits).await.unwrap();
    client.flush().await.unwrap();
    // The archive captured that core publish too (sequence 1).
    assert_eq!(archive.publish(&fits).await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_is_the_one_the_server_announces() {
    let server = NatsServer::start(ServerOptions::new().max_payload(4096));
    let client = connect(&[server.url()], "small").await;
    assert_eq!(client.max_payload(), 4096);
    let frame = frame_with_attachment(5000);
    let err = client.publish(&frame).await.unwrap_err();
    assert_names_the_limit(&err, frame.encoded_len(), 4096);
    client.publish(&frame_with_attachment(1000)).await.unwrap();
    client.flush().await.unwrap();
}
