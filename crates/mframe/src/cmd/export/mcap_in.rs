//! Reading the frames of an MCAP file, as far as it is whole: what
//! `export FILE.mcap` and `view FILE.mcap` read, and the recovery of a
//! recording that was killed or cut short.
//!
//! The walk is ours, the records' layout the `mcap` crate's: the file is
//! read record by record (opcode, length, body), each length checked against
//! a bound before anything is allocated, so a damaged length is a stop, not
//! a gigabyte allocation. A chunk is read whole, decompressed into a buffer
//! of exactly the size its header gives, and checked against its CRC before
//! any of its messages is handed over: a chunk cut short or damaged gives
//! nothing, and the reading stops there, saying where and why. Everything
//! before it (whole chunks) has been handed over. The summary at the end of
//! the file is not needed: a file without one (the recorder died) reads the
//! same up to where it stops.
//!
//! Frames are the messages of channels whose `message_encoding` is
//! `msgpack` (what `export` writes); other channels (the `--mirror json`
//! ones) are passed over.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read};

use mcap::records::{op, Record};

/// The 8 bytes every MCAP file starts (and ends) with.
pub(crate) const MAGIC: &[u8; 8] = b"\x89MCAP0\r\n";

/// The longest record (or decompressed chunk) read: frames are at most
/// 256 MiB (the decoder's default limit), and a chunk holding one is a
/// little larger. A longer length is damage, reported before any
/// allocation.
const MAX_RECORD: u64 = 1 << 30;

/// What a message record holds before its data: channel id (2), sequence
/// (4), log time (8), publish time (8).
const MESSAGE_HEADER: usize = 22;

/// One frame as the file holds it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct McapFrame<'a> {
    /// The frame's bytes, as recorded.
    pub(crate) data: &'a [u8],
    /// MCAP publish time (ns): when the recorder received the frame.
    pub(crate) publish_time: u64,
}

/// Where and why the reading stopped before the end of the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stopped {
    /// The byte where the first record that is not whole starts (or where
    /// the file ends).
    pub(crate) at: u64,
    /// What is wrong there.
    pub(crate) reason: String,
}

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// How far the reading went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct McapEnd {
    /// Frames handed over.
    pub(crate) frames: u64,
    /// Whole chunks read.
    pub(crate) chunks: u64,
    /// `None`: the data section was read to its end record. Otherwise
    /// where the file stops being whole.
    pub(crate) stopped: Option<Stopped>,
}

/// What a channel carries.
#[derive(Clone, Copy)]
struct Channel {
    frames: bool,
}

/// An item of a chunk, checked before any is handed over.
enum Item {
    Channel(u16, Channel),
    Message { channel: u16, at: usize, len: usize },
}

/// Why a record cannot be used.
type Damage = String;

/// Reads the MCAP file `source` (from its first byte, the magic) and hands
/// each frame to `each`, in file order, until the data section ends or the
/// file stops being whole. An I/O error (other than the end of the input)
/// and an error of `each` end the reading with that error.
pub(crate) fn read<E>(
    source: &mut dyn Read,
    mut each: impl FnMut(McapFrame<'_>) -> Result<(), E>,
) -> Result<McapEnd, ReadError<E>> {
    let mut walk = Walk {
        channels: HashMap::new(),
        end: McapEnd {
            frames: 0,
            chunks: 0,
            stopped: None,
        },
    };
    let mut magic = [0u8; 8];
    let n = read_full(source, &mut magic).map_err(ReadError::Io)?;
    if n < magic.len() || &magic != MAGIC {
        return Ok(walk.stop(0, "the input does not start with the MCAP magic".into()));
    }
    let mut offset = MAGIC.len() as u64;
    let mut body = Vec::new();
    let mut chunk = Vec::new();
    loop {
        let mut head = [0u8; 9];
        let n = read_full(source, &mut head).map_err(ReadError::Io)?;
        if n == 0 {
            return Ok(walk.stop(
                offset,
                format!(
                    "the file ends at byte {offset} without its data end record \
                     (the recording was not finished)"
                ),
            ));
        }
        let opcode = head[0];
        let what = record_name(opcode);
        if n < head.len() {
            return Ok(walk.stop(
                offset,
                format!(
                    "the {what} record at byte {offset} is cut short: \
                     its 9-byte opening has only {n}"
                ),
            ));
        }
        let len = u64::from_le_bytes(head[1..].try_into().expect("8 bytes"));
        if len > MAX_RECORD {
            return Ok(walk.stop(
                offset,
                format!(
                    "the {what} record at byte {offset} claims {len} bytes, \
                     more than a record may have ({MAX_RECORD}): the file is damaged there"
                ),
            ));
        }
        body.clear();
        let got = source
            .take(len)
            .read_to_end(&mut body)
            .map_err(ReadError::Io)? as u64;
        if got < len {
            return Ok(walk.stop(
                offset,
                format!(
                    "the {what} record at byte {offset} is cut short: \
                     it needs {len} bytes after its opening, only {got} are left"
                ),
            ));
        }
        let damaged = |e: Damage| format!("the {what} record at byte {offset} is damaged: {e}");
        match opcode {
            op::CHUNK => {
                let items = match unpack_chunk(&body, &mut chunk, &walk.channels) {
                    Ok(items) => items,
                    Err(e) => return Ok(walk.stop(offset, damaged(e))),
                };
                for item in items {
                    match item {
                        Item::Channel(id, channel) => {
                            walk.channels.insert(id, channel);
                        }
                        Item::Message { channel, at, len } => {
                            walk.message(channel, &chunk[at..at + len], &mut each)?;
                        }
                    }
                }
                walk.end.chunks += 1;
            }
            op::CHANNEL => match channel(&body) {
                Ok((id, channel)) => {
                    walk.channels.insert(id, channel);
                }
                Err(e) => return Ok(walk.stop(offset, damaged(e))),
            },
            op::MESSAGE => {
                let channel = match message_channel(&body, |id| walk.channels.contains_key(&id)) {
                    Ok(channel) => channel,
                    Err(e) => return Ok(walk.stop(offset, damaged(e))),
                };
                walk.message(channel, &body, &mut each)?;
            }
            // The data section is over: what follows (the summary) only
            // indexes it.
            op::DATA_END | op::FOOTER => return Ok(walk.end),
            _ => {}
        }
        offset += 9 + len;
    }
}

/// Why [`read`] failed.
#[derive(Debug)]
pub(crate) enum ReadError<E> {
    /// Reading the input failed.
    Io(io::Error),
    /// The caller's `each` failed.
    Each(E),
}

struct Walk {
    channels: HashMap<u16, Channel>,
    end: McapEnd,
}

impl Walk {
    fn stop(mut self, at: u64, reason: String) -> McapEnd {
        self.end.stopped = Some(Stopped { at, reason });
        self.end
    }

    /// A message record's body (checked): a frame if its channel carries
    /// frames.
    fn message<E>(
        &mut self,
        channel: u16,
        body: &[u8],
        each: &mut impl FnMut(McapFrame<'_>) -> Result<(), E>,
    ) -> Result<(), ReadError<E>> {
        if !self.channels.get(&channel).is_some_and(|c| c.frames) {
            return Ok(());
        }
        // The publish time follows the channel id (2), the sequence (4)
        // and the log time (8).
        let u64_at = |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().expect("8 bytes"));
        each(McapFrame {
            data: &body[MESSAGE_HEADER..],
            publish_time: u64_at(14),
        })
        .map_err(ReadError::Each)?;
        self.end.frames += 1;
        Ok(())
    }
}

/// Reads until `buf` is full or the input ends; how many bytes it got.
fn read_full(source: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match source.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A channel record: its id, and whether it carries frames.
fn channel(body: &[u8]) -> Result<(u16, Channel), Damage> {
    match mcap::parse_record(op::CHANNEL, body) {
        Ok(Record::Channel(c)) => Ok((
            c.id,
            Channel {
                frames: c.message_encoding == "msgpack",
            },
        )),
        Ok(_) => Err("not a channel".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Checks a message record's body: long enough for its header, on a
/// channel already defined.
fn message_channel(body: &[u8], defined: impl Fn(u16) -> bool) -> Result<u16, Damage> {
    if body.len() < MESSAGE_HEADER {
        return Err(format!(
            "a message needs {MESSAGE_HEADER} bytes before its data, it has {}",
            body.len()
        ));
    }
    let channel = u16::from_le_bytes([body[0], body[1]]);
    if defined(channel) {
        Ok(channel)
    } else {
        Err(format!(
            "a message on channel {channel}, which no channel record defines"
        ))
    }
}

/// Decompresses the chunk record `body` into `out` and checks it whole
/// (size, CRC, every record inside) before anything is handed over; the
/// items refer to `out`.
fn unpack_chunk(
    body: &[u8],
    out: &mut Vec<u8>,
    known: &HashMap<u16, Channel>,
) -> Result<Vec<Item>, Damage> {
    let (header, data) = match mcap::parse_record(op::CHUNK, body) {
        Ok(Record::Chunk { header, data }) => (header, data),
        Ok(_) => return Err("not a chunk".into()),
        Err(e) => return Err(e.to_string()),
    };
    let size = header.uncompressed_size;
    if size > MAX_RECORD {
        return Err(format!(
            "it claims {size} bytes once decompressed, more than a chunk may have ({MAX_RECORD})"
        ));
    }
    let size = size as usize;
    out.clear();
    match header.compression.as_str() {
        "" => out.extend_from_slice(&data),
        "zstd" => {
            out.reserve(size);
            // Exactly `size` bytes are made room for: more is an error.
            zstd::stream::copy_decode(&data[..], LimitedWriter { out, room: size })
                .map_err(|e| format!("its zstd data does not decompress: {e}"))?;
        }
        other => {
            return Err(format!(
                "its compression `{other}` is not supported here (mframe writes zstd)"
            ))
        }
    }
    if out.len() != size {
        return Err(format!(
            "it decompresses to {} bytes, its header says {size}",
            out.len()
        ));
    }
    if header.uncompressed_crc != 0 {
        let crc = crc32fast::hash(out);
        if crc != header.uncompressed_crc {
            return Err(format!(
                "its CRC is {crc:#010x}, its header says {:#010x}",
                header.uncompressed_crc
            ));
        }
    }
    let mut items = Vec::new();
    let mut channels: HashMap<u16, Channel> = HashMap::new();
    let mut at = 0usize;
    while at < out.len() {
        let rest = &out[at..];
        if rest.len() < 9 {
            return Err(format!(
                "a record inside it, at byte {at} of its data, is cut short"
            ));
        }
        let opcode = rest[0];
        let len = u64::from_le_bytes(rest[1..9].try_into().expect("8 bytes"));
        if len > (rest.len() - 9) as u64 {
            return Err(format!(
                "the {} record at byte {at} of its data needs {len} bytes, only {} are left",
                record_name(opcode),
                rest.len() - 9
            ));
        }
        let len = len as usize;
        let record = &rest[9..9 + len];
        match opcode {
            op::CHANNEL => {
                let (id, channel) = channel(record)?;
                channels.insert(id, channel);
                items.push(Item::Channel(id, channel));
            }
            op::MESSAGE => {
                let channel = message_channel(record, |id| {
                    channels.contains_key(&id) || known.contains_key(&id)
                })?;
                items.push(Item::Message {
                    channel,
                    at: at + 9,
                    len,
                });
            }
            _ => {}
        }
        at += 9 + len;
    }
    Ok(items)
}

/// A writer that takes at most `room` bytes (a decompressed chunk is
/// exactly the size its header gives: more is damage, not a reason to
/// grow).
struct LimitedWriter<'a> {
    out: &'a mut Vec<u8>,
    room: usize,
}

impl io::Write for LimitedWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() > self.room {
            return Err(io::Error::other(
                "it decompresses to more bytes than its header says",
            ));
        }
        self.out.extend_from_slice(buf);
        self.room -= buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A record's name in messages, by opcode (the MCAP specification's).
fn record_name(opcode: u8) -> &'static str {
    match opcode {
        op::HEADER => "header",
        op::FOOTER => "footer",
        op::SCHEMA => "schema",
        op::CHANNEL => "channel",
        op::MESSAGE => "message",
        op::CHUNK => "chunk",
        op::MESSAGE_INDEX => "message index",
        op::CHUNK_INDEX => "chunk index",
        op::ATTACHMENT => "attachment",
        op::ATTACHMENT_INDEX => "attachment index",
        op::STATISTICS => "statistics",
        op::METADATA => "metadata",
        op::METADATA_INDEX => "metadata index",
        op::SUMMARY_OFFSET => "summary offset",
        op::DATA_END => "data end",
        _ => "unknown",
    }
}
