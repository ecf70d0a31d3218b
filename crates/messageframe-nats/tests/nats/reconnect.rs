//! A server restart: the client reconnects by itself, the subscriber sees
//! it as events and goes on.

use messageframe::{Frame, Header};
use messageframe_nats::{ConnectionEvent, Filter};
use messageframe_testkit::{NatsServer, ServerOptions};

use crate::support::{connect, next_event, next_frame, next_item, within, WAIT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_is_a_reconnect_event_and_frames_flow_again() {
    let mut server = NatsServer::start(ServerOptions::new());
    let subscriber = connect(&[server.url()], "re").await;
    let mut frames = subscriber.subscribe(Filter::any()).await.unwrap();
    let mut events = subscriber.events();
    subscriber.flush().await.unwrap();

    let publisher = connect(&[server.url()], "re").await;
    publisher
        .publish(&Frame::new(Header::new(1, 2, 3, 4).with_counter(1)))
        .await
        .unwrap();
    assert_eq!(
        next_frame(&mut frames, "before the restart")
            .await
            .header()
            .counter(),
        1
    );

    server.kill();
    assert_eq!(
        next_event(&mut frames, "the disconnection").await,
        ConnectionEvent::Disconnected
    );
    // Down for a moment, so that the client tries and fails to reconnect.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    server.restart();
    // Failed reconnection attempts (connection refused while the server was
    // down) are client errors; then the reconnection (bounded: 50 events).
    let mut attempts = 0;
    loop {
        match next_event(&mut frames, "the reconnection").await {
            ConnectionEvent::Reconnected => break,
            ConnectionEvent::ClientError(_) if attempts < 50 => attempts += 1,
            other => panic!("unexpected event before the reconnection: {other}"),
        }
    }
    println!("reconnect: {attempts} failed attempts reported before the reconnection");
    // The client's own event stream saw the same.
    assert_eq!(
        next_item(&mut events, "event 1").await,
        ConnectionEvent::Disconnected
    );
    for _ in 0..attempts {
        assert!(matches!(
            next_item(&mut events, "a failed attempt").await,
            ConnectionEvent::ClientError(_)
        ));
    }
    assert_eq!(
        next_item(&mut events, "the reconnection").await,
        ConnectionEvent::Reconnected
    );

    // The subscription was renewed: frames published after the restart
    // arrive. The publisher reconnects on its own too; publish until the
    // subscriber gets one (bounded), since frames sent before the
    // publisher is back are not delivered (core NATS, at most once).
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut counter = 2;
    loop {
        publisher
            .publish(&Frame::new(Header::new(1, 2, 3, 4).with_counter(counter)))
            .await
            .unwrap();
        let got = tokio::time::timeout(
            std::time::Duration::from_millis(200),
            next_frame(&mut frames, "after the restart"),
        )
        .await;
        if let Ok(received) = got {
            assert!(received.header().counter() >= 2);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no frame after the restart"
        );
        counter += 1;
    }
    within(WAIT, "flush", publisher.flush()).await.unwrap();
}
