//! Writing the Parquet long table: one row per parameter.
//!
//! | column | Arrow type (Parquet) |
//! |---|---|
//! | time | timestamp ms, UTC (INT64 TIMESTAMP(MILLIS, UTC)) |
//! | source | uint32 |
//! | target | uint32 |
//! | message_type | int32 |
//! | message_id | int32 |
//! | counter | uint64 |
//! | device | dictionary<int32, utf8> |
//! | param | dictionary<int32, utf8> |
//! | type | utf8: `int64` / `double` / `string` / `bool` / `unknown` |
//! | value_i64 | int64, null unless type int64 |
//! | value_f64 | float64, null unless double |
//! | value_str | utf8, null unless string |
//! | value_bool | bool, null unless bool |
//!
//! The header columns are never null; a value of an unknown tag has all
//! four value columns null. Rows are built column by column
//! ([`arrow_array::builder`]) and handed to the writer every
//! [`BATCH_ROWS`] rows; the writer closes a row group every
//! `--row-group-rows` rows, so what is held in memory is one batch and one
//! row group's encoded pages, whatever the recording's length. Pages are
//! zstd-compressed (level 1); Parquet dictionaries only for the names (see
//! [`properties`]).

use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMillisecondBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use messageframe::{FrameView, ValueRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

/// Rows built before they go to the writer.
pub(crate) const BATCH_ROWS: usize = 64 * 1024;

/// `--row-group-rows` when not given.
pub(crate) const DEFAULT_ROW_GROUP_ROWS: usize = 1024 * 1024;

/// The zstd level of the pages.
const ZSTD_LEVEL: i32 = 1;

/// The timezone of the `time` columns.
const UTC: &str = "UTC";

/// The long table's schema: the column names and types are an interface.
pub(crate) fn schema() -> SchemaRef {
    let dictionary = || DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    Arc::new(Schema::new(vec![
        Field::new("time", timestamp(), false),
        Field::new("source", DataType::UInt32, false),
        Field::new("target", DataType::UInt32, false),
        Field::new("message_type", DataType::Int32, false),
        Field::new("message_id", DataType::Int32, false),
        Field::new("counter", DataType::UInt64, false),
        Field::new("device", dictionary(), false),
        Field::new("param", dictionary(), false),
        Field::new("type", DataType::Utf8, false),
        Field::new("value_i64", DataType::Int64, true),
        Field::new("value_f64", DataType::Float64, true),
        Field::new("value_str", DataType::Utf8, true),
        Field::new("value_bool", DataType::Boolean, true),
    ]))
}

/// Timestamps in milliseconds, UTC.
pub(crate) fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some(UTC.into()))
}

/// The writer properties of every Parquet file `export` writes.
pub(crate) fn properties(row_group_rows: usize, description: &str) -> WriterProperties {
    let mut builder = WriterProperties::builder();
    // Dictionaries where values repeat (names, types, header fields that
    // few frames share); not for the timestamps, counters and numbers,
    // which rarely repeat: a dictionary there is a hash per row for
    // nothing (the writer gives it up after 1 MiB of distinct values).
    for column in [
        "time",
        "source",
        "target",
        "message_type",
        "message_id",
        "counter",
        "type",
        "value_i64",
        "value_f64",
        "value_str",
    ] {
        builder = builder.set_column_dictionary_enabled(ColumnPath::from(column), false);
    }
    builder
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(ZSTD_LEVEL).expect("a valid zstd level"),
        ))
        .set_max_row_group_row_count(Some(row_group_rows))
        .set_created_by(format!("mframe {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(vec![KeyValue::new(
            "mframe".to_owned(),
            description.to_owned(),
        )]))
        .build()
}

/// A Parquet error as one line.
pub(crate) fn error(e: parquet::errors::ParquetError) -> String {
    e.to_string()
}

/// The columns of the rows not yet handed to the writer.
struct Columns {
    time: TimestampMillisecondBuilder,
    source: UInt32Builder,
    target: UInt32Builder,
    message_type: Int32Builder,
    message_id: Int32Builder,
    counter: UInt64Builder,
    device: Names,
    param: Names,
    kind: StringBuilder,
    value_i64: Int64Builder,
    value_f64: Float64Builder,
    value_str: StringBuilder,
    value_bool: BooleanBuilder,
    rows: usize,
}

impl Columns {
    fn new() -> Columns {
        let n = BATCH_ROWS;
        Columns {
            time: TimestampMillisecondBuilder::with_capacity(n).with_timezone(UTC),
            source: UInt32Builder::with_capacity(n),
            target: UInt32Builder::with_capacity(n),
            message_type: Int32Builder::with_capacity(n),
            message_id: Int32Builder::with_capacity(n),
            counter: UInt64Builder::with_capacity(n),
            device: Names::default(),
            param: Names::default(),
            kind: StringBuilder::with_capacity(n, n * 6),
            value_i64: Int64Builder::with_capacity(n),
            value_f64: Float64Builder::with_capacity(n),
            value_str: StringBuilder::new(),
            value_bool: BooleanBuilder::with_capacity(n),
            rows: 0,
        }
    }

    /// The rows so far as a batch; the builders start over (keeping their
    /// allocations).
    fn batch(&mut self, schema: &SchemaRef) -> Result<RecordBatch, String> {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.time.finish()),
            Arc::new(self.source.finish()),
            Arc::new(self.target.finish()),
            Arc::new(self.message_type.finish()),
            Arc::new(self.message_id.finish()),
            Arc::new(self.counter.finish()),
            Arc::new(self.device.finish()?),
            Arc::new(self.param.finish()?),
            Arc::new(self.kind.finish()),
            Arc::new(self.value_i64.finish()),
            Arc::new(self.value_f64.finish()),
            Arc::new(self.value_str.finish()),
            Arc::new(self.value_bool.finish()),
        ];
        self.rows = 0;
        RecordBatch::try_new(schema.clone(), columns).map_err(|e| e.to_string())
    }
}

/// Batches on their way to the encoding thread: the rows being built, and
/// at most this many more, are what memory holds besides the row group.
const IN_FLIGHT: usize = 2;

/// A dictionary-encoded column of names (devices, parameters): the keys
/// of the rows, and the names they stand for.
///
/// Recordings repeat the same names in the same order frame after frame,
/// so each row's name is first compared with the name the previous frame
/// had at the same position (one comparison of a short string), and looked
/// up by hash only when it differs. The dictionary outlives a batch (each
/// batch's array carries all of it) until it holds [`MAX_NAMES`] names,
/// when it starts over with the next batch.
#[derive(Default)]
struct Names {
    ids: std::collections::HashMap<Box<str>, i32>,
    names: Vec<Box<str>>,
    keys: Vec<i32>,
    /// The id of the previous frame's name at each position.
    last: Vec<i32>,
}

/// Names in a dictionary before it starts over.
const MAX_NAMES: usize = 1 << 16;

impl Names {
    fn append(&mut self, name: &str, position: usize) {
        if let Some(&id) = self.last.get(position) {
            if *self.names[id as usize] == *name {
                self.keys.push(id);
                return;
            }
        }
        let id = match self.ids.get(name) {
            Some(&id) => id,
            None => {
                let id = self.names.len() as i32;
                self.names.push(name.into());
                self.ids.insert(name.into(), id);
                id
            }
        };
        if position < self.last.len() {
            self.last[position] = id;
        } else if position == self.last.len() {
            self.last.push(id);
        }
        self.keys.push(id);
    }

    /// The rows so far as a dictionary array; the keys start over, and the
    /// dictionary too once it is large.
    fn finish(&mut self) -> Result<arrow_array::DictionaryArray<Int32Type>, String> {
        let keys = arrow_array::Int32Array::from(std::mem::take(&mut self.keys));
        let values = arrow_array::StringArray::from_iter_values(self.names.iter());
        if self.names.len() >= MAX_NAMES {
            self.ids.clear();
            self.names.clear();
            self.last.clear();
        }
        arrow_array::DictionaryArray::try_new(keys, Arc::new(values)).map_err(|e| e.to_string())
    }
}

/// A Parquet long table being written. Rows are built on the caller's
/// thread; the Parquet writer (dictionaries, pages, compression: about
/// half of the work) runs on a thread of its own, a batch at a time.
pub(crate) struct ParquetOut<W: Write + Send + 'static> {
    schema: SchemaRef,
    columns: Columns,
    batches: Option<std::sync::mpsc::SyncSender<RecordBatch>>,
    encoder: Option<std::thread::JoinHandle<Result<W, String>>>,
}

/// What the `mframe` key-value metadata of the long table says.
const DESCRIPTION: &str = "messageframe frames as a long table: one row per parameter, with its \
frame's header (time = header timestamp, ms UTC); type is int64, double, string, bool or unknown; \
the value is in value_i64, value_f64, value_str or value_bool (the others null; all null for \
unknown). Attachments are not in this table (mframe export --attachments DIR).";

impl<W: Write + Send + 'static> ParquetOut<W> {
    pub(crate) fn new(out: W, row_group_rows: usize) -> Result<Self, String> {
        let schema = schema();
        let mut writer = ArrowWriter::try_new(
            out,
            schema.clone(),
            Some(properties(row_group_rows, DESCRIPTION)),
        )
        .map_err(error)?;
        let (batches, rx) = std::sync::mpsc::sync_channel::<RecordBatch>(IN_FLIGHT);
        let encoder = std::thread::Builder::new()
            .name("parquet".into())
            .spawn(move || {
                for batch in rx {
                    writer.write(&batch).map_err(error)?;
                }
                writer.into_inner().map_err(error)
            })
            .map_err(|e| format!("cannot start the Parquet thread: {e}"))?;
        Ok(ParquetOut {
            schema,
            columns: Columns::new(),
            batches: Some(batches),
            encoder: Some(encoder),
        })
    }

    /// Adds a row per parameter of `view`.
    pub(crate) fn write(&mut self, view: &FrameView<'_>) -> Result<(), String> {
        let h = view.header();
        for (position, (device, param, value)) in view.iter().enumerate() {
            let c = &mut self.columns;
            // Milliseconds since the epoch as Arrow's i64 (a u64 beyond
            // i64::MAX, year 292,278,994, saturates).
            c.time
                .append_value(i64::try_from(h.timestamp()).unwrap_or(i64::MAX));
            c.source.append_value(h.source());
            c.target.append_value(h.target());
            c.message_type.append_value(h.message_type());
            c.message_id.append_value(h.message_id());
            c.counter.append_value(h.counter());
            c.device.append(device, position);
            c.param.append(param, position);
            let (kind, i, f, s, b) = match value {
                ValueRef::Int(i) => ("int64", Some(i), None, None, None),
                ValueRef::Double(f) => ("double", None, Some(f), None, None),
                ValueRef::String(s) => ("string", None, None, Some(s), None),
                ValueRef::Bool(b) => ("bool", None, None, None, Some(b)),
                _ => ("unknown", None, None, None, None),
            };
            c.kind.append_value(kind);
            c.value_i64.append_option(i);
            c.value_f64.append_option(f);
            c.value_str.append_option(s);
            c.value_bool.append_option(b);
            c.rows += 1;
            if c.rows == BATCH_ROWS {
                self.hand_over()?;
            }
        }
        Ok(())
    }

    fn hand_over(&mut self) -> Result<(), String> {
        if self.columns.rows == 0 {
            return Ok(());
        }
        let batch = self.columns.batch(&self.schema)?;
        let sent = self
            .batches
            .as_ref()
            .is_some_and(|tx| tx.send(batch).is_ok());
        if sent {
            Ok(())
        } else {
            // The thread stopped: its error says why.
            self.batches = None;
            self.join().map(drop)
        }
    }

    fn join(&mut self) -> Result<W, String> {
        match self.encoder.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err("the Parquet thread panicked".into()),
            None => Err("the Parquet writer stopped earlier".into()),
        }
    }

    /// Writes the last rows and the footer; the output.
    pub(crate) fn finish(mut self) -> Result<W, String> {
        self.hand_over()?;
        // The thread ends when its queue does.
        self.batches = None;
        self.join()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use messageframe::{Decoder, Frame, Header};

    #[test]
    fn the_schema_has_the_interface_columns_in_order() {
        let names: Vec<String> = schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(
            names,
            [
                "time",
                "source",
                "target",
                "message_type",
                "message_id",
                "counter",
                "device",
                "param",
                "type",
                "value_i64",
                "value_f64",
                "value_str",
                "value_bool"
            ]
        );
    }

    #[test]
    fn rows_are_batched_and_the_file_ends_with_a_footer() {
        let mut frame = Frame::new(Header::builder().timestamp(5).source(1).build());
        for k in 0..1000 {
            frame.add("d", &format!("p{k}"), k as i64);
        }
        let bytes = frame.encode().unwrap();
        let view = Decoder::new().view(&bytes).unwrap();
        let mut out = ParquetOut::new(Vec::new(), 10_000).unwrap();
        for _ in 0..100 {
            out.write(&view).unwrap();
        }
        let file = out.finish().unwrap();
        assert_eq!(&file[..4], b"PAR1");
        assert_eq!(&file[file.len() - 4..], b"PAR1");
    }
}
