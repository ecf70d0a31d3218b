//! A three-node cluster on loopback: subject filtering across routes, and
//! a bounded load with zero loss.

use std::time::{Duration, Instant};

use messageframe::{FlatKey, Frame, Header};
use messageframe_nats::async_nats::ConnectOptions;
use messageframe_nats::{Client, ConnectionEvent, Error, Event, Filter};
use messageframe_testkit::{Cluster, ServerOptions};

use crate::support::{await_interest, connect, next_frame, next_item, telemetry_frame, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_published_on_node_1_reaches_a_filtered_subscriber_on_node_3() {
    let cluster = Cluster::start(3, ServerOptions::new());
    let publisher = connect(&[cluster.node(0).url()], "fleet").await;
    let subscriber = connect(&[cluster.node(2).url()], "fleet").await;
    let mut for_99 = subscriber
        .subscribe(Filter::any().target(99).message_type(7))
        .await
        .unwrap();
    let mut from_50 = subscriber
        .subscribe(Filter::any().source(50))
        .await
        .unwrap();
    await_interest(&publisher, &subscriber).await;

    let frames = [
        Header::new(1, 7, 50, 99),                 // both
        Header::new(2, 8, 50, 99),                 // from_50 only
        Header::new(3, 7, 51, 99),                 // for_99 only
        Header::new(4, 7, 51, 98),                 // neither
        Header::new(5, 7, 50, 99).with_counter(9), // both, last
    ];
    for header in frames {
        let mut frame = Frame::new(header);
        frame.add("node", "published_on", "n1");
        publisher.publish(&frame).await.unwrap();
    }
    publisher.flush().await.unwrap();

    let mut got_99 = Vec::new();
    for _ in 0..3 {
        got_99.push(
            next_frame(&mut for_99, "for 99")
                .await
                .header()
                .message_id(),
        );
    }
    let mut got_50 = Vec::new();
    for _ in 0..3 {
        got_50.push(
            next_frame(&mut from_50, "from 50")
                .await
                .header()
                .message_id(),
        );
    }
    assert_eq!(got_99, [1, 3, 5]);
    assert_eq!(got_50, [1, 2, 5]);
}

/// Frames through the cluster in the load test.
const LOAD_FRAMES: u64 = 100_000;

/// A subscriber client whose buffer holds the whole load: the test is
/// about loss in the broker and the cluster, not about a subscriber that
/// a busy 2-core machine may deschedule for a moment.
async fn load_subscriber(url: String) -> Client {
    let options = ConnectOptions::new().subscription_capacity(LOAD_FRAMES as usize + 1_000);
    within(
        crate::support::WAIT,
        "connect",
        Client::connect_with(options, url, "load"),
    )
    .await
    .unwrap()
}

/// Receives every frame, checking each counter is the next one: none
/// lost, none duplicated, none out of order.
async fn receive_all(mut frames: messageframe_nats::Subscription, who: &'static str) -> u64 {
    let seq = FlatKey::new("load", "n").unwrap();
    let mut expected = 0;
    while expected < LOAD_FRAMES {
        match next_item(&mut frames, who).await {
            Ok(Event::Frame(received)) => {
                let frame = received.frame();
                assert_eq!(
                    frame.header().counter(),
                    expected,
                    "{who}: lost or reordered"
                );
                assert_eq!(
                    frame.find_flat(&seq).and_then(|v| v.as_i64()),
                    Some(expected as i64),
                    "{who}: the counter parameter"
                );
                assert_eq!(frame.len(), 33);
                expected += 1;
                frames.recycle(received.into_frame());
            }
            Ok(Event::Connection(event)) => {
                assert!(!event.may_lose_frames(), "{who}: {event}");
                assert_ne!(event, ConnectionEvent::SlowConsumer);
            }
            Err(e @ Error::Malformed { .. }) => panic!("{who}: {e}"),
            Err(e) => panic!("{who}: {e}"),
        }
    }
    expected
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_frames_reach_two_subscribers_through_the_cluster_without_loss() {
    let cluster = Cluster::start(3, ServerOptions::new());
    let publisher = connect(&[cluster.node(0).url()], "load").await;
    let near = load_subscriber(cluster.node(1).url()).await;
    let far = load_subscriber(cluster.node(2).url()).await;
    let near_frames = near.subscribe(Filter::any().message_type(7)).await.unwrap();
    let far_frames = far.subscribe(Filter::any().message_type(7)).await.unwrap();
    await_interest(&publisher, &near).await;
    await_interest(&publisher, &far).await;

    let near_task = tokio::spawn(receive_all(near_frames, "subscriber on node 2"));
    let far_task = tokio::spawn(receive_all(far_frames, "subscriber on node 3"));

    // 32 parameters of SPEC 5.2 plus the counter as a parameter; the same
    // frame is updated in place for each message.
    let mut frame = telemetry_frame(32, 0);
    let seq = FlatKey::new("load", "n").unwrap();
    frame.add_flat(&seq, 0_i64);
    let limit = Duration::from_secs(240);
    let start = Instant::now();
    within(limit, "publishing the load", async {
        for counter in 0..LOAD_FRAMES {
            frame.header_mut().set_counter(counter);
            assert!(frame.update_flat(&seq, counter as i64));
            publisher.publish(&frame).await.unwrap();
        }
        publisher.flush().await.unwrap();
    })
    .await;
    let published = start.elapsed();

    let near_count = within(limit, "node 2's subscriber", near_task)
        .await
        .unwrap();
    let far_count = within(limit, "node 3's subscriber", far_task)
        .await
        .unwrap();
    let received = start.elapsed();
    assert_eq!((near_count, far_count), (LOAD_FRAMES, LOAD_FRAMES));
    let size = frame.encoded_len();
    println!(
        "load: {LOAD_FRAMES} frames of {size} bytes (32 params + counter) node 1 -> nodes 2 and 3: \
         published in {published:.2?} ({:.0} frames/s), all received by both in {received:.2?} \
         ({:.0} frames/s per subscriber), zero loss",
        LOAD_FRAMES as f64 / published.as_secs_f64(),
        LOAD_FRAMES as f64 / received.as_secs_f64(),
    );
}
