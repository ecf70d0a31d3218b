//! Where the serializer puts what it finds: into a [`Frame`] (`to_frame`),
//! or straight into a frame's MessagePack bytes (`to_bytes`), with no frame
//! in between.

use super::error::{Error, ErrorKind};
use super::path::{path_str, Prefix};
use crate::encode::{
    write_bool_pair, write_double_pair, write_header, write_int_pair, write_str_pair,
};
use crate::error::EncodeError;
use crate::frame::Frame;
use crate::header::Header;
use crate::key::le_value16;
use crate::value::{ValueRef, TAG_STRING};
use crate::wire::write::{append, write_array_len, write_bin_len, write_str, write_str_header};

type Result<T> = std::result::Result<T, Error>;

/// The longest string or bin, and the largest count, MessagePack can say
/// (its 32-bit length prefixes).
const MAX_LEN: usize = u32::MAX as usize;

/// Receives the serializer's parameters and attachments, in order.
pub(crate) trait Target {
    /// The parameter `(device, param)`, given as `prefix`, the device
    /// followed by U+001F, and `param`: the key's bytes in two pieces.
    fn put(&mut self, prefix: &mut Prefix, param: &str, value: ValueRef<'_>) -> Result<()>;
    fn attach(&mut self, name: &str, data: &[u8]) -> Result<()>;
}

impl Target for Frame {
    #[inline(always)]
    fn put(&mut self, prefix: &mut Prefix, param: &str, value: ValueRef<'_>) -> Result<()> {
        let base = prefix.base();
        self.add(path_str(&prefix.bytes()[..base]), param, value);
        Ok(())
    }

    fn attach(&mut self, name: &str, data: &[u8]) -> Result<()> {
        self.add_attachment_copy(name, data);
        Ok(())
    }
}

/// Bytes reserved for the parameter map's header until the count is known:
/// a `map16` header, the shortest one for 16 to 65,535 parameters (every
/// record of more than a few fields). [`Wire::finish`] writes the
/// shortest header instead, moving the parameters by the difference when
/// it is not this one, so the bytes are exactly `Frame::encode`'s (and the
/// C++ library's) for the same content.
const MAP_HEAD: usize = 3;

/// A frame's MessagePack, written as the serializer goes: header and
/// parameters into `out`, attachments (which the wire puts after every
/// parameter) into a side buffer appended by [`finish`](Wire::finish).
pub(crate) struct Wire<'b> {
    out: &'b mut Vec<u8>,
    /// Where the frame starts in `out` (what was there before is kept).
    start: usize,
    /// Where the parameter map's reserved header is.
    map_at: usize,
    params: usize,
    /// The attachments' `[name, bin]` pairs, encoded.
    attachments: Vec<u8>,
    attachment_count: usize,
}

impl<'b> Wire<'b> {
    /// Starts a frame with `header` at the end of `out`; `attachments` is a
    /// reused scratch buffer (cleared here).
    pub(crate) fn new(out: &'b mut Vec<u8>, header: &Header, mut attachments: Vec<u8>) -> Self {
        let start = out.len();
        out.push(0x93);
        write_header(out, header);
        let map_at = out.len();
        out.extend_from_slice(&[0; MAP_HEAD]);
        attachments.clear();
        Wire {
            out,
            start,
            map_at,
            params: 0,
            attachments,
            attachment_count: 0,
        }
    }

    /// Completes the frame: the parameter map's shortest header, then the
    /// attachments. Returns the scratch buffer for reuse.
    pub(crate) fn finish(self) -> Result<Vec<u8>> {
        let Wire {
            out,
            start,
            map_at,
            params,
            attachments,
            attachment_count,
        } = self;
        if params > MAX_LEN || attachment_count > MAX_LEN {
            out.truncate(start);
            let kind = if params > MAX_LEN {
                EncodeError::TooManyParams { count: params }
            } else {
                EncodeError::TooManyAttachments {
                    count: attachment_count,
                }
            };
            return Err(Error::new(ErrorKind::Encode(kind)));
        }
        let mut small = [0u8; 5];
        let n = match params {
            0..=15 => {
                small[0] = 0x80 | params as u8;
                1
            }
            16..=0xffff => {
                small[0] = 0xde;
                small[1..3].copy_from_slice(&(params as u16).to_be_bytes());
                3
            }
            _ => {
                small[0] = 0xdf;
                small[1..].copy_from_slice(&(params as u32).to_be_bytes());
                5
            }
        };
        // The parameters move to the shortest header when it is not the
        // reserved one: one `memmove` of the map's bytes, cheaper than
        // counting them in a first pass over the value (the serializer's
        // walk is the costly part).
        if n < MAP_HEAD {
            out.copy_within(map_at + MAP_HEAD.., map_at + n);
            out.truncate(out.len() - (MAP_HEAD - n));
        } else if n > MAP_HEAD {
            let end = out.len();
            out.resize(end + (n - MAP_HEAD), 0);
            out.copy_within(map_at + MAP_HEAD..end, map_at + n);
        }
        out[map_at..map_at + n].copy_from_slice(&small[..n]);
        write_array_len(out, attachment_count);
        append(out, &attachments);
        Ok(attachments)
    }

    /// Abandons the frame: `out` is as it was before [`new`](Wire::new).
    /// Returns the scratch buffer for reuse.
    pub(crate) fn abort(self) -> Vec<u8> {
        self.out.truncate(self.start);
        self.attachments
    }
}

/// Writes the key `prefix + param` as a MessagePack str: up to 15 bytes
/// (every key of the Order record at 500 items) with the marker as one
/// 16-byte store of the three pieces joined in a register, instead of three
/// appends, each with its own check of room.
#[inline(always)]
fn write_key(out: &mut Vec<u8>, prefix: &mut Prefix, param: &[u8]) -> Result<()> {
    let plen = prefix.len();
    let n = plen + param.len();
    if n < 16 && out.capacity() - out.len() >= 16 {
        // `n < 16`: the prefix is shorter than 16 bytes (so its word spells
        // it), `param` fits `le_value16`, and the key's `n` bytes shifted
        // past the marker still fit the word.
        let word = (prefix.word() | le_value16(param) << (8 * plen)) << 8 | (0xa0 | n as u128);
        let at = out.len();
        out.extend_from_slice(&word.to_le_bytes());
        out.truncate(at + 1 + n);
        return Ok(());
    }
    write_long_key(out, prefix.bytes(), param)
}

/// A String's `[tag, value]` pair: up to 13 bytes (names, units, SKUs,
/// firmware versions) as one 16-byte store of the pair's header and the
/// text joined in a register, instead of a call to `memcpy` for the text.
#[inline(always)]
fn write_string(out: &mut Vec<u8>, s: &[u8]) -> Result<()> {
    let n = s.len();
    if n <= 13 && out.capacity() - out.len() >= 16 {
        let word =
            0x92 | u128::from(TAG_STRING) << 8 | (0xa0 | n as u128) << 16 | le_value16(s) << 24;
        let at = out.len();
        out.extend_from_slice(&word.to_le_bytes());
        out.truncate(at + 3 + n);
        return Ok(());
    }
    if n > MAX_LEN {
        return Err(too_long(n));
    }
    write_str_pair(out, s);
    Ok(())
}

#[inline(never)]
fn write_long_key(out: &mut Vec<u8>, prefix: &[u8], param: &[u8]) -> Result<()> {
    let n = prefix.len() + param.len();
    if n > MAX_LEN {
        return Err(too_long(n));
    }
    write_str_header(out, n);
    out.extend_from_slice(prefix);
    out.extend_from_slice(param);
    Ok(())
}

#[cold]
fn too_long(len: usize) -> Error {
    Error::new(ErrorKind::StringTooLong(len))
}

impl Target for Wire<'_> {
    #[inline(always)]
    fn put(&mut self, prefix: &mut Prefix, param: &str, value: ValueRef<'_>) -> Result<()> {
        let out = &mut *self.out;
        write_key(out, prefix, param.as_bytes())?;
        match value {
            ValueRef::Int(v) => write_int_pair(out, v),
            ValueRef::Double(v) => write_double_pair(out, v),
            ValueRef::Bool(v) => write_bool_pair(out, v),
            ValueRef::String(s) => write_string(out, s.as_bytes())?,
            // The serializer makes only the four known types.
            ValueRef::Unknown(_) => {
                return Err(Error::new(ErrorKind::Unsupported("an unknown value")))
            }
        }
        self.params += 1;
        Ok(())
    }

    fn attach(&mut self, name: &str, data: &[u8]) -> Result<()> {
        let index = self.attachment_count;
        if name.len() > MAX_LEN {
            return Err(Error::new(ErrorKind::Encode(
                EncodeError::AttachmentNameTooLarge {
                    index,
                    len: name.len(),
                },
            )));
        }
        if data.len() > MAX_LEN {
            return Err(Error::new(ErrorKind::Encode(
                EncodeError::AttachmentTooLarge {
                    index,
                    len: data.len(),
                },
            )));
        }
        let a = &mut self.attachments;
        a.push(0x92);
        write_str(a, name.as_bytes());
        write_bin_len(a, data.len());
        append(a, data);
        self.attachment_count += 1;
        Ok(())
    }
}
