//! Writing an MCAP file: one message per frame, its bytes unchanged.
//!
//! - Channels: one per (source, message_type), topic
//!   `/source/<source>/type/<message_type>`, `message_encoding` `msgpack`,
//!   channel metadata `source`, `message_type` and `content`. Every
//!   channel has a schema record (`messageframe.Frame`, encoding `mframe`,
//!   its data a short description of the wire format): PlotJuggler's MCAP
//!   loader looks up every channel's schema and fails on schema id 0.
//! - A message: `log_time` is the header timestamp (milliseconds) in
//!   nanoseconds, `publish_time` when the frame was received, `sequence`
//!   the low 32 bits of the header's counter.
//! - The file's format is described in a metadata record named `mframe`,
//!   written first.
//! - `--mirror json`: per channel, a second one on
//!   `/source/<source>/type/<message_type>/json` whose messages are
//!   [`mirror::message`](super::mirror::message) JSON (`message_encoding`
//!   `json`, a `jsonschema` schema of the channel's first frame).
//! - Chunks are zstd-compressed, closed by size (`--chunk-size`, 1 MiB
//!   uncompressed by default) and by [`McapOut::flush`], which the export calls at
//!   least once per `--flush-interval`: a file cut anywhere reads back
//!   (`mcap_in`) up to its last whole chunk.
//! - At most [`MAX_PAIRS`] (source, message_type) pairs get channels of
//!   their own (MCAP channel ids are 16-bit); frames of further pairs share
//!   `/source/other`.

use std::collections::{BTreeMap, HashMap};
use std::io::{Seek, Write};

use mcap::records::{MessageHeader, Metadata};
use mcap::{Compression, WriteOptions};
use messageframe::{FrameView, Header};

use super::mirror;

/// The zstd level of the chunks: 1, the fastest of zstd's own levels.
/// Level 3 (the crate's default) made the files about 10 % smaller and the
/// export about twice as slow (docs/performance.md, section 14).
const ZSTD_LEVEL: u32 = 1;

/// `--chunk-size` when not given (the `mcap` crate's default).
pub(crate) const DEFAULT_CHUNK_SIZE: u64 = WriteOptions::DEFAULT_CHUNK_SIZE;

/// (source, message_type) pairs with channels of their own.
pub(crate) const MAX_PAIRS: usize = 8192;

/// The topic of the channel shared by pairs beyond [`MAX_PAIRS`].
const OTHER_TOPIC: &str = "/source/other";

/// What the schema of the frame channels says.
const FRAME_SCHEMA: &str = "messageframe frame (docs/wire-format.md): one MessagePack array \
[header, params, attachments]; header = [timestamp_ms, counter, source, target, message_id, \
message_type, version, flags]; params = map of \"device\\u001fparam\" to [tag, value], tags 10 \
int64, 20 double, 30 string, 40 bool, others kept raw; attachments = array of [name, bin].";

/// The channels of one (source, message_type) pair.
#[derive(Clone, Copy)]
struct Channels {
    frames: u16,
    json: Option<u16>,
}

/// An MCAP file being written.
pub(crate) struct McapOut<W: Write + Seek> {
    writer: mcap::Writer<W>,
    frame_schema: u16,
    channels: HashMap<(u32, i32), Channels>,
    other: Option<Channels>,
    mirror: bool,
    json: Vec<u8>,
    /// Whether a message was written since the last flush.
    unflushed: bool,
}

/// An MCAP error as one line.
pub(crate) fn error(e: mcap::McapError) -> String {
    e.to_string()
}

impl<W: Write + Seek> McapOut<W> {
    /// Starts the file on `out`: the header, the `mframe` metadata and the
    /// frame schema. `seekable` is false for a pipe (wrapped in
    /// `mcap::write::NoSeek`); `mirror`: `--mirror json`.
    pub(crate) fn new(
        out: W,
        seekable: bool,
        mirror: bool,
        chunk_size: u64,
    ) -> Result<Self, String> {
        let options = WriteOptions::new()
            .compression(Some(Compression::Zstd))
            .compression_level(ZSTD_LEVEL)
            .chunk_size(Some(chunk_size))
            .library(format!("mframe {}", env!("CARGO_PKG_VERSION")))
            .disable_seeking(!seekable);
        let mut writer = options.create(out).map_err(error)?;
        writer.write_metadata(&metadata()).map_err(error)?;
        let frame_schema = writer
            .add_schema("messageframe.Frame", "mframe", FRAME_SCHEMA.as_bytes())
            .map_err(error)?;
        Ok(McapOut {
            writer,
            frame_schema,
            channels: HashMap::new(),
            other: None,
            mirror,
            json: Vec::new(),
            unflushed: false,
        })
    }

    /// Whether [`write`](Self::write) needs the frame read (for the JSON
    /// mirror), not only its header.
    pub(crate) fn needs_view(&self) -> bool {
        self.mirror
    }

    /// Writes one frame, valid, with its header (and, with the mirror, the
    /// frame read), received at `received_ns`.
    pub(crate) fn write(
        &mut self,
        header: &Header,
        bytes: &[u8],
        view: Option<&FrameView<'_>>,
        received_ns: u64,
    ) -> Result<(), String> {
        let channels = self.channels_of(header, view)?;
        let message = MessageHeader {
            channel_id: channels.frames,
            // The counter is the publisher's; MCAP's field is 32 bits.
            sequence: header.counter() as u32,
            log_time: header.timestamp().saturating_mul(1_000_000),
            publish_time: received_ns,
        };
        self.writer
            .write_to_known_channel(&message, bytes)
            .map_err(error)?;
        if let (Some(json), Some(view)) = (channels.json, view) {
            mirror::message(&mut self.json, view);
            let message = MessageHeader {
                channel_id: json,
                ..message
            };
            self.writer
                .write_to_known_channel(&message, &self.json)
                .map_err(error)?;
        }
        self.unflushed = true;
        Ok(())
    }

    /// The channels of the frame's (source, message_type), created on
    /// first use.
    fn channels_of(
        &mut self,
        header: &Header,
        view: Option<&FrameView<'_>>,
    ) -> Result<Channels, String> {
        let key = (header.source(), header.message_type());
        if let Some(c) = self.channels.get(&key) {
            return Ok(*c);
        }
        if self.channels.len() >= MAX_PAIRS {
            if let Some(c) = self.other {
                return Ok(c);
            }
            let c = self.add_channels(OTHER_TOPIC, None, view)?;
            self.other = Some(c);
            return Ok(c);
        }
        let topic = format!("/source/{}/type/{}", key.0, key.1);
        let c = self.add_channels(&topic, Some(key), view)?;
        self.channels.insert(key, c);
        Ok(c)
    }

    fn add_channels(
        &mut self,
        topic: &str,
        pair: Option<(u32, i32)>,
        first: Option<&FrameView<'_>>,
    ) -> Result<Channels, String> {
        let mut metadata = BTreeMap::new();
        let (source, message_type) = match pair {
            Some((s, m)) => (s.to_string(), m.to_string()),
            None => ("*".to_owned(), "*".to_owned()),
        };
        metadata.insert("source".to_owned(), source);
        metadata.insert("message_type".to_owned(), message_type);
        metadata.insert(
            "content".to_owned(),
            "messageframe frames, one per message, bytes unchanged".to_owned(),
        );
        let frames = self
            .writer
            .add_channel(self.frame_schema, topic, "msgpack", &metadata)
            .map_err(error)?;
        let json = if let (true, Some(first)) = (self.mirror, first) {
            let json_topic = format!("{topic}/json");
            let name = format!("mframe{}", topic.replace('/', "."));
            let schema = mirror::schema(first, &name);
            let schema = self
                .writer
                .add_schema(&name, "jsonschema", &schema)
                .map_err(error)?;
            metadata.insert(
                "content".to_owned(),
                format!("the frames of {topic} as JSON objects, for plotting"),
            );
            Some(
                self.writer
                    .add_channel(schema, &json_topic, "json", &metadata)
                    .map_err(error)?,
            )
        } else {
            None
        };
        Ok(Channels { frames, json })
    }

    /// Closes the current chunk and flushes it to the file: a recorder
    /// killed after this loses nothing written before it.
    pub(crate) fn flush(&mut self) -> Result<(), String> {
        if self.unflushed {
            self.writer.flush().map_err(error)?;
            self.unflushed = false;
        }
        Ok(())
    }

    /// Writes the summary and the footer; the output, flushed.
    pub(crate) fn finish(mut self) -> Result<W, String> {
        self.writer.finish().map_err(error)?;
        let mut out = self.writer.into_inner();
        out.flush().map_err(|e| e.to_string())?;
        Ok(out)
    }
}

/// The `mframe` metadata record: what the file holds and how to read it.
fn metadata() -> Metadata {
    let entries = [
        ("format", "messageframe"),
        ("mframe_version", env!("CARGO_PKG_VERSION")),
        (
            "messages",
            "channels whose message_encoding is msgpack carry one messageframe frame per \
             message, its bytes exactly as received",
        ),
        ("wire_format", FRAME_SCHEMA),
        (
            "topics",
            "/source/<source>/type/<message_type> (one channel per pair; /source/other once \
             there are 8192 pairs); with --mirror json also <topic>/json, the same frames as \
             JSON objects {\"header\": {...}, \"<device>\": {\"<param>\": value}}",
        ),
        (
            "log_time",
            "the frame header's timestamp (milliseconds since the UNIX epoch) in nanoseconds",
        ),
        (
            "publish_time",
            "when mframe received the frame, in nanoseconds since the UNIX epoch",
        ),
        ("sequence", "the low 32 bits of the frame header's counter"),
    ];
    Metadata {
        name: "mframe".to_owned(),
        metadata: entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    }
}
