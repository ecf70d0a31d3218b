//! # messageframe-nats
//!
//! [`messageframe`] frames through NATS: published on subjects
//! built from their headers, filtered by the server with wildcards, recorded
//! and replayed by JetStream, and sent by MQTT devices through nats-server's
//! MQTT listener. The payload of every message is the frame's bytes,
//! unchanged.
//!
//! ```no_run
//! # async fn run() -> Result<(), messageframe_nats::Error> {
//! use futures_util::StreamExt;
//! use messageframe::{Frame, Header};
//! use messageframe_nats::{Client, Event, Filter};
//!
//! let client = Client::connect("nats://127.0.0.1:4222", "fleet").await?;
//!
//! // Everything sent to node 99, whatever its type and source.
//! let mut frames = client.subscribe(Filter::any().target(99)).await?;
//!
//! // Message id 1001, type 7, from node 50 to node 99: subject fleet.99.7.50.
//! let mut frame = Frame::new(Header::new(1001, 7, 50, 99));
//! frame.add("battery", "voltage", 12.6);
//! client.publish(&frame).await?;
//!
//! while let Some(item) = frames.next().await {
//!     match item {
//!         Ok(Event::Frame(received)) => {
//!             let voltage = received.frame().find("battery", "voltage");
//!             println!("{} {:?}", received.subject(), voltage);
//!         }
//!         Ok(Event::Connection(event)) => eprintln!("nats: {event}"),
//!         Err(bad_frame) => eprintln!("{bad_frame}"),
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! - Subjects: [`Subjects`] (the scheme, in one place) and [`Filter`].
//! - Core NATS: [`Client`], [`Subscription`] (owned frames sharing the
//!   payload), [`RawSubscription`] (header only, zero-copy views).
//! - JetStream: [`Archive`] (a stream capturing `<prefix>.>`),
//!   [`ReplayOptions`] and [`Replay`] (a durable consumer from a sequence
//!   number or a time).
//! - Files of concatenated frames: [`FrameSplitter`],
//!   [`Client::publish_all`], [`Archive::publish_all`].
//! - Connection events: [`ConnectionEvent`], [`Event`].
//!
//! The subject scheme, the MQTT mapping, limits and reconnects are described
//! in `docs/nats.md`.

#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]
// Examples that need a server are functions that are compiled, never called.
#![doc(test(attr(deny(warnings), allow(dead_code))))]

mod archive;
mod client;
mod error;
mod event;
mod publish;
mod split;
mod subject;
mod subscription;

pub use archive::{Archive, ArchiveConfig, ArchiveState, Recorded, Replay, ReplayOptions};
pub use client::Client;
pub use error::Error;
pub use event::{ConnectionEvent, ConnectionEvents, Event};
pub use split::{FrameSplitter, Pace, NATS_MAX_PAYLOAD_CEILING};
pub use subject::{Filter, InvalidPrefix, Subjects};
pub use subscription::{RawFrame, RawSubscription, Received, Subscription};

/// async-nats, re-exported: `ConnectOptions` for [`Client::connect_with`],
/// and the raw client behind [`Client::nats`].
pub use async_nats;

/// docs/nats.md's examples, compiled as doc tests so they cannot rot.
#[doc = include_str!("../../../docs/nats.md")]
#[cfg(doctest)]
pub struct NatsDocDoctests;
