//! `--attachments DIR`: each attachment as a file of its own, and an index
//! of them, `DIR/index.parquet`.
//!
//! A file is named `<source>-<counter>-<name>`, from its frame's header and
//! the attachment's name with every character but ASCII letters, digits,
//! `.`, `_` and `-` replaced by `_` (at most 100 bytes of it): nothing a
//! name holds (`/`, `..`, control characters) can make a path outside DIR.
//! A name already taken (a counter that repeats, an earlier export into
//! the same DIR) gets `.1`, `.2`, ... after it: files are never
//! overwritten.
//!
//! The index has a row per attachment: `time` (the header timestamp, ms
//! UTC), `source` (uint32), `counter` (uint64), `name` (the attachment's
//! name as the frame has it), `bytes` (uint64) and `path` (the file's name
//! in DIR, where the index is). Its row groups are bounded like the long
//! table's.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{
    StringBuilder, TimestampMillisecondBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use messageframe::FrameView;
use parquet::arrow::ArrowWriter;

use super::parquet_out::{self, error, timestamp};

/// The index's name in DIR.
pub(crate) const INDEX: &str = "index.parquet";

/// Index rows built before they go to the writer.
const BATCH_ROWS: usize = 4096;

/// The longest piece of an attachment's name in a file name.
const MAX_NAME: usize = 100;

/// What the index's `mframe` metadata says.
const DESCRIPTION: &str = "the attachments of messageframe frames: one row per attachment, \
its frame's header timestamp (time), source and counter, its name, size (bytes) and the \
file holding its bytes (path, relative to this index's directory)";

/// The attachment files and their index being written.
pub(crate) struct Attachments {
    dir: PathBuf,
    index: ArrowWriter<BufWriter<File>>,
    schema: SchemaRef,
    time: TimestampMillisecondBuilder,
    source: UInt32Builder,
    counter: UInt64Builder,
    name: StringBuilder,
    bytes: UInt64Builder,
    path: StringBuilder,
    rows: usize,
    /// Attachments written.
    pub(crate) written: u64,
}

fn failed(what: &Path, e: impl std::fmt::Display) -> String {
    format!("cannot write {}: {e}", what.display())
}

impl Attachments {
    /// Creates DIR (and its parents) if needed, and the index in it.
    pub(crate) fn create(dir: &Path, row_group_rows: usize) -> Result<Attachments, String> {
        fs::create_dir_all(dir).map_err(|e| failed(dir, e))?;
        let index_path = dir.join(INDEX);
        let file = File::create(&index_path).map_err(|e| failed(&index_path, e))?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("time", timestamp(), false),
            Field::new("source", DataType::UInt32, false),
            Field::new("counter", DataType::UInt64, false),
            Field::new("name", DataType::Utf8, false),
            Field::new("bytes", DataType::UInt64, false),
            Field::new("path", DataType::Utf8, false),
        ]));
        let index = ArrowWriter::try_new(
            BufWriter::new(file),
            schema.clone(),
            Some(parquet_out::properties(row_group_rows, DESCRIPTION)),
        )
        .map_err(|e| failed(&index_path, error(e)))?;
        Ok(Attachments {
            dir: dir.to_owned(),
            index,
            schema,
            time: TimestampMillisecondBuilder::new().with_timezone("UTC"),
            source: UInt32Builder::new(),
            counter: UInt64Builder::new(),
            name: StringBuilder::new(),
            bytes: UInt64Builder::new(),
            path: StringBuilder::new(),
            rows: 0,
            written: 0,
        })
    }

    /// Writes the attachments of `view`.
    pub(crate) fn write(&mut self, view: &FrameView<'_>) -> Result<(), String> {
        let h = view.header();
        for (name, data) in view.attachments() {
            let stem = format!("{}-{}-{}", h.source(), h.counter(), file_safe(name));
            let (path, file) = self.create_new(&stem)?;
            let mut out = BufWriter::new(file);
            out.write_all(data)
                .and_then(|()| out.flush())
                .map_err(|e| failed(&self.dir.join(&path), e))?;
            self.time
                .append_value(i64::try_from(h.timestamp()).unwrap_or(i64::MAX));
            self.source.append_value(h.source());
            self.counter.append_value(h.counter());
            self.name.append_value(name);
            self.bytes.append_value(data.len() as u64);
            self.path.append_value(&path);
            self.rows += 1;
            self.written += 1;
            if self.rows == BATCH_ROWS {
                self.hand_over()?;
            }
        }
        Ok(())
    }

    /// A new file `stem` in DIR, or `stem.1`, `stem.2`, ... if taken.
    fn create_new(&self, stem: &str) -> Result<(String, File), String> {
        let mut n = 0u64;
        loop {
            let name = if n == 0 {
                stem.to_owned()
            } else {
                format!("{stem}.{n}")
            };
            let path = self.dir.join(&name);
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => return Ok((name, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(failed(&path, e)),
            }
        }
    }

    fn hand_over(&mut self) -> Result<(), String> {
        if self.rows == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.time.finish()),
            Arc::new(self.source.finish()),
            Arc::new(self.counter.finish()),
            Arc::new(self.name.finish()),
            Arc::new(self.bytes.finish()),
            Arc::new(self.path.finish()),
        ];
        self.rows = 0;
        let batch =
            RecordBatch::try_new(self.schema.clone(), columns).map_err(|e| e.to_string())?;
        self.index
            .write(&batch)
            .map_err(|e| failed(&self.dir.join(INDEX), error(e)))
    }

    /// Writes the index's last rows and its footer.
    pub(crate) fn finish(mut self) -> Result<u64, String> {
        self.hand_over()?;
        let index = self.dir.join(INDEX);
        let mut out = self
            .index
            .into_inner()
            .map_err(|e| failed(&index, error(e)))?;
        out.flush().map_err(|e| failed(&index, e))?;
        Ok(self.written)
    }
}

/// An attachment's name as a piece of a file name.
fn file_safe(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME)
        .collect();
    if out.is_empty() {
        out.push('_');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::file_safe;

    #[test]
    fn names_cannot_leave_the_directory() {
        assert_eq!(file_safe("iq"), "iq");
        assert_eq!(file_safe("../../etc/passwd"), ".._.._etc_passwd");
        assert_eq!(file_safe(""), "_");
        assert_eq!(file_safe("spectre\u{1F}x\n"), "spectre_x_");
        assert_eq!(file_safe("Grüße 📡"), "Gr__e__");
        assert_eq!(file_safe(&"a".repeat(500)).len(), 100);
    }
}
