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
    // The data section's CRC (the data end record holds it) covers what
    // the chunks' CRCs do not: the records between them.
    let mut crc = crc32fast::Hasher::new();
    crc.update(&magic);
    let mut body = Vec::new();
    let mut chunk = Vec::new();
    let mut zstd = Zstd::new().map_err(ReadError::Io)?;
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
        if opcode == op::DATA_END {
            return Ok(walk.data_end(offset, &body, crc.finalize()));
        }
        crc.update(&head);
        crc.update(&body);
        match opcode {
            op::CHUNK => {
                let items = match unpack_chunk(&body, &mut chunk, &mut zstd, &walk.channels) {
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
            // A footer without a data end record: nothing to check.
            op::FOOTER => return Ok(walk.end),
            // Records the frames do not need (private ones from 0x80 on).
            op::HEADER..=op::DATA_END | 0x80.. => {}
            // No such record: a damaged opcode, maybe a chunk's.
            _ => {
                return Ok(walk.stop(
                    offset,
                    format!("the record at byte {offset} has opcode {opcode:#04x}, which MCAP does not define: the file is damaged there"),
                ))
            }
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
    /// The data end record at `offset`: the end of the data, whole if its
    /// CRC (when written) is that of what was read.
    fn data_end(self, offset: u64, body: &[u8], read: u32) -> McapEnd {
        let saved = body
            .get(..4)
            .map_or(0, |b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
        if saved == 0 || saved == read {
            return self.end;
        }
        self.stop(
            offset,
            format!(
                "the data section's CRC is {read:#010x}, its data end record at byte {offset} \
                 says {saved:#010x}: a record outside the chunks is damaged (the frames of the \
                 whole chunks before it were read)"
            ),
        )
    }

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
    zstd: &mut Zstd,
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
        "zstd" => zstd.decode(&data, size, out)?,
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

/// A zstd decoder kept from chunk to chunk (a context is large to set up),
/// and the piece of output it decodes into.
struct Zstd {
    decoder: zstd::stream::raw::Decoder<'static>,
    scratch: Vec<u8>,
}

impl Zstd {
    fn new() -> io::Result<Zstd> {
        Ok(Zstd {
            decoder: zstd::stream::raw::Decoder::new()?,
            scratch: vec![0; 64 << 10],
        })
    }

    /// Decodes `data` into `out`, which must come to exactly `size` bytes
    /// (more is damage: `out` never grows past it).
    fn decode(&mut self, data: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), Damage> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        let failed = |e: io::Error| format!("its zstd data does not decompress: {e}");
        self.decoder.reinit().map_err(failed)?;
        let mut input = InBuffer::around(data);
        loop {
            let mut output = OutBuffer::around(&mut self.scratch[..]);
            let hint = self.decoder.run(&mut input, &mut output).map_err(failed)?;
            let produced = output.pos();
            if out.len() + produced > size {
                return Err(format!(
                    "it decompresses to more than the {size} bytes its header says"
                ));
            }
            out.extend_from_slice(&self.scratch[..produced]);
            if input.pos() == data.len() {
                // 0: the last frame is whole and flushed.
                if hint == 0 {
                    return Ok(());
                }
                if produced == 0 {
                    return Err("its zstd data ends inside a frame".into());
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use messageframe::{Decoder, Frame, Header};

    use super::super::mcap_out::McapOut;
    use super::*;

    /// Frames of a few parameters, from three sources.
    fn frames(n: u64) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let mut f = Frame::new(
                    Header::builder()
                        .timestamp(1_700_000_000_000 + i)
                        .counter(i)
                        .source((i % 3) as u32)
                        .build(),
                );
                f.add("dev", "i", i as i64);
                f.add("dev", "x", i as f64 / 7.0);
                f.add("dev", "s", format!("value {i}").as_str());
                f.encode().unwrap()
            })
            .collect()
    }

    /// The frames recorded as `export` does, with small chunks and the
    /// JSON mirror.
    fn recording(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut out = McapOut::new(Cursor::new(Vec::new()), true, true, 1024).unwrap();
        let decoder = Decoder::new();
        for (i, f) in frames.iter().enumerate() {
            let view = decoder.view(f).unwrap();
            out.write(view.header(), f, Some(&view), 1_000 + i as u64)
                .unwrap();
        }
        out.finish().unwrap().into_inner()
    }

    fn read_all(bytes: &[u8]) -> (Vec<(Vec<u8>, u64)>, McapEnd) {
        let mut got = Vec::new();
        let end = read(&mut &bytes[..], |f| {
            got.push((f.data.to_vec(), f.publish_time));
            Ok::<(), ()>(())
        })
        .unwrap();
        (got, end)
    }

    #[test]
    fn a_whole_file_gives_every_frame_and_its_publish_time() {
        let frames = frames(100);
        let file = recording(&frames);
        let (got, end) = read_all(&file);
        assert_eq!(end.stopped, None);
        assert!(end.chunks > 3, "{} chunks", end.chunks);
        assert_eq!(got.len(), frames.len());
        for (i, ((data, publish), frame)) in got.iter().zip(&frames).enumerate() {
            assert_eq!(data, frame);
            assert_eq!(*publish, 1_000 + i as u64);
        }
    }

    #[test]
    fn every_prefix_gives_the_frames_of_its_whole_chunks_and_says_where_it_stopped() {
        let frames = frames(40);
        let file = recording(&frames);
        let summary = mcap::Summary::read(&file).unwrap().unwrap();
        let data_end = mcap::read::footer(&file).unwrap().summary_start as usize;
        let mut ends = Vec::new();
        let mut total = 0;
        for index in &summary.chunk_indexes {
            total += summary
                .stream_chunk(&file, index)
                .unwrap()
                .filter(|m| m.as_ref().unwrap().channel.message_encoding == "msgpack")
                .count();
            ends.push((
                (index.chunk_start_offset + index.chunk_length) as usize,
                total,
            ));
        }
        assert!(ends.len() > 3, "{} chunks", ends.len());
        for len in 0..file.len() {
            let (got, end) = read_all(&file[..len]);
            let whole = ends
                .iter()
                .rev()
                .find(|(e, _)| *e <= len)
                .map_or(0, |(_, n)| *n);
            assert_eq!(got.len(), whole, "cut at {len}");
            for (g, f) in got.iter().zip(&frames) {
                assert_eq!(&g.0, f);
            }
            if len < data_end {
                let stopped = end.stopped.expect("a stop");
                assert!(stopped.at <= len as u64, "{len}: {stopped:?}");
            } else {
                assert_eq!(end.stopped, None);
            }
        }
    }

    #[test]
    fn damaged_files_never_panic_and_give_only_frames_as_written() {
        let frames = frames(60);
        let file = recording(&frames);
        // What is read are frames as written, in their order, with their
        // publish time. A damaged chunk is never read; a damaged record
        // outside the chunks may hide one (a chunk's opcode turned into
        // that of a record the frames do not need), which the data
        // section's CRC then reports.
        let check = |damaged: &[u8]| {
            let (got, end) = read_all(damaged);
            let mut written = frames.iter().enumerate();
            let mut skipped = false;
            for (position, (data, publish)) in got.iter().enumerate() {
                let (i, _) = written
                    .by_ref()
                    .find(|(_, f)| *f == data)
                    .expect("a frame that was not written, or out of order");
                assert_eq!(*publish, 1_000 + i as u64);
                skipped |= i != position;
            }
            if skipped {
                assert!(end.stopped.is_some(), "frames left out without a word");
            }
        };
        // Every byte of the data section with a bit flipped, one at a time;
        // every third byte set to 0xff.
        let data_end = mcap::read::footer(&file).unwrap().summary_start as usize;
        for at in 0..data_end {
            let mut damaged = file.clone();
            damaged[at] ^= 0x01;
            check(&damaged);
            if at.is_multiple_of(3) {
                damaged[at] = 0xff;
                check(&damaged);
            }
        }
        // Record lengths that claim too much, anywhere.
        for at in (8..data_end).step_by(7) {
            let mut damaged = file.clone();
            damaged[at + 1..at + 9].copy_from_slice(&u64::MAX.to_le_bytes());
            check(&damaged);
        }
        // Garbage after the magic.
        let mut garbage = MAGIC.to_vec();
        let mut x = 0x1234_5678u32;
        for _ in 0..4096 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            garbage.push(x as u8);
        }
        check(&garbage);
    }

    #[test]
    fn not_an_mcap_file_is_said_so() {
        let (got, end) = read_all(b"\x93\x98\x00");
        assert!(got.is_empty());
        assert_eq!(
            end.stopped.unwrap().reason,
            "the input does not start with the MCAP magic"
        );
    }
}
