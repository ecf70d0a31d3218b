//! One implementation per format of the per-message cycle: add (build the
//! message from the shared [`Inputs`]), serialize, deserialize (and read the
//! last parameter back by key, plus the attachment's length).
//!
//! Every backend runs in one of two [`Group`]s, and every ratio is computed
//! within one group:
//! - [`Group::Reused`]: each library in its best reuse mode. Whatever the
//!   library lets a program keep from one message to the next is kept: the
//!   message being built (cleared, not dropped), the output buffer (cleared,
//!   its capacity kept), the decode target where the library can decode into
//!   an existing value, and the decoder's scratch buffers.
//! - [`Group::Fresh`]: nothing survives from one message to the next but the
//!   inputs. A new message is built, encoded into a new `Vec` (each
//!   library's one-call encode), and decoded into a new value, every
//!   iteration; each phase drops what it consumed (serialize drops the built
//!   message, deserialize drops the bytes and the decoded message).
//!
//! The inputs (key strings, values, the attachment's source bytes) are built
//! once and shared by every backend in both groups: they stand for data the
//! program already has. A message that owns its data copies them in.

use bytes::Bytes;

use crate::scenario::{fp_bool, fp_bytes, fp_double, fp_int, fp_str, Inputs, Probe};

pub mod cbor;
pub mod content;
pub mod flex;
pub mod floor;
pub mod json;
pub mod mf;
pub mod pb;
pub mod samewire;

pub use mf::{mf_fill, mf_value};

/// The key under which the non-messageframe formats carry the attachment.
pub const ATTACHMENT_FIELD: &str = "attachment";

/// Reuse mode; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Group {
    /// Everything the library lets a program keep is kept.
    Reused,
    /// A new message, output buffer and decoded value every iteration.
    Fresh,
}

impl Group {
    /// Both groups, in table order.
    pub const ALL: [Group; 2] = [Group::Reused, Group::Fresh];

    /// `reused` or `fresh`.
    #[must_use]
    pub fn id(self) -> &'static str {
        match self {
            Group::Reused => "reused",
            Group::Fresh => "fresh",
        }
    }
}

/// One format (or one way of using a format).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// messageframe: `add`, `encode_into`/`encode`, `decode_from`/`decode`.
    Mf,
    /// messageframe decoded as a zero-copy `FrameView`.
    MfView,
    /// messageframe built with `set` (upsert: a duplicate check per key, the
    /// work the peers' maps do on every insert) instead of `add`.
    MfSet,
    /// messageframe with the attachment shared: `add_attachment(Bytes)` in,
    /// `decode_shared_into` / `decode_shared` out (attachment scenarios).
    MfShared,
    /// messageframe, attachment shared in, decoded as a view.
    MfViewShared,
    /// prost with the SPEC schema.
    Prost,
    /// prost with `bytes::Bytes` fields, decoded from `Bytes`.
    ProstShared,
    /// serde_json's `Map<String, Value>`.
    SerdeJson,
    /// sonic-rs's `Value`/`Object`.
    SonicRs,
    /// simd-json: `OwnedValue` built, `BorrowedValue` decoded.
    SimdJson,
    /// minicbor: encoder and borrowed decoder (it has no document type).
    Minicbor,
    /// ciborium's `Value`.
    Ciborium,
    /// FlexBuffers: `Builder`, zero-copy `Reader`.
    Flexbuffers,
    /// The same-wire floor: rmp's write and read functions on exactly
    /// messageframe's wire layout (header, `[tag, value]` per two-part key,
    /// attachments), everything read back as offsets into the receive
    /// buffer, in kept `Vec`s (no allocation): the reference floor.
    RmpWire,
    /// The flat floor: rmp's write functions on a bare map of flat keys
    /// (no header, no tags), rmp's read functions recording each pair as
    /// offsets into the receive buffer, in a `Vec` (no allocation).
    RmpBorrowed,
    /// The floor's copying equivalent: the attachment copied in (the
    /// message's own copy), keys, strings and bins copied out into one
    /// arena.
    RmpCopying,
    /// rmp's writer, rmpv's owned `Value` reader (context).
    RmpvValue,
    /// rmp's writer, rmpv's borrowed `ValueRef` reader (context).
    RmpvRef,
    /// Three memcpys of the attachment (in, out, back): the pure-copy
    /// floor, its serialize phase touching the buffers in the same order as
    /// messageframe's (attachment scenarios).
    Memcpy,
}

/// The JSON library shown in the tables next to serde_json: the faster of
/// sonic-rs and simd-json in the selection run (see [`SELECTION`]).
pub const FAST_JSON: Format = Format::SimdJson;
/// The CBOR library shown in the tables: the faster of minicbor and ciborium.
pub const CBOR: Format = Format::Minicbor;

/// Candidate families: (family, candidates, the one the tables show).
pub const SELECTION: [(&str, [Format; 2], Format); 2] = [
    (
        "fastest JSON",
        [Format::SonicRs, Format::SimdJson],
        FAST_JSON,
    ),
    ("CBOR", [Format::Minicbor, Format::Ciborium], CBOR),
];

/// Scenarios in which the candidates of [`SELECTION`] both run.
pub const SELECTION_SCENARIOS: [&str; 4] = ["small", "medium", "large", "telemetry"];

impl Format {
    /// Every format, in table order.
    pub const ALL: [Format; 19] = [
        Format::Mf,
        Format::MfView,
        Format::MfSet,
        Format::MfShared,
        Format::MfViewShared,
        Format::Prost,
        Format::ProstShared,
        Format::SerdeJson,
        Format::SonicRs,
        Format::SimdJson,
        Format::Minicbor,
        Format::Ciborium,
        Format::Flexbuffers,
        Format::RmpWire,
        Format::RmpBorrowed,
        Format::RmpCopying,
        Format::RmpvValue,
        Format::RmpvRef,
        Format::Memcpy,
    ];

    /// Stable identifier (JSON output, tests, `profile_backend`).
    #[must_use]
    pub const fn id(self) -> &'static str {
        match self {
            Format::Mf => "messageframe",
            Format::MfView => "messageframe-view",
            Format::MfSet => "messageframe-set",
            Format::MfShared => "messageframe-shared",
            Format::MfViewShared => "messageframe-view-shared",
            Format::Prost => "prost",
            Format::ProstShared => "prost-shared",
            Format::SerdeJson => "serde_json",
            Format::SonicRs => "sonic-rs",
            Format::SimdJson => "simd-json",
            Format::Minicbor => "minicbor",
            Format::Ciborium => "ciborium",
            Format::Flexbuffers => "flexbuffers",
            Format::RmpWire => "rmp-wire",
            Format::RmpBorrowed => "rmp-borrowed",
            Format::RmpCopying => "rmp-copying",
            Format::RmpvValue => "rmpv-value",
            Format::RmpvRef => "rmpv-valueref",
            Format::Memcpy => "memcpy",
        }
    }

    /// The format with this id.
    #[must_use]
    pub fn from_id(id: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.id() == id)
    }

    /// Human label for the tables.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Format::Mf => "messageframe",
            Format::MfView => "mf view",
            Format::MfSet => "mf set (upsert)",
            Format::MfShared => "mf shared attachment",
            Format::MfViewShared => "mf view, shared attachment",
            Format::Prost => "prost",
            Format::ProstShared => "prost shared attachment",
            Format::SerdeJson => "serde_json",
            Format::SonicRs => "sonic-rs",
            Format::SimdJson => "simd-json",
            Format::Minicbor => "CBOR (minicbor)",
            Format::Ciborium => "CBOR (ciborium)",
            Format::Flexbuffers => "FlexBuffers",
            Format::RmpWire => "rmp same-wire floor",
            Format::RmpBorrowed => "rmp floor (borrowed)",
            Format::RmpCopying => "rmp floor (copying)",
            Format::RmpvValue => "rmpv Value",
            Format::RmpvRef => "rmpv ValueRef",
            Format::Memcpy => "memcpy ×3",
        }
    }

    /// Whether this is one of messageframe's own rows.
    #[must_use]
    pub fn is_messageframe(self) -> bool {
        matches!(
            self,
            Format::Mf | Format::MfView | Format::MfSet | Format::MfShared | Format::MfViewShared
        )
    }

    /// Whether the row only means something with an attachment.
    #[must_use]
    pub fn needs_attachment(self) -> bool {
        matches!(
            self,
            Format::MfShared | Format::MfViewShared | Format::ProstShared | Format::Memcpy
        )
    }

    /// Whether the backend carries the whole logical message (all but the
    /// memcpy row, which carries only the attachment).
    #[must_use]
    pub fn carries_message(self) -> bool {
        self != Format::Memcpy
    }

    /// Whether the row runs in this group (context rows and the copying
    /// floors only in the reused group).
    #[must_use]
    pub fn in_group(self, group: Group) -> bool {
        match group {
            Group::Reused => true,
            Group::Fresh => {
                matches!(
                    self,
                    Format::Mf
                        | Format::MfView
                        | Format::MfSet
                        | Format::MfShared
                        | Format::Prost
                        | Format::ProstShared
                        | Format::SerdeJson
                        | Format::Flexbuffers
                        | Format::RmpWire
                        | Format::RmpBorrowed
                ) || self == FAST_JSON
                    || self == CBOR
            }
        }
    }

    /// Whether this format is a selection candidate that the tables do not
    /// show (it runs only in [`SELECTION_SCENARIOS`], reused group).
    #[must_use]
    pub fn is_unselected_candidate(self) -> bool {
        SELECTION
            .iter()
            .any(|(_, c, chosen)| c.contains(&self) && self != *chosen)
    }
}

/// The formats a scenario runs in one group. The hint scenarios change
/// nothing for the other formats (identical input), so only messageframe's
/// rows run there.
#[must_use]
pub fn formats_for(s: &crate::scenario::Scenario, group: Group) -> Vec<Format> {
    Format::ALL
        .into_iter()
        .filter(|f| f.in_group(group))
        .filter(|f| !f.needs_attachment() || s.attachment > 0)
        .filter(|f| s.hint.is_none() || f.is_messageframe())
        .filter(|f| {
            !f.is_unselected_candidate()
                || (group == Group::Reused && SELECTION_SCENARIOS.contains(&s.name))
        })
        .collect()
}

/// One format's per-message cycle.
pub trait Backend {
    /// Builds the message from the inputs (the `add` phase).
    fn add(&mut self, inputs: &Inputs, iteration: u64);
    /// Serializes the message.
    fn serialize(&mut self, inputs: &Inputs);
    /// Deserializes the bytes and reads the probe back.
    fn deserialize(&mut self, inputs: &Inputs) -> Probe;
    /// The bytes the last `serialize` produced (valid until `deserialize`,
    /// which may consume or, for simd-json, rewrite them).
    fn wire(&self) -> &[u8];
}

/// Calls `$body` with `$b` bound to a new backend of `$format` in `$group`
/// (each a distinct monomorphic type: the timed loops are not dynamic
/// dispatch).
#[macro_export]
macro_rules! with_backend {
    ($format:expr, $group:expr, $inputs:expr, |$b:ident| $body:expr) => {{
        use $crate::backends::{cbor, flex, floor, json, mf, pb, samewire, Format, Group};
        macro_rules! pick {
            ($t:ident) => {
                match $group {
                    Group::Reused => {
                        let $b = $t::<false>::new($inputs);
                        $body
                    }
                    Group::Fresh => {
                        let $b = $t::<true>::new($inputs);
                        $body
                    }
                }
            };
        }
        use cbor::{Ciborium, Minicbor};
        use flex::Flex;
        use floor::{Memcpy, RmpBorrowed, RmpCopying, RmpvRef, RmpvValue};
        use json::{SerdeJson, SimdJson, SonicRs};
        use mf::{Mf, MfSet, MfShared, MfView, MfViewShared};
        use pb::{Prost, ProstShared};
        use samewire::RmpWire;
        match $format {
            Format::Mf => pick!(Mf),
            Format::MfView => pick!(MfView),
            Format::MfSet => pick!(MfSet),
            Format::MfShared => pick!(MfShared),
            Format::MfViewShared => pick!(MfViewShared),
            Format::Prost => pick!(Prost),
            Format::ProstShared => pick!(ProstShared),
            Format::SerdeJson => pick!(SerdeJson),
            Format::SonicRs => pick!(SonicRs),
            Format::SimdJson => pick!(SimdJson),
            Format::Minicbor => pick!(Minicbor),
            Format::Ciborium => pick!(Ciborium),
            Format::Flexbuffers => pick!(Flex),
            Format::RmpWire => pick!(RmpWire),
            Format::RmpBorrowed => pick!(RmpBorrowed),
            Format::RmpCopying => pick!(RmpCopying),
            Format::RmpvValue => pick!(RmpvValue),
            Format::RmpvRef => pick!(RmpvRef),
            Format::Memcpy => pick!(Memcpy),
        }
    }};
}

/// The probe of a value read back in any format's terms.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Read<'a> {
    F(f64),
    I(i64),
    B(bool),
    S(&'a str),
    /// A string's bytes, already checked as UTF-8 by the decoder.
    SB(&'a [u8]),
    Missing,
}

impl Read<'_> {
    #[inline]
    pub(crate) fn fingerprint(self) -> u64 {
        match self {
            Read::F(x) => fp_double(x),
            Read::I(x) => fp_int(x),
            Read::B(x) => fp_bool(x),
            Read::S(s) => fp_str(s),
            Read::SB(b) => fp_bytes(b),
            Read::Missing => 0,
        }
    }
}

/// The receive buffer back from the `Bytes` it became, for the next message
/// (no copy once nothing else holds it).
#[inline]
pub(crate) fn reclaim(bytes: Bytes) -> Vec<u8> {
    match bytes.try_into_mut() {
        Ok(b) => b.into(),
        Err(b) => b.to_vec(),
    }
}

/// `Some(len)` of an attachment read back when the scenario has one.
#[inline]
pub(crate) fn att_len(inputs: &Inputs, len: Option<usize>) -> usize {
    if inputs.attachment.is_some() {
        len.unwrap_or(0)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{InputValue, SCENARIOS};

    fn cycle<B: Backend>(mut b: B, inputs: &Inputs, format: Format, group: Group) {
        for i in 0..2 {
            b.add(inputs, i);
            b.serialize(inputs);
            let wire = b.wire().to_vec();
            if let Err(e) = content::check(format, &wire, inputs) {
                panic!("{} ({}): {e}", format.id(), group.id());
            }
            let got = b.deserialize(inputs);
            let want = inputs.expected_probe();
            if format.carries_message() {
                assert_eq!(got, want, "{} ({})", format.id(), group.id());
            } else {
                assert_eq!(got.attachment, want.attachment, "{}", format.id());
            }
        }
    }

    #[test]
    fn every_backend_carries_the_same_message_in_every_scenario_and_group() {
        for s in &SCENARIOS {
            let inputs = Inputs::new(s);
            for g in Group::ALL {
                for f in Format::ALL {
                    if f.needs_attachment() && s.attachment == 0 {
                        continue;
                    }
                    crate::with_backend!(f, g, &inputs, |b| cycle(b, &inputs, f, g));
                }
            }
        }
    }

    #[test]
    fn the_content_check_catches_a_different_message() {
        let s = SCENARIOS.iter().find(|s| s.name == "telemetry").unwrap();
        let inputs = Inputs::new(s);
        let mut other = inputs.clone();
        other.values[5] = InputValue::Int(18);
        let mut truncated = inputs.clone();
        truncated.attachment.as_mut().unwrap().pop();
        for f in Format::ALL {
            let wire = crate::with_backend!(f, Group::Reused, &inputs, |b| {
                let mut b = b;
                b.add(&inputs, 0);
                b.serialize(&inputs);
                b.wire().to_vec()
            });
            assert!(content::check(f, &wire, &inputs).is_ok(), "{}", f.id());
            if f.carries_message() {
                let e = content::check(f, &wire, &other).unwrap_err();
                assert!(e.contains("overflow_count"), "{}: {e}", f.id());
            }
            let e = content::check(f, &wire, &truncated).unwrap_err();
            assert!(e.contains("attachment"), "{}: {e}", f.id());
            if f != Format::Memcpy {
                assert!(
                    content::decode(f, &wire[..wire.len() / 2], "spectrum").is_err(),
                    "{}: half a message decodes",
                    f.id()
                );
            }
        }
    }

    #[test]
    fn groups_run_the_rows_they_say() {
        let small = SCENARIOS[0];
        let hint = SCENARIOS.iter().find(|s| s.hint.is_some()).unwrap();
        let att = SCENARIOS.iter().find(|s| s.name == "attachment").unwrap();
        let reused = formats_for(&small, Group::Reused);
        assert!(reused.contains(&Format::RmpvValue) && reused.contains(&Format::Ciborium));
        assert!(!reused.contains(&Format::MfShared) && !reused.contains(&Format::Memcpy));
        let fresh = formats_for(&small, Group::Fresh);
        assert!(fresh.contains(&Format::Mf) && fresh.contains(&FAST_JSON) && fresh.contains(&CBOR));
        assert!(!fresh.contains(&Format::RmpvValue) && !fresh.contains(&Format::Ciborium));
        assert!(formats_for(hint, Group::Reused)
            .iter()
            .all(|f| f.is_messageframe()));
        let a = formats_for(att, Group::Reused);
        assert!(a.contains(&Format::Memcpy) && a.contains(&Format::ProstShared));
        assert!(
            !a.contains(&Format::Ciborium),
            "candidates only where selected"
        );
        for f in Format::ALL {
            assert_eq!(Format::from_id(f.id()), Some(f));
        }
    }
}
