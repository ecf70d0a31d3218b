//! The subject scheme: where a frame goes, built from its header, in one
//! place.
//!
//! A frame is published on `<prefix>.<target>.<message_type>.<source>`, each
//! id in decimal. The same frame sent by an MQTT device goes to the topic
//! `<prefix>/<target>/<message_type>/<source>`, which nats-server's MQTT
//! listener maps to that very subject (`/` becomes `.`), so NATS and MQTT
//! publishers meet the same subscribers.
//!
//! Negative message types (the field is an `i32`) are written in decimal
//! with their minus sign: type `-5` to target 99 from source 50 is
//! `fleet.99.-5.50`. A NATS token may hold any printable character except
//! `.`, `*` and `>`, and an MQTT topic level any character except `/`, `+`
//! and `#`, so `-5` is a valid token in both; the decimal form keeps the
//! subject readable and equal to what `mframe dump` prints. Filters match it
//! exactly like any other value.

use std::fmt;
use std::sync::Arc;

use messageframe::Header;

/// The subjects of one prefix: the only place where subjects and MQTT topics
/// are built from headers and filters.
///
/// The prefix is one or more dot-separated tokens of ASCII letters, digits,
/// `-` and `_` (`fleet`, `acme.site-3`). That excludes the NATS wildcards
/// (`*`, `>`), MQTT's separators and wildcards (`/`, `+`, `#`), whitespace,
/// and the `$` that starts system subjects (`$JS`, `$SYS`, `$MQTT`).
///
/// ```
/// use messageframe::Header;
/// use messageframe_nats::{Filter, Subjects};
///
/// let subjects = Subjects::new("fleet")?;
/// let header = Header::new(1001, 7, 50, 99); // id, type, source, target
/// assert_eq!(subjects.subject(&header), "fleet.99.7.50");
/// assert_eq!(subjects.mqtt_topic(&header), "fleet/99/7/50");
/// assert_eq!(subjects.filter(&Filter::any().message_type(7)), "fleet.*.7.*");
/// assert_eq!(subjects.mqtt_filter(&Filter::any().target(99)), "fleet/99/+/+");
/// assert_eq!(subjects.all(), "fleet.>");
/// # Ok::<(), messageframe_nats::InvalidPrefix>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Subjects {
    prefix: Arc<str>,
}

impl Subjects {
    /// The subjects under `prefix`, which must be one or more dot-separated
    /// tokens of ASCII letters, digits, `-` and `_`.
    ///
    /// ```
    /// use messageframe_nats::Subjects;
    ///
    /// assert!(Subjects::new("acme.site-3").is_ok());
    /// assert!(Subjects::new("fleet.*").is_err());
    /// assert!(Subjects::new("a/b").is_err());
    /// assert!(Subjects::new("").is_err());
    /// ```
    pub fn new(prefix: &str) -> Result<Subjects, InvalidPrefix> {
        validate_prefix(prefix)?;
        Ok(Subjects {
            prefix: prefix.into(),
        })
    }

    /// The prefix, as given.
    ///
    /// ```
    /// # use messageframe_nats::Subjects;
    /// assert_eq!(Subjects::new("fleet")?.prefix(), "fleet");
    /// # Ok::<(), messageframe_nats::InvalidPrefix>(())
    /// ```
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The subject a frame with this header is published on:
    /// `<prefix>.<target>.<message_type>.<source>`.
    ///
    /// ```
    /// use messageframe::Header;
    /// # use messageframe_nats::Subjects;
    /// let subjects = Subjects::new("fleet")?;
    /// assert_eq!(subjects.subject(&Header::new(1, -5, 50, 99)), "fleet.99.-5.50");
    /// # Ok::<(), messageframe_nats::InvalidPrefix>(())
    /// ```
    #[must_use]
    pub fn subject(&self, header: &Header) -> String {
        let mut out = String::with_capacity(self.subject_len(header));
        self.write_subject(header, &mut out);
        out
    }

    /// Appends the subject of `header` to `out` (a reused buffer).
    ///
    /// ```
    /// use messageframe::Header;
    /// # use messageframe_nats::Subjects;
    /// let subjects = Subjects::new("fleet")?;
    /// let mut buf = String::new();
    /// subjects.write_subject(&Header::new(1, 2, 3, 4), &mut buf);
    /// assert_eq!(buf, "fleet.4.2.3");
    /// # Ok::<(), messageframe_nats::InvalidPrefix>(())
    /// ```
    pub fn write_subject(&self, header: &Header, out: &mut String) {
        self.write_tokens(
            out,
            '.',
            Some(header.target()),
            Some(header.message_type()),
            Some(header.source()),
            "*",
        );
    }

    /// The NATS subscription subject for `filter`: `*` for every field the
    /// filter leaves open.
    ///
    /// ```
    /// use messageframe_nats::{Filter, Subjects};
    ///
    /// let s = Subjects::new("fleet")?;
    /// assert_eq!(s.filter(&Filter::any()), "fleet.*.*.*");
    /// assert_eq!(s.filter(&Filter::any().target(99).source(50)), "fleet.99.*.50");
    /// # Ok::<(), messageframe_nats::InvalidPrefix>(())
    /// ```
    #[must_use]
    pub fn filter(&self, filter: &Filter) -> String {
        let mut out = String::new();
        self.write_tokens(
            &mut out,
            '.',
            filter.target,
            filter.message_type,
            filter.source,
            "*",
        );
        out
    }

    /// Every subject under the prefix, `<prefix>.>`: what a JetStream stream
    /// of this prefix captures.
    ///
    /// ```
    /// # use messageframe_nats::Subjects;
    /// assert_eq!(Subjects::new("fleet")?.all(), "fleet.>");
    /// # Ok::<(), messageframe_nats::InvalidPrefix>(())
    /// ```
    #[must_use]
    pub fn all(&self) -> String {
        format!("{}.>", self.prefix)
    }

    /// The MQTT topic of a frame with this header:
    /// `<prefix>/<target>/<message_type>/<source>` (dots of a multi-token
    /// prefix become `/`). nats-server delivers a message published on it
    /// to NATS subscribers of [`subject`](Subjects::subject).
    ///
    /// ```
    /// use messageframe::Header;
    /// # use messageframe_nats::Subjects;
    /// let s = Subjects::new("acme.site3")?;
    /// assert_eq!(s.mqtt_topic(&Header::new(1, 7, 50, 99)), "acme/site3/99/7/50");
    /// # Ok::<(), messageframe_nats::InvalidPrefix>(())
    /// ```
    #[must_use]
    pub fn mqtt_topic(&self, header: &Header) -> String {
        let mut out = String::new();
        self.write_tokens(
            &mut out,
            '/',
            Some(header.target()),
            Some(header.message_type()),
            Some(header.source()),
            "+",
        );
        out
    }

    /// The MQTT topic filter for `filter`: `+` for every open field.
    ///
    /// ```
    /// use messageframe_nats::{Filter, Subjects};
    /// let s = Subjects::new("fleet")?;
    /// assert_eq!(s.mqtt_filter(&Filter::any().message_type(-2)), "fleet/+/-2/+");
    /// # Ok::<(), messageframe_nats::InvalidPrefix>(())
    /// ```
    #[must_use]
    pub fn mqtt_filter(&self, filter: &Filter) -> String {
        let mut out = String::new();
        self.write_tokens(
            &mut out,
            '/',
            filter.target,
            filter.message_type,
            filter.source,
            "+",
        );
        out
    }

    fn write_tokens(
        &self,
        out: &mut String,
        separator: char,
        target: Option<u32>,
        message_type: Option<i32>,
        source: Option<u32>,
        wildcard: &str,
    ) {
        let target = Token::new(target.map(i64::from), wildcard);
        let message_type = Token::new(message_type.map(i64::from), wildcard);
        let source = Token::new(source.map(i64::from), wildcard);
        // Sized exactly, so that a subject handed to the client as its
        // payload-like `Bytes` needs no second allocation.
        out.reserve(self.prefix.len() + 3 + target.len() + message_type.len() + source.len());
        if separator == '.' {
            out.push_str(&self.prefix);
        } else {
            out.extend(
                self.prefix
                    .chars()
                    .map(|c| if c == '.' { separator } else { c }),
            );
        }
        for token in [&target, &message_type, &source] {
            out.push(separator);
            out.push_str(token.as_str());
        }
    }

    /// The exact length of [`subject`](Subjects::subject) for `header`.
    fn subject_len(&self, header: &Header) -> usize {
        self.prefix.len()
            + 3
            + Token::new(Some(i64::from(header.target())), "").len()
            + Token::new(Some(i64::from(header.message_type())), "").len()
            + Token::new(Some(i64::from(header.source())), "").len()
    }
}

/// One subject token: an id in decimal, or a wildcard. Formatted on the
/// stack without `fmt` (subjects are built for every published frame).
struct Token<'a> {
    digits: [u8; 20],
    start: usize,
    wildcard: &'a str,
}

impl<'a> Token<'a> {
    fn new(value: Option<i64>, wildcard: &'a str) -> Self {
        let mut token = Token {
            digits: [0; 20],
            start: 20,
            wildcard,
        };
        if let Some(v) = value {
            let mut n = v.unsigned_abs();
            loop {
                token.start -= 1;
                token.digits[token.start] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            if v < 0 {
                token.start -= 1;
                token.digits[token.start] = b'-';
            }
        }
        token
    }

    fn as_str(&self) -> &str {
        if self.start == 20 {
            self.wildcard
        } else {
            // Only ASCII digits and '-' were written.
            std::str::from_utf8(&self.digits[self.start..]).unwrap_or_default()
        }
    }

    fn len(&self) -> usize {
        self.as_str().len()
    }
}

impl fmt::Display for Subjects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.prefix)
    }
}

/// Which frames a subscription wants, by the header fields that make up the
/// subject: each of target, message type and source is either one value or
/// any. Turned into a subject with NATS wildcards by [`Subjects::filter`].
///
/// ```
/// use messageframe::Header;
/// use messageframe_nats::Filter;
///
/// let f = Filter::any().target(99).message_type(7);
/// assert!(f.matches(&Header::new(1, 7, 50, 99)));
/// assert!(!f.matches(&Header::new(1, 8, 50, 99)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Filter {
    target: Option<u32>,
    message_type: Option<i32>,
    source: Option<u32>,
}

impl Filter {
    /// Every frame under the prefix.
    ///
    /// ```
    /// # use messageframe_nats::Filter;
    /// assert!(Filter::any().matches(&messageframe::Header::new(0, 0, 0, 0)));
    /// ```
    #[must_use]
    pub const fn any() -> Self {
        Filter {
            target: None,
            message_type: None,
            source: None,
        }
    }

    /// Only frames for this target.
    ///
    /// ```
    /// # use messageframe_nats::Filter;
    /// assert_eq!(Filter::any().target(4).target_id(), Some(4));
    /// ```
    #[must_use]
    pub const fn target(mut self, target: u32) -> Self {
        self.target = Some(target);
        self
    }

    /// Only frames of this message type (anything that converts into `i32`,
    /// such as your own enum).
    ///
    /// ```
    /// # use messageframe_nats::Filter;
    /// assert_eq!(Filter::any().message_type(-3).message_type_id(), Some(-3));
    /// ```
    #[must_use]
    pub fn message_type(mut self, message_type: impl Into<i32>) -> Self {
        self.message_type = Some(message_type.into());
        self
    }

    /// Only frames from this source.
    ///
    /// ```
    /// # use messageframe_nats::Filter;
    /// assert_eq!(Filter::any().source(50).source_id(), Some(50));
    /// ```
    #[must_use]
    pub const fn source(mut self, source: u32) -> Self {
        self.source = Some(source);
        self
    }

    /// The target this filter requires, if any.
    ///
    /// ```
    /// # use messageframe_nats::Filter;
    /// assert_eq!(Filter::any().target_id(), None);
    /// ```
    #[must_use]
    pub const fn target_id(&self) -> Option<u32> {
        self.target
    }

    /// The message type this filter requires, if any.
    ///
    /// ```
    /// # use messageframe_nats::Filter;
    /// assert_eq!(Filter::any().message_type(7).message_type_id(), Some(7));
    /// ```
    #[must_use]
    pub const fn message_type_id(&self) -> Option<i32> {
        self.message_type
    }

    /// The source this filter requires, if any.
    ///
    /// ```
    /// # use messageframe_nats::Filter;
    /// assert_eq!(Filter::any().source_id(), None);
    /// ```
    #[must_use]
    pub const fn source_id(&self) -> Option<u32> {
        self.source
    }

    /// Whether a frame with this header passes the filter: what the server
    /// decides from the subject, decided here from a header.
    ///
    /// ```
    /// use messageframe::Header;
    /// # use messageframe_nats::Filter;
    /// assert!(Filter::any().source(3).matches(&Header::new(1, 2, 3, 4)));
    /// ```
    #[must_use]
    pub fn matches(&self, header: &Header) -> bool {
        self.target.is_none_or(|t| t == header.target())
            && self.message_type.is_none_or(|m| m == header.message_type())
            && self.source.is_none_or(|s| s == header.source())
    }
}

/// A subject prefix that [`Subjects::new`] refuses, and why.
///
/// ```
/// use messageframe_nats::Subjects;
///
/// let err = Subjects::new("fleet.>").unwrap_err();
/// assert_eq!(err.to_string(), "invalid subject prefix `fleet.>`: `>` at byte 6 (allowed: ASCII letters, digits, `-`, `_`, and `.` between tokens)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidPrefix {
    prefix: String,
    reason: PrefixProblem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PrefixProblem {
    Empty,
    EmptyToken(usize),
    Char(char, usize),
}

impl InvalidPrefix {
    /// The prefix that was refused.
    ///
    /// ```
    /// # use messageframe_nats::Subjects;
    /// assert_eq!(Subjects::new("a..b").unwrap_err().prefix(), "a..b");
    /// ```
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

impl fmt::Display for InvalidPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid subject prefix `{}`: ", self.prefix)?;
        match self.reason {
            PrefixProblem::Empty => f.write_str("it is empty")?,
            PrefixProblem::EmptyToken(at) => write!(f, "empty token at byte {at}")?,
            PrefixProblem::Char(c, at) => write!(f, "`{}` at byte {at}", c.escape_debug())?,
        }
        f.write_str(" (allowed: ASCII letters, digits, `-`, `_`, and `.` between tokens)")
    }
}

impl std::error::Error for InvalidPrefix {}

fn validate_prefix(prefix: &str) -> Result<(), InvalidPrefix> {
    let fail = |reason| {
        Err(InvalidPrefix {
            prefix: prefix.to_owned(),
            reason,
        })
    };
    if prefix.is_empty() {
        return fail(PrefixProblem::Empty);
    }
    let mut token_start = 0;
    for (at, c) in prefix.char_indices() {
        match c {
            '.' if at == token_start => return fail(PrefixProblem::EmptyToken(at)),
            '.' => token_start = at + 1,
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => {}
            _ => return fail(PrefixProblem::Char(c, at)),
        }
    }
    if token_start == prefix.len() {
        return fail(PrefixProblem::EmptyToken(prefix.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_has_prefix_target_type_source_in_decimal() {
        let s = Subjects::new("fleet").unwrap();
        let h = Header::new(1001, 7, 50, 99);
        assert_eq!(s.subject(&h), "fleet.99.7.50");
        let extremes = Header::new(0, i32::MIN, u32::MAX, 0);
        assert_eq!(s.subject(&extremes), "fleet.0.-2147483648.4294967295");
    }

    #[test]
    fn subjects_are_allocated_at_their_exact_length() {
        let s = Subjects::new("fleet").unwrap();
        for h in [
            Header::new(0, 0, 0, 0),
            Header::new(0, -1, 9, 10),
            Header::new(0, i32::MIN, u32::MAX, u32::MAX),
            Header::new(0, i32::MAX, 1234567, 99),
        ] {
            let subject = s.subject(&h);
            assert_eq!(subject.capacity(), subject.len(), "{subject}");
            assert_eq!(
                subject,
                format!("fleet.{}.{}.{}", h.target(), h.message_type(), h.source())
            );
        }
    }

    #[test]
    fn multi_token_prefix_maps_dots_to_slashes_in_mqtt() {
        let s = Subjects::new("acme.site-3.raw_").unwrap();
        let h = Header::new(0, -1, 2, 3);
        assert_eq!(s.subject(&h), "acme.site-3.raw_.3.-1.2");
        assert_eq!(s.mqtt_topic(&h), "acme/site-3/raw_/3/-1/2");
    }

    #[test]
    fn filters_cover_every_combination_of_open_fields() {
        let s = Subjects::new("p").unwrap();
        for mask in 0..8u8 {
            let mut f = Filter::any();
            if mask & 1 != 0 {
                f = f.target(1);
            }
            if mask & 2 != 0 {
                f = f.message_type(-2);
            }
            if mask & 4 != 0 {
                f = f.source(3);
            }
            let t = |bit: u8, v: &str, w: &str| {
                if mask & bit != 0 {
                    v.to_owned()
                } else {
                    w.to_owned()
                }
            };
            let nats = format!(
                "p.{}.{}.{}",
                t(1, "1", "*"),
                t(2, "-2", "*"),
                t(4, "3", "*")
            );
            let mqtt = format!(
                "p/{}/{}/{}",
                t(1, "1", "+"),
                t(2, "-2", "+"),
                t(4, "3", "+")
            );
            assert_eq!(s.filter(&f), nats);
            assert_eq!(s.mqtt_filter(&f), mqtt);
            assert!(f.matches(&Header::new(0, -2, 3, 1)));
            assert_eq!(f.matches(&Header::new(0, 5, 6, 7)), mask == 0);
        }
    }

    #[test]
    fn prefix_validation_names_the_problem() {
        for good in ["a", "fleet", "A-b_9.x", "x.y.z"] {
            assert!(Subjects::new(good).is_ok(), "{good}");
        }
        let cases = [
            ("", "it is empty"),
            (".a", "empty token at byte 0"),
            ("a.", "empty token at byte 2"),
            ("a..b", "empty token at byte 2"),
            ("a b", "` ` at byte 1"),
            ("a/b", "`/` at byte 1"),
            ("a.*", "`*` at byte 2"),
            ("$JS", "`$` at byte 0"),
            ("a+", "`+` at byte 1"),
            ("a#", "`#` at byte 1"),
            ("é", "`é` at byte 0"),
            ("a\tb", "`\\t` at byte 1"),
        ];
        for (bad, why) in cases {
            let err = Subjects::new(bad).unwrap_err();
            assert!(err.to_string().contains(why), "{bad}: {err}");
            assert_eq!(err.prefix(), bad);
        }
    }
}
