//! What the viewer knows: the latest value of every tracked parameter, a
//! bounded ring of points per charted parameter, frames per source, the
//! attachments last seen and the errors, all bounded however many frames
//! arrive.
//!
//! A row is one (source, device, parameter): the header's source is part of
//! the identity, because two programs may well use the same device names
//! (two receivers each with an `sdr_1`). Target and message type are those
//! of the last frame that carried the parameter.
//!
//! Every bound is a count fixed at start ([`Limits`]): rows (`max_keys`),
//! charted rows (`max_charted`), points per chart (`points`), the length of
//! a key and of a string value kept, sources, attachments, errors. What does
//! not fit is counted and shown, never stored.
//!
//! The pushes to the page are built by [`State::update`] from a per-client
//! [`Cursor`]: only rows changed since the client's last update, and only the
//! points of the charts it asked for that it does not have yet.

use std::collections::{HashMap, VecDeque};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use messageframe::{FrameView, Header, KeyDisplay, ValueRef};
use serde::Serialize;

/// The bounds of a [`State`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Rows tracked at most; parameters of further keys are dropped (and
    /// counted).
    pub(crate) max_keys: usize,
    /// Numeric rows that get a ring of points; the others are listed only.
    pub(crate) max_charted: usize,
    /// Points kept per charted row.
    pub(crate) points: usize,
    /// Attachment bytes kept per attachment (larger ones are listed with
    /// their size, not served).
    pub(crate) max_attachment: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_keys: 10_000,
            max_charted: 128,
            points: 2_048,
            max_attachment: 4 << 20,
        }
    }
}

/// Longest key (device and parameter, in bytes) tracked: longer ones are
/// dropped, so that `max_keys` bounds the memory the names take.
pub(crate) const MAX_KEY_BYTES: usize = 512;
/// Longest string value kept (in bytes, cut at a character boundary).
pub(crate) const MAX_STRING_BYTES: usize = 256;
/// Distinct header sources with their own frame counters.
pub(crate) const MAX_SOURCES: usize = 1_024;
/// Attachments (source, name) tracked.
pub(crate) const MAX_ATTACHMENTS: usize = 256;
/// Errors kept for the page (the newest); all are counted.
pub(crate) const MAX_ERRORS: usize = 100;
/// Longest error message kept.
const MAX_ERROR_BYTES: usize = 1_000;
/// Distinct targets and message types offered in the page's filters.
const MAX_CHOICES: usize = 256;

/// A parameter's latest value, as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Latest {
    Int(i64),
    Double(f64),
    String(String),
    Bool(bool),
    /// An unknown tag: the tag only (the raw bytes mean nothing to the
    /// viewer).
    Unknown(i128),
}

impl Latest {
    fn type_name(&self) -> &'static str {
        match self {
            Latest::Int(_) => "int",
            Latest::Double(_) => "double",
            Latest::String(_) => "string",
            Latest::Bool(_) => "bool",
            Latest::Unknown(_) => "unknown",
        }
    }

    fn number(&self) -> Option<f64> {
        match *self {
            Latest::Int(i) => Some(i as f64),
            Latest::Double(d) => Some(d),
            _ => None,
        }
    }

    /// Overwrites `self` with `value`, reusing a string's buffer.
    fn set(&mut self, value: ValueRef<'_>) {
        match value {
            ValueRef::Int(i) => *self = Latest::Int(i),
            ValueRef::Double(d) => *self = Latest::Double(d),
            ValueRef::Bool(b) => *self = Latest::Bool(b),
            ValueRef::String(s) => {
                let s = truncate(s, MAX_STRING_BYTES);
                match self {
                    Latest::String(old) => {
                        old.clear();
                        old.push_str(s);
                    }
                    _ => *self = Latest::String(s.to_owned()),
                }
            }
            ValueRef::Unknown(u) => *self = Latest::Unknown(u.tag()),
            // ValueRef is non-exhaustive: a later type shows as unknown.
            _ => *self = Latest::Unknown(-1),
        }
    }
}

impl Serialize for Latest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            // Beyond 2^53 a JavaScript number is not exact: a string is.
            Latest::Int(i) if i.unsigned_abs() > 1 << 53 => s.collect_str(i),
            Latest::Int(i) => s.serialize_i64(*i),
            // JSON has no NaN or infinities: those go as strings.
            Latest::Double(d) if d.is_finite() => s.serialize_f64(*d),
            Latest::Double(d) if d.is_nan() => s.serialize_str("NaN"),
            Latest::Double(d) if *d > 0.0 => s.serialize_str("Infinity"),
            Latest::Double(_) => s.serialize_str("-Infinity"),
            Latest::String(text) => s.serialize_str(text),
            Latest::Bool(b) => s.serialize_bool(*b),
            Latest::Unknown(tag) => s.collect_str(&format_args!("<tag {tag}>")),
        }
    }
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The points of one charted row: (header timestamp in ms, value), oldest
/// first, at most `capacity`. Points of one millisecond (the timestamp's
/// resolution) collapse into one: the latest value of that millisecond.
#[derive(Debug)]
pub(crate) struct Ring {
    points: VecDeque<(u64, f64)>,
    capacity: usize,
    /// Bumped when the ring restarts (a timestamp went backwards: a chart's
    /// x axis must grow), so that clients start over too.
    epoch: u64,
}

impl Ring {
    pub(crate) fn new(capacity: usize) -> Ring {
        Ring {
            points: VecDeque::with_capacity(capacity.min(4_096)),
            capacity: capacity.max(1),
            epoch: 0,
        }
    }

    pub(crate) fn push(&mut self, t: u64, v: f64) {
        match self.points.back_mut() {
            Some(last) if last.0 == t => {
                last.1 = v;
                return;
            }
            Some(last) if last.0 > t => {
                self.points.clear();
                self.epoch += 1;
            }
            _ => {}
        }
        if self.points.len() == self.capacity {
            self.points.pop_front();
        }
        self.points.push_back((t, v));
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.points.len()
    }

    /// The points at or after `t` (the last one a client has may have
    /// changed since: it is sent again).
    fn since(&self, t: u64) -> impl Iterator<Item = &(u64, f64)> {
        let start = self.points.partition_point(|p| p.0 < t);
        self.points.range(start..)
    }
}

/// One tracked (source, device, parameter).
#[derive(Debug)]
struct Row {
    source: u32,
    device: String,
    param: String,
    target: u32,
    message_type: i32,
    value: Latest,
    /// The header timestamp of the frame that carried the latest value.
    stamp: u64,
    /// When the latest value arrived (ms since the epoch, this machine's
    /// clock), for its age.
    seen: u64,
    count: u64,
    /// Updates in the last whole second.
    rate: u64,
    count_at_second: u64,
    /// [`State::generation`] when the row last changed.
    changed: u64,
    ring: Option<Ring>,
    /// Whether it would be charted but `max_charted` rows already are.
    chart_refused: bool,
}

/// Frames of one header source.
#[derive(Debug, Default)]
struct SourceStats {
    frames: u64,
    rate: u64,
    frames_at_second: u64,
}

/// The latest attachment of one name from one source.
#[derive(Debug)]
struct Attachment {
    source: u32,
    name: String,
    len: usize,
    stamp: u64,
    /// The bytes, when no larger than `max_attachment`.
    data: Option<Bytes>,
    changed: u64,
}

/// An error in the input, for the page.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct InputError {
    /// Which input: a peer address, a subject, a file.
    pub(crate) origin: String,
    pub(crate) message: String,
    /// ms since the epoch.
    pub(crate) at: u64,
    /// Its number among all errors (1 = the first).
    pub(crate) seq: u64,
}

/// Everything the viewer tracks. One lock around it: the readers take it
/// once per frame, the pushes once per update.
#[derive(Debug)]
pub(crate) struct State {
    limits: Limits,
    rows: Vec<Row>,
    /// source -> device -> param -> row index: looked up with the view's
    /// `&str`s, no allocation per parameter.
    index: HashMap<u32, HashMap<String, HashMap<String, usize>>>,
    charted: usize,
    sources: HashMap<u32, SourceStats>,
    /// Frames whose source had no room in `sources`.
    other_sources: u64,
    targets: Vec<u32>,
    message_types: Vec<i32>,
    attachments: Vec<Attachment>,
    errors: VecDeque<InputError>,
    error_count: u64,
    frames: u64,
    /// Parameter values not tracked: their key was new when `max_keys` rows
    /// existed, or too long.
    dropped_values: u64,
    dropped_attachments: u64,
    /// Bumped by every change; rows and attachments remember theirs.
    generation: u64,
    started: Instant,
    /// Whole seconds since `started` when the rates were last computed.
    second: u64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl State {
    pub(crate) fn new(limits: Limits) -> State {
        State {
            limits,
            rows: Vec::new(),
            index: HashMap::new(),
            charted: 0,
            sources: HashMap::new(),
            other_sources: 0,
            targets: Vec::new(),
            message_types: Vec::new(),
            attachments: Vec::new(),
            errors: VecDeque::new(),
            error_count: 0,
            frames: 0,
            dropped_values: 0,
            dropped_attachments: 0,
            generation: 0,
            started: Instant::now(),
            second: 0,
        }
    }

    /// Takes in one valid frame.
    pub(crate) fn ingest(&mut self, view: &FrameView<'_>) {
        self.generation += 1;
        let generation = self.generation;
        let header = *view.header();
        let seen = now_ms();
        self.frames += 1;
        self.count_source(&header);
        for (device, param, value) in view.iter() {
            let Some(i) = self.row(&header, device, param, &value) else {
                self.dropped_values += 1;
                continue;
            };
            let row = &mut self.rows[i];
            row.target = header.target();
            row.message_type = header.message_type();
            row.value.set(value);
            row.stamp = header.timestamp();
            row.seen = seen;
            row.count += 1;
            row.changed = generation;
            if let (Some(ring), Some(v)) = (row.ring.as_mut(), row.value.number()) {
                ring.push(header.timestamp(), v);
            }
        }
        if view.attachment_count() > 0 {
            self.attachments_of(view, &header);
        }
    }

    fn count_source(&mut self, header: &Header) {
        let full = self.sources.len() >= MAX_SOURCES;
        match self.sources.get_mut(&header.source()) {
            Some(s) => s.frames += 1,
            None if full => self.other_sources += 1,
            None => {
                self.sources.insert(
                    header.source(),
                    SourceStats {
                        frames: 1,
                        ..SourceStats::default()
                    },
                );
            }
        }
        remember(&mut self.targets, header.target());
        remember(&mut self.message_types, header.message_type());
    }

    /// The row of (source, device, param), made if there is room.
    fn row(
        &mut self,
        header: &Header,
        device: &str,
        param: &str,
        value: &ValueRef<'_>,
    ) -> Option<usize> {
        let source = header.source();
        if let Some(&i) = self
            .index
            .get(&source)
            .and_then(|d| d.get(device))
            .and_then(|p| p.get(param))
        {
            return Some(i);
        }
        if self.rows.len() >= self.limits.max_keys || device.len() + param.len() > MAX_KEY_BYTES {
            return None;
        }
        let numeric = matches!(value, ValueRef::Int(_) | ValueRef::Double(_));
        let chart = numeric && self.charted < self.limits.max_charted;
        self.charted += usize::from(chart);
        let i = self.rows.len();
        self.rows.push(Row {
            source,
            device: device.to_owned(),
            param: param.to_owned(),
            target: header.target(),
            message_type: header.message_type(),
            value: Latest::Bool(false),
            stamp: 0,
            seen: 0,
            count: 0,
            rate: 0,
            count_at_second: 0,
            changed: 0,
            ring: chart.then(|| Ring::new(self.limits.points)),
            chart_refused: numeric && !chart,
        });
        self.index
            .entry(source)
            .or_default()
            .entry(device.to_owned())
            .or_default()
            .insert(param.to_owned(), i);
        Some(i)
    }

    fn attachments_of(&mut self, view: &FrameView<'_>, header: &Header) {
        for (name, data) in view.attachments() {
            let i = match self
                .attachments
                .iter()
                .position(|a| a.source == header.source() && a.name == name)
            {
                Some(i) => i,
                None if self.attachments.len() >= MAX_ATTACHMENTS || name.len() > MAX_KEY_BYTES => {
                    self.dropped_attachments += 1;
                    continue;
                }
                None => {
                    self.attachments.push(Attachment {
                        source: header.source(),
                        name: name.to_owned(),
                        len: 0,
                        stamp: 0,
                        data: None,
                        changed: 0,
                    });
                    self.attachments.len() - 1
                }
            };
            // A copy of exactly the attachment: a slice of the received
            // buffer would keep all of that buffer alive (a 1 KiB
            // attachment holding a 16 MiB frame's memory).
            let kept =
                (data.len() <= self.limits.max_attachment).then(|| Bytes::copy_from_slice(data));
            let a = &mut self.attachments[i];
            a.len = data.len();
            a.stamp = header.timestamp();
            a.data = kept;
            a.changed = self.generation;
        }
    }

    /// Notes an error in the input (it is on stderr already).
    pub(crate) fn error(&mut self, origin: &str, message: &str) {
        self.generation += 1;
        self.error_count += 1;
        if self.errors.len() == MAX_ERRORS {
            self.errors.pop_front();
        }
        self.errors.push_back(InputError {
            origin: truncate(origin, MAX_KEY_BYTES).to_owned(),
            message: truncate(message, MAX_ERROR_BYTES).to_owned(),
            at: now_ms(),
            seq: self.error_count,
        });
    }

    /// Computes the per-second rates once a second has passed since the
    /// last time (called before every update).
    pub(crate) fn tick(&mut self) {
        let second = self.started.elapsed().as_secs();
        if second == self.second {
            return;
        }
        // More than a second without a tick: the counts span that long.
        let span = second - self.second;
        self.second = second;
        self.generation += 1;
        for row in &mut self.rows {
            let rate = (row.count - row.count_at_second) / span;
            row.count_at_second = row.count;
            if rate != row.rate {
                row.rate = rate;
                row.changed = self.generation;
            }
        }
        for s in self.sources.values_mut() {
            s.rate = (s.frames - s.frames_at_second) / span;
            s.frames_at_second = s.frames;
        }
    }

    /// The bytes of attachment `id` (its index in the list the page has),
    /// with its name; `Err` says why not.
    pub(crate) fn attachment(&self, id: usize) -> Result<(String, Bytes), String> {
        let a = self
            .attachments
            .get(id)
            .ok_or_else(|| format!("no attachment {id}"))?;
        match &a.data {
            Some(data) => Ok((a.name.clone(), data.clone())),
            None => Err(format!(
                "attachment `{}` is {} bytes, more than the {} bytes the viewer keeps (--max-attachment)",
                a.name, a.len, self.limits.max_attachment
            )),
        }
    }

    /// The JSON update for a client at `cursor`, which it advances: the rows
    /// and attachments changed since, the new points of the charts it
    /// asked for, and the totals. `None` when nothing changed. Serialized
    /// from borrowed fields, straight into the string sent.
    pub(crate) fn update(&self, cursor: &mut Cursor) -> Option<String> {
        // The first update goes out even when empty: it carries the limits.
        if cursor.started && cursor.generation == self.generation && cursor.charts_sent {
            return None;
        }
        let since = cursor.generation;
        let mut series = Vec::new();
        for (id, sent) in &mut cursor.charts {
            let Some(ring) = self.rows.get(*id).and_then(|r| r.ring.as_ref()) else {
                continue;
            };
            let reset = sent.epoch != Some(ring.epoch);
            let from = if reset { 0 } else { sent.last };
            let points: Vec<(u64, f64)> = ring.since(from).copied().collect();
            let Some(&(last, last_value)) = points.last() else {
                continue;
            };
            if !reset
                && points.len() == 1
                && sent.last == last
                && sent.last_value == Some(last_value)
            {
                continue;
            }
            sent.epoch = Some(ring.epoch);
            sent.last = last;
            sent.last_value = Some(last_value);
            series.push((*id, reset, points));
        }
        cursor.charts_sent = true;
        let changed = since != self.generation;
        if cursor.started && !changed && series.is_empty() {
            return None;
        }
        cursor.started = true;
        let mut sources: Vec<SourceOut> = self
            .sources
            .iter()
            .map(|(&source, s)| SourceOut {
                source,
                frames: s.frames,
                rate: s.rate,
            })
            .collect();
        sources.sort_unstable_by_key(|s| s.source);
        let update = UpdateOut {
            now: now_ms(),
            frames: self.frames,
            rows: RowsOut {
                rows: &self.rows,
                since,
            },
            series: SeriesOut(&series),
            attachments: AttachmentsOut {
                attachments: &self.attachments,
                since,
            },
            errors: ErrorsOut {
                errors: &self.errors,
                after: cursor.errors,
            },
            error_count: self.error_count,
            sources,
            other_sources: self.other_sources,
            targets: &self.targets,
            types: &self.message_types,
            tracked: self.rows.len(),
            charted: self.charted,
            dropped_values: self.dropped_values,
            dropped_attachments: self.dropped_attachments,
            limits: LimitsOut {
                max_keys: self.limits.max_keys,
                max_charted: self.limits.max_charted,
                points: self.limits.points,
                max_attachment: self.limits.max_attachment,
            },
        };
        cursor.errors = self.error_count;
        cursor.generation = self.generation;
        // Only strings, numbers and maps with string keys: cannot fail.
        serde_json::to_string(&update).ok()
    }

    /// Rows tracked.
    #[cfg(test)]
    pub(crate) fn rows(&self) -> usize {
        self.rows.len()
    }

    /// The points of row `id`'s chart, if it has one.
    #[cfg(test)]
    pub(crate) fn ring(&self, id: usize) -> Option<&Ring> {
        self.rows.get(id).and_then(|r| r.ring.as_ref())
    }

    /// Heap bytes the rows, index and rings take, roughly: for the tests
    /// that memory stays bounded.
    #[cfg(test)]
    pub(crate) fn footprint(&self) -> usize {
        let rows: usize = self
            .rows
            .iter()
            .map(|r| {
                std::mem::size_of::<Row>()
                    + 2 * (r.device.capacity() + r.param.capacity())
                    + r.ring.as_ref().map_or(0, |g| g.points.capacity() * 16)
                    + match &r.value {
                        Latest::String(s) => s.capacity(),
                        _ => 0,
                    }
            })
            .sum();
        rows + self
            .attachments
            .iter()
            .map(|a| a.data.as_ref().map_or(0, Bytes::len))
            .sum::<usize>()
    }
}

/// Adds `x` to the small set `list` (kept sorted, at most
/// [`MAX_CHOICES`]).
fn remember<T: Ord + Copy>(list: &mut Vec<T>, x: T) {
    if let Err(at) = list.binary_search(&x) {
        if list.len() < MAX_CHOICES {
            list.insert(at, x);
        }
    }
}

/// What one client has been sent: where its next update starts.
#[derive(Debug, Default)]
pub(crate) struct Cursor {
    /// Whether it has had an update.
    started: bool,
    generation: u64,
    errors: u64,
    /// The charted rows it asked for, and what it has of each.
    charts: Vec<(usize, Sent)>,
    /// Whether newly asked-for charts have been sent.
    charts_sent: bool,
}

#[derive(Debug, Default, Clone, Copy)]
struct Sent {
    epoch: Option<u64>,
    last: u64,
    last_value: Option<f64>,
}

/// Charts one client may ask for at once.
pub(crate) const MAX_CLIENT_CHARTS: usize = 64;

impl Cursor {
    /// The client now wants the points of these rows (its earlier wishes
    /// are replaced; rows it already had continue where they were).
    pub(crate) fn charts(&mut self, ids: &[usize]) {
        let old = std::mem::take(&mut self.charts);
        for &id in ids.iter().take(MAX_CLIENT_CHARTS) {
            if self.charts.iter().any(|c| c.0 == id) {
                continue;
            }
            let sent = old
                .iter()
                .find(|c| c.0 == id)
                .map_or_else(Sent::default, |c| c.1);
            self.charts.push((id, sent));
        }
        self.charts_sent = false;
    }
}

// What an update is made of, serialized from borrowed state.

#[derive(Serialize)]
struct UpdateOut<'a> {
    now: u64,
    frames: u64,
    rows: RowsOut<'a>,
    series: SeriesOut<'a>,
    attachments: AttachmentsOut<'a>,
    errors: ErrorsOut<'a>,
    error_count: u64,
    sources: Vec<SourceOut>,
    other_sources: u64,
    targets: &'a [u32],
    types: &'a [i32],
    tracked: usize,
    charted: usize,
    dropped_values: u64,
    dropped_attachments: u64,
    limits: LimitsOut,
}

#[derive(Serialize)]
struct SourceOut {
    source: u32,
    frames: u64,
    rate: u64,
}

#[derive(Serialize)]
struct LimitsOut {
    max_keys: usize,
    max_charted: usize,
    points: usize,
    max_attachment: usize,
}

/// The rows changed after generation `since`.
struct RowsOut<'a> {
    rows: &'a [Row],
    since: u64,
}

/// A key in the form people read (`messageframe::KeyDisplay`): the page
/// shows it as it is, so that the viewer, `dump --pretty` and error
/// messages print keys alike.
struct KeyOut<'a>(KeyDisplay<'a>);

impl Serialize for KeyOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

#[derive(Serialize)]
struct RowOut<'a> {
    id: usize,
    source: u32,
    device: &'a str,
    param: &'a str,
    key: KeyOut<'a>,
    target: u32,
    #[serde(rename = "type")]
    message_type: i32,
    kind: &'static str,
    value: &'a Latest,
    stamp: u64,
    seen: u64,
    count: u64,
    rate: u64,
    charted: bool,
    chart_refused: bool,
}

impl Serialize for RowsOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.rows
                .iter()
                .enumerate()
                .filter(|(_, r)| r.changed > self.since)
                .map(|(id, r)| RowOut {
                    id,
                    source: r.source,
                    device: &r.device,
                    param: &r.param,
                    key: KeyOut(KeyDisplay::new(&r.device, &r.param)),
                    target: r.target,
                    message_type: r.message_type,
                    kind: r.value.type_name(),
                    value: &r.value,
                    stamp: r.stamp,
                    seen: r.seen,
                    count: r.count,
                    rate: r.rate,
                    charted: r.ring.is_some(),
                    chart_refused: r.chart_refused,
                }),
        )
    }
}

/// Row id -> `{reset, t: [...], v: [...]}`; a value that is not finite is
/// `null` (JSON has no NaN), a gap in the line.
struct SeriesOut<'a>(&'a [NewPoints]);

/// A chart's new points for one client: row id, whether they start over,
/// the points.
type NewPoints = (usize, bool, Vec<(u64, f64)>);

impl Serialize for SeriesOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Times<'a>(&'a [(u64, f64)]);
        impl Serialize for Times<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.iter().map(|p| p.0))
            }
        }
        struct Values<'a>(&'a [(u64, f64)]);
        impl Serialize for Values<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.iter().map(|p| p.1.is_finite().then_some(p.1)))
            }
        }
        #[derive(Serialize)]
        struct One<'a> {
            reset: bool,
            t: Times<'a>,
            v: Values<'a>,
        }
        s.collect_map(self.0.iter().map(|(id, reset, points)| {
            (
                id.to_string(),
                One {
                    reset: *reset,
                    t: Times(points),
                    v: Values(points),
                },
            )
        }))
    }
}

/// The attachments changed after generation `since`.
struct AttachmentsOut<'a> {
    attachments: &'a [Attachment],
    since: u64,
}

#[derive(Serialize)]
struct AttachmentOut<'a> {
    id: usize,
    source: u32,
    name: &'a str,
    len: usize,
    stamp: u64,
    served: bool,
}

impl Serialize for AttachmentsOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.attachments
                .iter()
                .enumerate()
                .filter(|(_, a)| a.changed > self.since)
                .map(|(id, a)| AttachmentOut {
                    id,
                    source: a.source,
                    name: &a.name,
                    len: a.len,
                    stamp: a.stamp,
                    served: a.data.is_some(),
                }),
        )
    }
}

/// The errors after number `after`.
struct ErrorsOut<'a> {
    errors: &'a VecDeque<InputError>,
    after: u64,
}

impl Serialize for ErrorsOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.errors.iter().filter(|e| e.seq > self.after))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use messageframe::{Decoder, Frame};

    fn frame(source: u32, stamp: u64, params: &[(&str, &str, f64)]) -> Vec<u8> {
        let mut header = Header::new(1, 2, source, 3);
        header.set_timestamp(stamp);
        let mut f = Frame::new(header);
        for &(d, p, v) in params {
            f.add(d, p, v);
        }
        f.encode().unwrap()
    }

    fn ingest(state: &mut State, bytes: &[u8]) {
        let view = Decoder::new().view(bytes).unwrap();
        state.ingest(&view);
    }

    fn limits(max_keys: usize, max_charted: usize, points: usize) -> Limits {
        Limits {
            max_keys,
            max_charted,
            points,
            max_attachment: 1_000,
        }
    }

    #[test]
    fn a_ring_keeps_its_last_points_one_per_millisecond() {
        let mut ring = Ring::new(4);
        for t in 0..10 {
            ring.push(t, t as f64);
        }
        assert_eq!(ring.len(), 4);
        assert_eq!(
            ring.points.iter().copied().collect::<Vec<_>>(),
            [(6, 6.0), (7, 7.0), (8, 8.0), (9, 9.0)]
        );
        // The same millisecond again: its value is replaced, nothing added.
        ring.push(9, 90.0);
        assert_eq!(ring.len(), 4);
        assert_eq!(ring.points.back(), Some(&(9, 90.0)));
        assert_eq!(ring.since(8).count(), 2);
        // Back in time: a new series.
        ring.push(3, 3.0);
        assert_eq!(ring.epoch, 1);
        assert_eq!(ring.points.iter().copied().collect::<Vec<_>>(), [(3, 3.0)]);
    }

    #[test]
    fn rows_beyond_max_keys_are_counted_not_kept() {
        let mut state = State::new(limits(3, 10, 8));
        ingest(
            &mut state,
            &frame(1, 10, &[("d", "a", 1.0), ("d", "b", 2.0)]),
        );
        ingest(
            &mut state,
            &frame(1, 11, &[("d", "c", 3.0), ("d", "e", 4.0), ("d", "f", 5.0)]),
        );
        assert_eq!(state.rows(), 3);
        assert_eq!(state.dropped_values, 2);
        // Known keys still update.
        ingest(
            &mut state,
            &frame(1, 12, &[("d", "a", 7.0), ("d", "f", 8.0)]),
        );
        assert_eq!(state.rows[0].value, Latest::Double(7.0));
        assert_eq!(state.rows[0].count, 2);
        assert_eq!(state.dropped_values, 3);
        // The same names from another source are other rows.
        ingest(&mut state, &frame(2, 12, &[("d", "a", 1.0)]));
        assert_eq!(state.dropped_values, 4);
        let too_long = "x".repeat(MAX_KEY_BYTES);
        let mut roomy = State::new(limits(10, 10, 8));
        ingest(
            &mut roomy,
            &frame(1, 1, &[(&too_long, "p", 1.0), ("d", "p", 1.0)]),
        );
        assert_eq!((roomy.rows(), roomy.dropped_values), (1, 1));
    }

    #[test]
    fn only_max_charted_numeric_rows_keep_points() {
        let mut state = State::new(limits(100, 2, 8));
        let mut header = Header::new(1, 2, 1, 3);
        header.set_timestamp(5);
        let mut f = Frame::new(header);
        f.add("d", "s", "text");
        f.add("d", "a", 1i64);
        f.add("d", "b", 2.0);
        f.add("d", "c", 3.0);
        f.add("d", "t", true);
        let bytes = f.encode().unwrap();
        ingest(&mut state, &bytes);
        let charted: Vec<bool> = state.rows.iter().map(|r| r.ring.is_some()).collect();
        assert_eq!(charted, [false, true, true, false, false]);
        let refused: Vec<bool> = state.rows.iter().map(|r| r.chart_refused).collect();
        assert_eq!(refused, [false, false, false, true, false]);
        assert_eq!(state.charted, 2);
        assert_eq!(state.ring(1).unwrap().len(), 1);
    }

    #[test]
    fn memory_stays_bounded_however_many_distinct_keys_arrive() {
        let limits = limits(1_000, 50, 64);
        let mut state = State::new(limits);
        let mut after_first = 0;
        // 200,000 distinct keys, 100 per frame, each frame at a new time.
        for i in 0..2_000u64 {
            let names: Vec<(String, String)> = (0..100)
                .map(|k| (format!("dev{i}"), format!("param{k}")))
                .collect();
            let params: Vec<(&str, &str, f64)> = names
                .iter()
                .map(|(d, p)| (d.as_str(), p.as_str(), i as f64))
                .collect();
            ingest(&mut state, &frame(1, i, &params));
            // The first keys again, so that the rings fill up.
            ingest(&mut state, &frame(1, i, &[("dev0", "param0", i as f64)]));
            if i == 20 {
                after_first = state.footprint();
            }
        }
        assert_eq!(state.rows(), 1_000);
        assert_eq!(state.dropped_values, 200_000 - 1_000);
        assert_eq!(state.ring(0).unwrap().len(), 64);
        // Full at frame 10; afterwards only the rings' fill changes.
        let end = state.footprint();
        assert!(end <= after_first + 50 * 64 * 16, "{after_first} -> {end}");
        assert!(end < 1_000 * 512, "{end} bytes for 1,000 rows");
    }

    #[test]
    fn string_values_errors_and_attachments_are_bounded() {
        let mut state = State::new(limits(10, 10, 8));
        let mut f = Frame::new(Header::new(1, 2, 9, 3));
        let long = "é".repeat(1_000);
        f.add("d", "s", long.as_str());
        f.add_attachment("small", vec![1u8; 1_000]);
        f.add_attachment("big", vec![2u8; 1_001]);
        let bytes = f.encode().unwrap();
        let view = Decoder::new().view(&bytes).unwrap();
        state.ingest(&view);
        match &state.rows[0].value {
            Latest::String(s) => {
                assert!(s.len() <= MAX_STRING_BYTES && s.len() >= MAX_STRING_BYTES - 1);
                assert!(long.starts_with(s.as_str()));
            }
            other => panic!("{other:?}"),
        }
        let (name, data) = state.attachment(0).unwrap();
        assert_eq!((name.as_str(), data.len()), ("small", 1_000));
        assert!(data.iter().all(|&b| b == 1));
        let refused = state.attachment(1).unwrap_err();
        assert!(refused.contains("1001 bytes"), "{refused}");
        assert!(state.attachment(2).is_err());
        for i in 0..MAX_ATTACHMENTS + 5 {
            let mut f = Frame::new(Header::new(1, 2, 9, 3));
            f.add_attachment(&format!("a{i}"), vec![0u8; 4]);
            ingest(&mut state, &f.encode().unwrap());
        }
        assert_eq!(state.attachments.len(), MAX_ATTACHMENTS);
        assert_eq!(state.dropped_attachments, 7);
        for i in 0..MAX_ERRORS + 10 {
            state.error("peer", &format!("error {i}"));
        }
        assert_eq!(state.errors.len(), MAX_ERRORS);
        assert_eq!(state.error_count, MAX_ERRORS as u64 + 10);
        assert_eq!(state.errors[0].message, "error 10");
    }

    #[test]
    fn an_update_carries_what_changed_since_the_clients_last() {
        let mut state = State::new(limits(10, 10, 100));
        let mut cursor = Cursor::default();
        let empty: serde_json::Value =
            serde_json::from_str(&state.update(&mut cursor).expect("a first update")).unwrap();
        assert_eq!(empty["limits"]["points"], 100);
        assert!(empty["rows"].as_array().unwrap().is_empty());
        assert!(state.update(&mut cursor).is_none(), "nothing since");
        ingest(
            &mut state,
            &frame(1, 100, &[("d", "a", 1.0), ("d", "b", 2.0)]),
        );
        let update = |state: &State, cursor: &mut Cursor| {
            state
                .update(cursor)
                .map(|json| serde_json::from_str::<serde_json::Value>(&json).unwrap())
        };
        let first = update(&state, &mut cursor).unwrap();
        assert_eq!(first["rows"].as_array().unwrap().len(), 2);
        assert_eq!(first["rows"][1]["value"], 2.0);
        assert_eq!(first["rows"][1]["key"], "d.b");
        assert!(update(&state, &mut cursor).is_none(), "nothing new");
        ingest(&mut state, &frame(1, 101, &[("d", "b", 3.0)]));
        state.error("127.0.0.1:5", "frame 3 (starts at byte 9): bad");
        let second = update(&state, &mut cursor).unwrap();
        let rows = second["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0]["param"].as_str(), rows[0]["count"].as_u64()),
            (Some("b"), Some(2))
        );
        assert_eq!(second["errors"][0]["origin"], "127.0.0.1:5");
        assert_eq!(second["error_count"], 1);
        // Asking for a chart sends its whole ring, then only what is new
        // (the last point again: its millisecond may have changed).
        cursor.charts(&[1]);
        let third = update(&state, &mut cursor).unwrap();
        assert_eq!(third["series"]["1"]["t"], serde_json::json!([100, 101]));
        assert_eq!(third["series"]["1"]["reset"], true);
        assert!(third["errors"].as_array().unwrap().is_empty());
        ingest(&mut state, &frame(1, 102, &[("d", "b", 4.0)]));
        let fourth = update(&state, &mut cursor).unwrap();
        assert_eq!(fourth["series"]["1"]["t"], serde_json::json!([101, 102]));
        assert_eq!(fourth["series"]["1"]["v"], serde_json::json!([3.0, 4.0]));
        assert_eq!(fourth["series"]["1"]["reset"], false);
        // A value beyond 2^53 goes as a string, exact.
        let mut f = Frame::new(Header::new(1, 2, 1, 3));
        f.add("d", "big", i64::MAX);
        ingest(&mut state, &f.encode().unwrap());
        let fifth = update(&state, &mut cursor).unwrap();
        assert_eq!(fifth["rows"][0]["value"], "9223372036854775807");
    }

    /// The page shows keys as `KeyDisplay` prints them (as `dump --pretty`
    /// and error messages do); device and param stay apart too.
    #[test]
    fn rows_carry_their_key_in_the_one_human_form() {
        let mut state = State::new(limits(10, 10, 100));
        ingest(
            &mut state,
            &frame(
                1,
                100,
                &[("items.10", "price", 1.0), ("core", "a\u{1f}b", 2.0)],
            ),
        );
        let update: serde_json::Value =
            serde_json::from_str(&state.update(&mut Cursor::default()).unwrap()).unwrap();
        let rows = update["rows"].as_array().unwrap();
        assert_eq!(rows[0]["key"], r#""items.10".price"#);
        assert_eq!(rows[0]["device"], "items.10");
        assert_eq!(rows[1]["key"], r#"core."a\u001fb""#);
        assert_eq!(rows[1]["param"], "a\u{1f}b");
    }
}
