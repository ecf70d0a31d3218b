//! One server: publish and subscribe, header-based filtering, bad payloads.

use messageframe::{Frame, Header};
use messageframe_nats::{Error, Event, Filter, Subjects};
use messageframe_testkit::{NatsServer, ServerOptions};

use crate::support::{connect, golden_frames, next_frame, next_item, within, WAIT};

/// Filters over the golden frames' headers: some match many, some one, one
/// none.
fn filters() -> Vec<Filter> {
    vec![
        Filter::any(),
        Filter::any().target(4),
        Filter::any().message_type(1),
        Filter::any().source(3),
        Filter::any().target(4).message_type(1).source(3),
        Filter::any().target(99),
        Filter::any().message_type(2).source(10),
        Filter::any().target(2).source(1),
        Filter::any().target(8).message_type(3),
        Filter::any().target(12345),
    ]
}

/// What a filter should let through, decided from the header fields
/// directly (not with `Filter::matches`, the code under test).
fn wanted(filter: &Filter, h: &Header) -> bool {
    filter.target_id().is_none_or(|t| t == h.target())
        && filter
            .message_type_id()
            .is_none_or(|m| m == h.message_type())
        && filter.source_id().is_none_or(|s| s == h.source())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_golden_frame_arrives_byte_exact_through_header_filters() {
    let server = NatsServer::start(ServerOptions::new());
    let client = connect(&[server.url()], "golden").await;
    let goldens = golden_frames();

    let filters = filters();
    let mut subscriptions = Vec::new();
    for filter in &filters {
        subscriptions.push(client.subscribe(*filter).await.expect("subscribe"));
    }
    client.flush().await.expect("flush");

    for (_, bytes) in &goldens {
        let header = client.publish_bytes(bytes.clone()).await.expect("publish");
        assert_eq!(header, Header::peek(bytes).unwrap());
    }
    // One end marker per filter, matching it, published after every golden
    // frame on the same connection: when a subscription sees its own, every
    // golden frame it should get has arrived (NATS keeps a publisher's
    // order).
    for (i, filter) in filters.iter().enumerate() {
        let marker = Header::new(
            1_000_000 + i as i32,
            filter.message_type_id().unwrap_or(0),
            filter.source_id().unwrap_or(0),
            filter.target_id().unwrap_or(0),
        );
        client.publish(&Frame::new(marker)).await.expect("marker");
    }

    for ((i, filter), mut subscription) in filters.iter().enumerate().zip(subscriptions) {
        let mut got = Vec::new();
        loop {
            let received = next_frame(&mut subscription, "a golden frame").await;
            let header = *received.header();
            assert!(wanted(filter, &header), "{filter:?} let through {header:?}");
            assert_eq!(
                received.subject(),
                format!(
                    "golden.{}.{}.{}",
                    header.target(),
                    header.message_type(),
                    header.source()
                )
            );
            if header.message_id() == 1_000_000 + i as i32 {
                break;
            }
            if header.message_id() >= 1_000_000 {
                continue; // another filter's marker that this one also matches
            }
            let (name, bytes) = goldens
                .iter()
                .find(|(_, b)| received.payload().as_ref() == b.as_slice())
                .unwrap_or_else(|| panic!("a payload that is no golden frame byte for byte"));
            // Decoded as the file decodes (compared encoded: NaN != NaN).
            assert_eq!(
                received.frame().encode().expect("the frame encodes"),
                Frame::decode(bytes)
                    .unwrap()
                    .encode()
                    .expect("the frame encodes"),
                "{name}"
            );
            got.push(name.clone());
        }
        let expected: Vec<String> = goldens
            .iter()
            .filter(|(_, b)| wanted(filter, &Header::peek(b).unwrap()))
            .map(|(n, _)| n.clone())
            .collect();
        assert_eq!(got, expected, "{filter:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_decode_owned_with_shared_attachments_and_as_views() {
    let server = NatsServer::start(ServerOptions::new());
    let client = connect(&[server.url()], "shared").await;
    let mut owned = client.subscribe(Filter::any()).await.unwrap();
    let mut raw = client.subscribe(Filter::any()).await.unwrap().raw();
    client.flush().await.unwrap();

    let mut frame = Frame::new(Header::new(1, 2, 3, 4));
    frame.add("sdr", "gain", 12.5);
    frame.add_attachment("iq", vec![0xAB; 100_000]);
    client.publish(&frame).await.unwrap();

    let received = next_frame(&mut owned, "the owned frame").await;
    assert_eq!(received.frame(), &frame);
    // The attachment is a slice of the payload, not a copy.
    let attachment = received.frame().attachment("iq").unwrap();
    let payload = received.payload().as_ptr_range();
    assert!(payload.contains(&attachment.as_ptr()));

    // A recycled frame is decoded into again.
    owned.recycle(received.into_frame());
    frame.header_mut().set_counter(2);
    client.publish(&frame).await.unwrap();
    let again = next_frame(&mut owned, "the second frame").await;
    assert_eq!(again.header().counter(), 2);

    let Ok(Event::Frame(first)) = next_item(&mut raw, "a raw frame").await else {
        panic!("expected a raw frame");
    };
    assert_eq!(first.header().target(), 4);
    let view = first.view().unwrap();
    assert_eq!(
        view.find("sdr", "gain").and_then(|v| v.as_f64()),
        Some(12.5)
    );
    let data = view.attachment("iq").unwrap();
    assert!(first.payload().as_ptr_range().contains(&data.as_ptr()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_payloads_are_errors_with_the_subject_and_the_stream_goes_on() {
    let server = NatsServer::start(ServerOptions::new());
    let client = connect(&[server.url()], "bad").await;
    let mut owned = client.subscribe(Filter::any()).await.unwrap();
    let mut raw = client.subscribe(Filter::any()).await.unwrap().raw();
    client.flush().await.unwrap();

    let good = Frame::new(Header::new(1, 2, 3, 4))
        .encode()
        .expect("the frame encodes");
    let mut trailing = good.clone();
    trailing.push(0xc0);
    let hostile: Vec<Vec<u8>> = vec![
        b"not messagepack at all".to_vec(),
        good[..good.len() - 1].to_vec(),    // truncated
        trailing,                           // a byte after the frame
        vec![0x93, 0x98, 0xcf, 0xff],       // header cut short
        vec![0xdd, 0xff, 0xff, 0xff, 0xff], // array32 claiming 4 G elements
        Vec::new(),                         // empty payload
        {
            // A key that is not UTF-8: the header and extent are fine, the
            // full decode is not.
            let mut f = Frame::new(Header::new(1, 2, 3, 4).with_timestamp(5));
            f.add("dev", "k\u{e9}", 1);
            let mut b = f.encode().expect("the frame encodes");
            let at = b.iter().rposition(|&c| c == 0xc3).unwrap();
            b[at] = 0xff;
            b
        },
    ];
    for bytes in &hostile {
        client
            .nats()
            .publish("bad.4.2.3", bytes.clone().into())
            .await
            .unwrap();
    }
    client
        .publish(&Frame::new(Header::new(9, 2, 3, 4)))
        .await
        .unwrap();

    for bytes in &hostile {
        match next_item(&mut owned, "a malformed frame").await {
            Err(Error::Malformed { subject, error }) => {
                assert_eq!(subject, "bad.4.2.3");
                let text = Error::Malformed { subject, error }.to_string();
                assert!(
                    text.contains("bad.4.2.3") && text.contains("at byte"),
                    "{text}"
                );
            }
            other => panic!("{bytes:02x?}: expected a malformed-frame error, got {other:?}"),
        }
    }
    let last = next_frame(&mut owned, "the good frame after the bad ones").await;
    assert_eq!(last.header().message_id(), 9);

    // The raw subscription rejects what its header-and-extent check sees
    // (everything but the bad key), and the view then rejects the key.
    for (i, _) in hostile.iter().enumerate() {
        match next_item(&mut raw, "a raw item").await {
            Err(Error::Malformed { subject, .. }) => assert_eq!(subject, "bad.4.2.3"),
            Ok(Event::Frame(msg)) if i == hostile.len() - 1 => {
                assert!(matches!(msg.view(), Err(Error::Malformed { .. })));
            }
            other => panic!("hostile #{i}: {other:?}"),
        }
    }
    let Ok(Event::Frame(msg)) = next_item(&mut raw, "the good raw frame").await else {
        panic!("expected the good frame");
    };
    assert_eq!(msg.header().message_id(), 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_message_types_make_valid_subjects_and_filters() {
    let server = NatsServer::start(ServerOptions::new());
    let client = connect(&[server.url()], "neg").await;
    let mut negative = client
        .subscribe(Filter::any().message_type(-5))
        .await
        .unwrap();
    let mut minimum = client
        .subscribe(Filter::any().message_type(i32::MIN).target(1))
        .await
        .unwrap();
    client.flush().await.unwrap();
    for ty in [5, -5, i32::MIN] {
        client
            .publish(&Frame::new(Header::new(0, ty, 2, 1)))
            .await
            .unwrap();
    }
    let got = next_frame(&mut negative, "type -5").await;
    assert_eq!(
        (got.subject(), got.header().message_type()),
        ("neg.1.-5.2", -5)
    );
    let got = next_frame(&mut minimum, "type i32::MIN").await;
    assert_eq!(got.subject(), "neg.1.-2147483648.2");
    assert_eq!(
        Subjects::new("neg").unwrap().subject(got.header()),
        got.subject()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_bytes_checks_the_header_and_extent_before_sending() {
    let server = NatsServer::start(ServerOptions::new());
    let client = connect(&[server.url()], "check").await;
    let good = Frame::new(Header::new(1, 2, 3, 4))
        .encode()
        .expect("the frame encodes");
    let mut two = good.clone();
    two.extend_from_slice(&good);
    for bad in [&b"\x93"[..], &two, &good[..5], b""] {
        match client.publish_bytes(bad.to_vec()).await {
            Err(Error::InvalidFrame { offset: 0, .. }) => {}
            other => panic!("{bad:02x?}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_of_concatenated_frames_is_published_frame_by_frame() {
    let server = NatsServer::start(ServerOptions::new());
    let client = connect(&[server.url()], "file").await;
    let mut frames = client.subscribe(Filter::any()).await.unwrap();
    client.flush().await.unwrap();

    let goldens = golden_frames();
    let file: Vec<u8> = goldens.iter().flat_map(|(_, b)| b.clone()).collect();
    let count = within(
        WAIT,
        "publish_all",
        client.publish_all(&file[..], Default::default()),
    )
    .await
    .unwrap();
    assert_eq!(count, goldens.len() as u64);
    for (name, bytes) in &goldens {
        let got = next_frame(&mut frames, name).await;
        assert_eq!(got.payload().as_ref(), bytes.as_slice(), "{name}");
    }

    // A file cut in the middle of its last frame: every whole frame goes
    // out, then the error names where the cut frame starts.
    let cut = &file[..file.len() - 3];
    let last_start = file.len() - goldens.last().unwrap().1.len();
    match client.publish_all(cut, Default::default()).await {
        Err(Error::InvalidFrame { offset, .. }) => assert_eq!(offset, last_start as u64),
        other => panic!("{other:?}"),
    }
    for (name, bytes) in &goldens[..goldens.len() - 1] {
        let got = next_frame(&mut frames, name).await;
        assert_eq!(
            got.payload().as_ref(),
            bytes.as_slice(),
            "{name} before the cut"
        );
    }
}
