//! The publish path's reused state (issue 23): frames encoded into a pooled
//! buffer, and subjects cached by the header fields they are made of.
//!
//! Through one local nats-server, `Client::publish` ran at 0.63x the rate
//! of publishing the same bytes pre-encoded (32 parameters), and a router
//! that only read headers did no better: the cost was the publish path, a
//! new buffer for every frame and a subject formatted for every frame, not
//! the codec (docs/performance.md, "Frames through NATS").

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use async_nats::Subject;
use bytes::{Bytes, BytesMut};
use messageframe::{EncodeError, Frame, Header};

use crate::subject::Subjects;

/// The smallest piece the pool allocates: payloads are split off its
/// front, so one allocation carries many small frames.
const POOL_CHUNK: usize = 64 << 10;

/// Payloads split off one growing buffer: each frame is encoded at the
/// buffer's end and split off as `Bytes` (no copy). Once every payload split
/// from an allocation has been sent and dropped, the buffer takes that
/// allocation back ([`BytesMut::reserve`] reclaims it when it is the only
/// holder), so a steady stream of frames allocates nothing; while payloads
/// are in flight it holds at most what they hold, plus one chunk.
#[derive(Debug, Default)]
pub(crate) struct PayloadPool {
    buffer: Mutex<BytesMut>,
}

impl PayloadPool {
    /// `frame`'s bytes, in a payload of the pool.
    pub(crate) fn encode(&self, frame: &Frame) -> Result<Bytes, EncodeError> {
        let mut buffer = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        let needed = frame.encoded_len();
        if buffer.capacity() < needed {
            // Reclaims the allocation if no payload split from it is alive,
            // else allocates a new one.
            buffer.reserve(needed.max(POOL_CHUNK));
        }
        frame.encode_to_buf(&mut *buffer)?;
        Ok(buffer.split().freeze())
    }
}

/// Subjects of the (target, message type, source) triples published
/// recently: a telemetry source sends the same few again and again, and a
/// cached subject is a reference count instead of a formatted string.
/// Bounded: past [`SUBJECTS_CACHED`] triples it starts afresh.
#[derive(Debug, Default)]
pub(crate) struct SubjectCache {
    subjects: Mutex<HashMap<(u32, i32, u32), Subject>>,
}

/// The most subjects a client keeps.
pub(crate) const SUBJECTS_CACHED: usize = 1024;

impl SubjectCache {
    /// The subject of `header` under `scheme`.
    pub(crate) fn subject(&self, scheme: &Subjects, header: &Header) -> Subject {
        let key = (header.target(), header.message_type(), header.source());
        let mut cache = self.subjects.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(subject) = cache.get(&key) {
            return subject.clone();
        }
        if cache.len() >= SUBJECTS_CACHED {
            cache.clear();
        }
        let subject = Subject::from(scheme.subject(header));
        cache.insert(key, subject.clone());
        subject
    }

    /// How many subjects are cached.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.subjects.lock().map_or(0, |c| c.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_are_the_frames_bytes_and_reuse_the_pool() {
        let pool = PayloadPool::default();
        let mut frame = Frame::new(Header::new(1, 2, 3, 4));
        frame.add("d", "p", 1.5);
        let first = pool.encode(&frame).unwrap();
        assert_eq!(&first[..], &frame.encode().unwrap()[..]);
        let at = first.as_ptr();
        drop(first);
        // The only payload is gone: the next takes the allocation back.
        for counter in 0..2000u64 {
            frame.header_mut().set_counter(counter);
            let p = pool.encode(&frame).unwrap();
            assert_eq!(&p[..], &frame.encode().unwrap()[..]);
            if counter == 1999 {
                // Thousands of payloads of ~30 bytes: one 64 KiB chunk,
                // taken back each time it was used up.
                let chunk = at as usize..at as usize + POOL_CHUNK;
                assert!(chunk.contains(&(p.as_ptr() as usize)));
            }
        }
        // Payloads kept alive are never overwritten.
        let kept: Vec<Bytes> = (0..3000)
            .map(|c| {
                frame.header_mut().set_counter(c);
                pool.encode(&frame).unwrap()
            })
            .collect();
        for (c, p) in kept.iter().enumerate() {
            frame.header_mut().set_counter(c as u64);
            assert_eq!(&p[..], &frame.encode().unwrap()[..]);
        }
    }

    #[test]
    fn subjects_are_cached_per_triple_and_bounded() {
        let scheme = Subjects::new("fleet").unwrap();
        let cache = SubjectCache::default();
        let a = Header::new(1, 7, 50, 99);
        let b = Header::new(1, 7, 51, 99);
        assert_eq!(cache.subject(&scheme, &a).as_str(), "fleet.99.7.50");
        assert_eq!(cache.subject(&scheme, &b).as_str(), "fleet.99.7.51");
        assert_eq!(cache.subject(&scheme, &a).as_str(), "fleet.99.7.50");
        assert_eq!(cache.len(), 2);
        for source in 0..(SUBJECTS_CACHED as u32 + 10) {
            let h = Header::new(1, 7, source, 99);
            assert_eq!(
                cache.subject(&scheme, &h).as_str(),
                format!("fleet.99.7.{source}")
            );
            assert!(cache.len() <= SUBJECTS_CACHED);
        }
    }
}
