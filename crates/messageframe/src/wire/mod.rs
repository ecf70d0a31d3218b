//! MessagePack primitives with no knowledge of frames: [`read`] (a bounded
//! cursor with typed readers and a skipper) and [`write`] (msgpack-c's
//! shortest forms, and their sizes).

pub(crate) mod read;
pub(crate) mod write;
