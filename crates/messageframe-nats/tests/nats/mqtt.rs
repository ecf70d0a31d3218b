//! An MQTT device (rumqttc) publishes to nats-server's MQTT listener on
//! `<prefix>/<target>/<type>/<source>`; a NATS subscriber gets the frame on
//! `<prefix>.<target>.<type>.<source>`, byte for byte.

use std::time::Duration;

use messageframe::{Frame, Header};
use messageframe_nats::{Filter, Subjects};
use messageframe_testkit::{NatsServer, ServerOptions};
use rumqttc::{AsyncClient, Event as MqttEvent, MqttOptions, Packet, QoS};

use crate::support::{connect, golden_frames, next_frame, within, WAIT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mqtt_device_publishes_frames_that_nats_subscribers_receive_byte_for_byte() {
    let server = NatsServer::start(ServerOptions::new().mqtt());
    let subjects = Subjects::new("plant.line-2").unwrap();
    let client = connect(&[server.url()], subjects.prefix()).await;
    let mut everything = client.subscribe(Filter::any()).await.unwrap();
    let mut negative = client
        .subscribe(Filter::any().message_type(-7).target(99))
        .await
        .unwrap();
    client.flush().await.unwrap();

    let mut options = MqttOptions::new("sensor-node-50", "127.0.0.1", server.mqtt_port());
    options.set_keep_alive(Duration::from_secs(5));
    options.set_max_packet_size(1 << 20, 1 << 20);
    let (device, mut eventloop) = AsyncClient::new(options, 64);

    // The golden frames, then one with a negative message type.
    let mut payloads: Vec<Vec<u8>> = golden_frames().into_iter().map(|(_, b)| b).collect();
    let mut negative_frame = Frame::new(Header::new(1, -7, 50, 99).with_counter(77));
    negative_frame.add("sensor", "temperature", -3.5);
    payloads.push(negative_frame.encode().expect("the frame encodes"));

    for bytes in &payloads {
        let topic = subjects.mqtt_topic(&Header::peek(bytes).unwrap());
        device
            .publish(topic, QoS::AtLeastOnce, false, bytes.clone())
            .await
            .unwrap();
    }
    // Drive the device's connection until the server acknowledged every
    // publish (QoS 1), bounded.
    let mut acked = 0;
    within(WAIT, "MQTT acknowledgements", async {
        while acked < payloads.len() {
            match eventloop.poll().await {
                Ok(MqttEvent::Incoming(Packet::PubAck(_))) => acked += 1,
                Ok(_) => {}
                Err(e) => panic!("MQTT connection: {e}"),
            }
        }
    })
    .await;

    for bytes in &payloads {
        let got = next_frame(&mut everything, "a frame from the MQTT device").await;
        assert_eq!(got.payload().as_ref(), bytes.as_slice());
        assert_eq!(got.subject(), subjects.subject(got.header()));
    }
    let got = next_frame(&mut negative, "the negative-type frame").await;
    assert_eq!(got.subject(), "plant.line-2.99.-7.50");
    assert_eq!(got.frame(), &negative_frame);
    device.disconnect().await.unwrap();
}
