//! Reads away from the cursor: every parameter's key and position, sorted,
//! so that a field out of order, an absent field, a container's first
//! parameter and all of a map's entries each cost a binary search instead
//! of a pass over the frame. Built once, on the first such read (frames
//! read in the order they were written never build it).
//!
//! Without it, each of those reads walked the frame: a `Vec` of 4,000
//! structs with an absent `Option` field took 0.4 s to read back from the
//! bytes `to_bytes` wrote, a sequence of 20,000 elements in reverse 2 s, a
//! map spread over 20,000 parameters 0.2 s: quadratic in the frame, which a
//! hostile sender could make take hours within the default limits.

use std::cmp::Ordering;

use super::path::same;

/// A parameter's key and its position among the frame's parameters.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key<'de> {
    device: &'de str,
    param: &'de str,
    pos: usize,
}

/// The sorted keys and attachment names of one frame.
pub(crate) struct Lookup<'de> {
    /// Sorted by device, then param, then position: a key's first
    /// occurrence comes first, and the devices at or below a path are two
    /// runs.
    keys: Vec<Key<'de>>,
    /// Sorted by name, stably (the first of a name comes first).
    attachments: Vec<(&'de str, &'de [u8])>,
}

/// `device` against `path` followed by `.` (the first device below
/// `path`, in the order of the keys), compared without joining them.
fn cmp_below(device: &str, path: &str) -> Ordering {
    let (d, p) = (device.as_bytes(), path.as_bytes());
    let n = p.len().min(d.len());
    match d[..n].cmp(&p[..n]) {
        Ordering::Equal if d.len() > p.len() => d[p.len()].cmp(&b'.'),
        Ordering::Equal => Ordering::Less,
        other => other,
    }
}

impl<'de> Lookup<'de> {
    /// The lookup of the frame whose parameters, in order, have these
    /// keys, and whose attachments, in order, these names and data.
    pub(crate) fn new(
        params: impl Iterator<Item = (&'de str, &'de str)>,
        attachments: impl Iterator<Item = (&'de str, &'de [u8])>,
    ) -> Self {
        let mut keys: Vec<Key<'de>> = params
            .enumerate()
            .map(|(pos, (device, param))| Key { device, param, pos })
            .collect();
        keys.sort_unstable();
        let mut attachments: Vec<(&'de str, &'de [u8])> = attachments.collect();
        attachments.sort_by(|a, b| a.0.cmp(b.0));
        Lookup { keys, attachments }
    }

    /// The position of the first parameter `(device, param)`.
    pub(crate) fn find(&self, device: &str, param: &str) -> Option<usize> {
        let i = self
            .keys
            .partition_point(|k| (k.device, k.param) < (device, param));
        let k = self.keys.get(i)?;
        (same(k.device, device) && same(k.param, param)).then_some(k.pos)
    }

    /// The positions of the parameters whose device is `path` or below it
    /// (`path.…`), in no particular order; every parameter for `""`.
    pub(crate) fn within<'s>(&'s self, path: &str) -> impl Iterator<Item = usize> + 's {
        let (at, below) = if path.is_empty() {
            (&self.keys[..], &self.keys[..0])
        } else {
            let start = self.keys.partition_point(|k| k.device < path);
            let at = &self.keys[start..];
            let at = &at[..at.partition_point(|k| k.device == path)];
            let start = self
                .keys
                .partition_point(|k| cmp_below(k.device, path) == Ordering::Less);
            let below = &self.keys[start..];
            let below = &below[..below.partition_point(|k| {
                k.device.len() > path.len()
                    && k.device.as_bytes()[path.len()] == b'.'
                    && k.device.starts_with(path)
            })];
            (at, below)
        };
        at.iter().chain(below).map(|k| k.pos)
    }

    /// [`within`](Self::within), in frame order.
    pub(crate) fn within_in_order(&self, path: &str) -> Vec<usize> {
        let mut at: Vec<usize> = self.within(path).collect();
        at.sort_unstable();
        at
    }

    /// The position of the first parameter whose device is `path` or below
    /// it.
    pub(crate) fn first_within(&self, path: &str) -> Option<usize> {
        self.within(path).min()
    }

    /// The data of the first attachment named `name`.
    pub(crate) fn attachment(&self, name: &str) -> Option<&'de [u8]> {
        let i = self.attachments.partition_point(|a| a.0 < name);
        match self.attachments.get(i) {
            Some(&(n, data)) if same(n, name) => Some(data),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: [(&str, &str); 12] = [
        ("items.1", "sku"),
        ("", "items"),
        ("items.0", "sku"),
        ("items.0", "qty"),
        ("items", "x"),
        ("items-x", "y"),
        ("items.10", "sku"),
        ("items.0", "sku"),
        ("item", "z"),
        ("items.0.deep", "a"),
        ("itemsz", "b"),
        ("", "items"),
    ];

    fn lookup() -> Lookup<'static> {
        Lookup::new(
            KEYS.iter().copied(),
            [("b", &b"1"[..]), ("a", b"2"), ("b", b"3")].into_iter(),
        )
    }

    /// What a pass over the keys finds, for each query.
    fn within_by_scan(path: &str) -> Vec<usize> {
        KEYS.iter()
            .enumerate()
            .filter(|(_, (d, _))| {
                path.is_empty()
                    || *d == path
                    || (d.starts_with(path) && d.as_bytes().get(path.len()) == Some(&b'.'))
            })
            .map(|(i, _)| i)
            .collect()
    }

    #[test]
    fn finds_the_first_occurrence_as_a_scan_does() {
        let l = lookup();
        for (device, param) in KEYS.iter().copied().chain([("items.0", "nope"), ("x", "")]) {
            let scan = KEYS.iter().position(|&k| k == (device, param));
            assert_eq!(l.find(device, param), scan, "{device:?} {param:?}");
        }
    }

    #[test]
    fn within_gives_the_devices_at_and_below_a_path_only() {
        let l = lookup();
        for path in [
            "", "items", "items.0", "items.1", "item", "itemsz", "items-x", "nope", "i",
        ] {
            let mut got: Vec<usize> = l.within(path).collect();
            got.sort_unstable();
            assert_eq!(got, within_by_scan(path), "{path:?}");
            assert_eq!(l.first_within(path), within_by_scan(path).first().copied());
        }
    }

    #[test]
    fn attachments_by_name_first_wins() {
        let l = lookup();
        assert_eq!(l.attachment("b"), Some(&b"1"[..]));
        assert_eq!(l.attachment("a"), Some(&b"2"[..]));
        assert_eq!(l.attachment("c"), None);
    }
}
