//! JetStream: the archive records a prefix, durable replays from a sequence
//! number or a time, files of concatenated frames in and out; and in a
//! three-node cluster with replicas = 3, a node killed mid-stream loses no
//! acknowledged frame.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use messageframe::{Frame, Header};
use messageframe_nats::{Archive, ArchiveConfig, Error, Filter, Pace, Replay, ReplayOptions};
use messageframe_testkit::{Cluster, NatsServer, ServerOptions};

use crate::support::{connect, golden_frames, next_item, within, WAIT};

fn frame(counter: u64, target: u32) -> Frame {
    let header = Header::new(1, 7, 50, target)
        .with_counter(counter)
        .with_timestamp(1_700_000_000_000 + counter);
    let mut frame = Frame::new(header);
    frame.add("gps", "fix", counter as i64);
    frame
}

/// Everything a replay yields until it ends, bounded.
async fn drain(mut replay: Replay) -> Vec<messageframe_nats::Recorded> {
    let mut out = Vec::new();
    within(WAIT, "the replay to end", async {
        while let Some(item) = replay.next().await {
            out.push(item.expect("replayed frame"));
        }
    })
    .await;
    out
}

fn counters(recorded: &[messageframe_nats::Recorded]) -> Vec<u64> {
    recorded
        .iter()
        .map(|r| r.frame().header().counter())
        .collect()
}

async fn archive_on(server: &NatsServer, name: &str) -> (messageframe_nats::Client, Archive) {
    let client = connect(&[server.url()], "tele").await;
    let archive = client.archive(ArchiveConfig::new(name)).await.unwrap();
    (client, archive)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_archive_records_every_publisher_and_replays_from_a_sequence_number() {
    let server = NatsServer::start(ServerOptions::new().jetstream());
    let (client, archive) = archive_on(&server, "TELE").await;
    assert_eq!(archive.name(), "TELE");

    // Acknowledged publishes, and plain core publishes: both recorded.
    for counter in 0..5 {
        assert_eq!(
            archive.publish(&frame(counter, 1)).await.unwrap(),
            counter + 1
        );
    }
    for counter in 5..10 {
        client.publish(&frame(counter, 2)).await.unwrap();
    }
    client.flush().await.unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    while archive.state().await.unwrap().frames < 10 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "core publishes not recorded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let state = archive.state().await.unwrap();
    assert_eq!((state.first_sequence, state.last_sequence), (1, 10));

    let all = drain(archive.replay(ReplayOptions::new("all")).await.unwrap()).await;
    assert_eq!(counters(&all), (0..10).collect::<Vec<_>>());
    assert_eq!(all[3].sequence(), 4);
    assert_eq!(all[3].subject(), "tele.1.7.50");
    assert_eq!(all[9].pending(), 0);
    assert_eq!(
        all[3].payload().as_ref(),
        frame(3, 1).encode().expect("the frame encodes").as_slice()
    );

    let from_7 = drain(
        archive
            .replay(ReplayOptions::new("from7").from_sequence(7))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(counters(&from_7), [6, 7, 8, 9]);

    let target_2 = ReplayOptions::new("t2").filter(Filter::any().target(2));
    let only_2 = drain(archive.replay(target_2).await.unwrap()).await;
    assert_eq!(counters(&only_2), [5, 6, 7, 8, 9]);

    // An archive with nothing for the filter ends at once.
    let none = ReplayOptions::new("none").filter(Filter::any().target(404));
    assert!(drain(archive.replay(none).await.unwrap()).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_starts_at_a_time_and_a_durable_replay_resumes_where_it_stopped() {
    let server = NatsServer::start(ServerOptions::new().jetstream());
    let (_client, archive) = archive_on(&server, "TIME").await;
    for counter in 0..3 {
        archive.publish(&frame(counter, 1)).await.unwrap();
    }
    // The server stores its own time with each frame; step past it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let between = SystemTime::now();
    tokio::time::sleep(Duration::from_millis(50)).await;
    for counter in 3..10 {
        archive.publish(&frame(counter, 1)).await.unwrap();
    }
    let later = drain(
        archive
            .replay(ReplayOptions::new("later").from_time(between))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(counters(&later), (3..10).collect::<Vec<_>>());
    assert!(later[0].stored_at() >= between);

    // Take three frames, stop; the same durable name goes on after them.
    let options = ReplayOptions::new("resume").ack_wait(Duration::from_secs(1));
    let mut first = archive.replay(options.clone()).await.unwrap();
    for expected in 0..3 {
        let got = next_item(&mut first, "a frame").await.unwrap();
        assert_eq!(got.frame().header().counter(), expected);
    }
    drop(first);
    let rest = drain(archive.replay(options).await.unwrap()).await;
    assert_eq!(counters(&rest), (3..10).collect::<Vec<_>>());

    // Deleted, the durable starts over.
    archive.delete_replay("resume").await.unwrap();
    let again = drain(archive.replay(ReplayOptions::new("resume")).await.unwrap()).await;
    assert_eq!(again.len(), 10);
}

/// The durable consumers the server has for the stream `name`.
async fn consumer_names(client: &messageframe_nats::Client, name: &str) -> BTreeSet<String> {
    let js = messageframe_nats::async_nats::jetstream::new(client.nats().clone());
    let stream = js.get_stream(name).await.expect("the stream exists");
    stream
        .consumer_names()
        .map(|name| name.expect("a consumer name"))
        .collect()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throwaway_replay_is_deleted_by_the_server_once_idle() {
    let server = NatsServer::start(ServerOptions::new().jetstream());
    let (client, archive) = archive_on(&server, "IDLE").await;
    archive.publish(&frame(0, 1)).await.unwrap();
    let kept = drain(archive.replay(ReplayOptions::new("kept")).await.unwrap()).await;
    let throwaway = ReplayOptions::new("throwaway").inactive_threshold(Duration::from_secs(1));
    let replayed = drain(archive.replay(throwaway).await.unwrap()).await;
    assert_eq!((counters(&kept), counters(&replayed)), (vec![0], vec![0]));
    // Both exist once the replays are done; the one with a threshold goes
    // once nobody has read through it for 1 s (bounded wait).
    let both: BTreeSet<String> = ["kept".to_owned(), "throwaway".to_owned()].into();
    assert_eq!(consumer_names(&client, "IDLE").await, both);
    within(WAIT, "the idle consumer to be deleted", async {
        while consumer_names(&client, "IDLE").await.contains("throwaway") {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert_eq!(
        consumer_names(&client, "IDLE").await,
        BTreeSet::from(["kept".to_owned()])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_of_frames_is_recorded_and_replayed_back_to_the_same_bytes() {
    let server = NatsServer::start(ServerOptions::new().jetstream());
    let (client, archive) = archive_on(&server, "FILES").await;
    let file: Vec<u8> = golden_frames().into_iter().flat_map(|(_, b)| b).collect();
    let stored = within(
        WAIT,
        "publish_all",
        archive.publish_all(&file[..], Pace::AsFastAsPossible),
    )
    .await
    .unwrap();
    assert_eq!(stored, golden_frames().len() as u64);

    // Replayed into a file of concatenated frames: the same bytes.
    let mut copy = Vec::new();
    for recorded in drain(archive.replay(ReplayOptions::new("to-file")).await.unwrap()).await {
        copy.extend_from_slice(recorded.payload());
    }
    assert_eq!(copy, file);

    // Malformed payloads published on the prefix are errors in the replay,
    // which goes on.
    client
        .nats()
        .publish("tele.1.2.3", "garbage".into())
        .await
        .unwrap();
    client.publish(&frame(42, 3)).await.unwrap();
    client.flush().await.unwrap();
    let mut replay = archive
        .replay(ReplayOptions::new("bad").from_sequence(stored + 1))
        .await
        .unwrap();
    match next_item(&mut replay, "the garbage").await {
        Err(Error::Malformed { subject, .. }) => assert_eq!(subject, "tele.1.2.3"),
        other => panic!("{other:?}"),
    }
    let after = next_item(&mut replay, "the frame after").await.unwrap();
    assert_eq!(after.frame().header().counter(), 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_node_of_a_replicated_stream_loses_no_acknowledged_frame() {
    const FRAMES: u64 = 600;
    let mut cluster = Cluster::start(3, ServerOptions::new().jetstream());
    let client = connect(&cluster.urls(), "ha").await;
    let archive = within(
        WAIT,
        "the replicated stream",
        client.archive(ArchiveConfig::new("HA").replicas(3)),
    )
    .await
    .unwrap();
    let leader = archive
        .state()
        .await
        .unwrap()
        .leader
        .expect("a stream leader");

    let mut acknowledged = BTreeSet::new();
    let mut failures = 0;
    for counter in 0..FRAMES {
        if counter == FRAMES / 3 {
            // Mid-stream, the node that leads the stream dies.
            cluster.node_named(&leader).expect("the leader node").kill();
        }
        // A publish whose acknowledgement did not come is retried (bounded):
        // it may or may not have been stored; only acknowledged ones count.
        for _attempt in 0..40 {
            match archive.publish(&frame(counter, 1)).await {
                Ok(_) => {
                    acknowledged.insert(counter);
                    break;
                }
                Err(_) => {
                    failures += 1;
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        }
    }
    assert_eq!(
        acknowledged.len() as u64,
        FRAMES,
        "publishes never acknowledged"
    );
    let new_leader = archive.state().await.unwrap().leader.expect("a new leader");
    assert_ne!(new_leader, leader);

    // The consumer is created through the new JetStream leaders, which may
    // still be settling: retried, bounded.
    let mut replay = None;
    for _attempt in 0..20 {
        match archive.replay(ReplayOptions::new("check")).await {
            Ok(r) => {
                replay = Some(r);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    let replay = replay.expect("a replay after the failover");
    let stored: BTreeSet<u64> = counters(&drain(replay).await).into_iter().collect();
    let lost: Vec<&u64> = acknowledged.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    println!(
        "replicated stream: leader {leader} killed after {} frames, {failures} publishes retried during the failover, new leader {new_leader}, {} acknowledged frames all replayed",
        FRAMES / 3,
        acknowledged.len()
    );
}
