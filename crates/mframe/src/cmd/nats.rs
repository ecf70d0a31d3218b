//! What `pub`, `sub`, `record` and `replay` share: the server URL, the
//! subject prefix and the header filters on the command line, connecting
//! with a bounded timeout, connection events on stderr, the check that the
//! server has everything sent so far, and opening an existing JetStream
//! stream.
//!
//! Everything NATS is the library's (`messageframe-nats`): subjects,
//! publishing, subscriptions, JetStream. This module only turns the command
//! line into its calls and its errors into `Failure`s.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use clap::Args;
use futures_util::StreamExt;
use messageframe_nats::async_nats::jetstream::context::GetStreamErrorKind;
use messageframe_nats::async_nats::jetstream::{self, ErrorCode};
use messageframe_nats::async_nats::{ConnectOptions, ServerAddr};
use messageframe_nats::{Archive, ArchiveConfig, Client, Filter, Subjects};

use crate::failure::{status, Failure};

/// The subject prefix when `--prefix` is not given: frames go on
/// `frames.<target>.<message_type>.<source>`.
pub(crate) const DEFAULT_PREFIX: &str = "frames";

/// How long `pub` and `replay --to` wait, at the end, for the server to
/// confirm that it has every frame sent.
const CONFIRM_WITHIN: Duration = Duration::from_secs(10);

/// One or more server URLs (a cluster's servers, comma-separated), checked
/// when the command line is parsed.
#[derive(Debug, Clone)]
pub(crate) struct Servers {
    addrs: Vec<ServerAddr>,
}

impl Servers {
    pub(crate) fn count(&self) -> usize {
        self.addrs.len()
    }

    /// The credentials of the first URL that has some.
    fn credentials(&self) -> Option<Credentials> {
        let addr = self.addrs.iter().find(|a| a.username().is_some())?;
        let user = percent_decode(addr.username().unwrap_or_default());
        Some(match addr.password() {
            Some(password) => Credentials::UserPassword(user, percent_decode(password)),
            None => Credentials::Token(user),
        })
    }
}

/// What a URL says to log in with.
#[derive(Debug, PartialEq, Eq)]
enum Credentials {
    UserPassword(String, String),
    Token(String),
}

/// A URL's user or password as written (`%40` for `@`…), decoded. A `%`
/// not followed by two hex digits stays as it is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The URLs as `scheme://host:port`: never the user name or password a URL
/// may carry.
impl fmt::Display for Servers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, addr) in self.addrs.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let host = addr.host();
            if host.contains(':') {
                write!(f, "{}://[{host}]:{}", addr.scheme(), addr.port())?;
            } else {
                write!(f, "{}://{host}:{}", addr.scheme(), addr.port())?;
            }
        }
        Ok(())
    }
}

/// clap's parser for `nats://HOST:PORT` (or `tls://`; several joined by
/// commas). The scheme is required: a bare `host:port` would be taken for a
/// file name by `replay`, and `nats://` says what the argument is.
pub(crate) fn parse_servers(text: &str) -> Result<Servers, String> {
    let mut addrs = Vec::new();
    for url in text.split(',') {
        let url = url.trim();
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(format!(
                "`{url}` is not a NATS URL: expected nats://HOST:PORT (or tls://HOST:PORT)"
            ));
        };
        if scheme != "nats" && scheme != "tls" {
            return Err(format!(
                "`{url}`: the scheme must be nats:// or tls://, not {scheme}://"
            ));
        }
        if rest.is_empty() || rest.starts_with(':') || rest.starts_with('/') {
            return Err(format!(
                "`{url}` names no host: expected {scheme}://HOST:PORT"
            ));
        }
        let addr: ServerAddr = url
            .parse()
            .map_err(|e| format!("`{url}` is not a valid NATS URL: {e}"))?;
        if addr.host().is_empty() {
            return Err(format!(
                "`{url}` names no host: expected {scheme}://HOST:PORT"
            ));
        }
        addrs.push(addr);
    }
    Ok(Servers { addrs })
}

/// clap's parser for `--prefix`: the library's rules (`Subjects::new`).
pub(crate) fn parse_prefix(prefix: &str) -> Result<String, String> {
    Subjects::new(prefix)
        .map(|_| prefix.to_owned())
        .map_err(|e| e.to_string())
}

/// clap's parser for JetStream stream and consumer names.
pub(crate) fn parse_name(name: &str) -> Result<String, String> {
    match name
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    {
        _ if name.is_empty() => Err("the name is empty".to_owned()),
        Some((at, c)) => Err(format!(
            "`{}` at byte {at} (allowed: ASCII letters, digits, `-` and `_`)",
            c.escape_debug()
        )),
        None => Ok(name.to_owned()),
    }
}

/// clap's parser for `--connect-timeout`: seconds, fractions allowed.
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(seconds > 0.0 && seconds <= 3600.0) {
        return Err(format!("{text} s is out of range (0 < s <= 3600)"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The server and the prefix, for every command that talks to NATS.
#[derive(Args, Debug)]
pub(crate) struct Server {
    /// The NATS server: nats://HOST:PORT (tls:// for TLS; several
    /// servers of a cluster separated by commas).
    #[arg(value_name = "URL", value_parser = parse_servers)]
    pub(crate) url: Servers,
    #[command(flatten)]
    pub(crate) options: Connection,
}

/// The prefix and the connect timeout, apart from the URL (`replay` takes
/// its URL in another place).
#[derive(Args, Debug)]
pub(crate) struct Connection {
    /// Subject prefix: frames travel on PREFIX.<target>.<message_type>.<source>.
    #[arg(long, value_name = "PREFIX", default_value = DEFAULT_PREFIX, value_parser = parse_prefix)]
    pub(crate) prefix: String,
    /// Give up connecting after this many seconds per server (the first
    /// connection only; later reconnections never give up).
    #[arg(long, value_name = "SECONDS", default_value = "5", value_parser = parse_seconds)]
    pub(crate) connect_timeout: Duration,
}

/// `--target`, `--type`, `--source`: which frames, by their header.
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct FilterArgs {
    /// Only frames whose header target is T.
    #[arg(long, value_name = "T")]
    pub(crate) target: Option<u32>,
    /// Only frames whose header message_type is M (may be negative).
    #[arg(long = "type", value_name = "M", allow_negative_numbers = true)]
    pub(crate) message_type: Option<i32>,
    /// Only frames whose header source is S.
    #[arg(long, value_name = "S")]
    pub(crate) source: Option<u32>,
}

impl FilterArgs {
    pub(crate) fn filter(self) -> Filter {
        let mut filter = Filter::any();
        if let Some(t) = self.target {
            filter = filter.target(t);
        }
        if let Some(m) = self.message_type {
            filter = filter.message_type(m);
        }
        if let Some(s) = self.source {
            filter = filter.source(s);
        }
        filter
    }
}

/// Connects to `url` under `connection.prefix`, within the connect timeout
/// per server: an unreachable or silent server is an error, never a hang.
pub(crate) async fn connect(
    url: &Servers,
    connection: &Connection,
    command: &str,
) -> Result<Client, Failure> {
    let timeout = connection.connect_timeout;
    let mut options = ConnectOptions::new()
        .name(format!("mframe {command}"))
        .connection_timeout(timeout);
    // async-nats does not read credentials from URLs; they are passed on
    // here, as other NATS clients do: `user:password@` or `token@`.
    if let Some(credentials) = url.credentials() {
        options = match credentials {
            Credentials::UserPassword(user, password) => options.user_and_password(user, password),
            Credentials::Token(token) => options.token(token),
        };
    }
    // async-nats bounds each TCP connect by the timeout, but not the name
    // lookup nor a server that accepts and never says hello: the whole
    // first connection is bounded here.
    let bound = timeout * u32::try_from(url.count()).unwrap_or(u32::MAX);
    let connecting = Client::connect_with(options, url.addrs.clone(), &connection.prefix);
    match tokio::time::timeout(bound, connecting).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(Failure::Bad(format!("cannot connect to {url}: {e}"))),
        Err(_) => Err(Failure::Bad(format!(
            "cannot connect to {url}: no NATS server answered within {} s (--connect-timeout)",
            timeout.as_secs_f64()
        ))),
    }
}

/// Prints the client's connection events on stderr (disconnections,
/// reconnections, failed attempts) while the returned guard lives: for the
/// commands that have no subscription to carry them. The guard goes before
/// the client, so that the command's own closing of the connection is not
/// reported.
pub(crate) fn print_events(client: &Client) -> EventPrinter {
    let mut events = client.events();
    EventPrinter(tokio::spawn(async move {
        while let Some(event) = events.next().await {
            status(format_args!("nats: {event}"));
        }
    }))
}

/// Stops printing connection events when dropped.
pub(crate) struct EventPrinter(tokio::task::JoinHandle<()>);

impl Drop for EventPrinter {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Waits until the server has processed everything this client sent (a
/// message to a fresh inbox of its own comes back), at most 10 s: core
/// NATS has no acknowledgement, and `flush` only empties the socket buffer.
/// After this, every frame published before it has reached the server and
/// been passed on to the subscribers it had.
pub(crate) async fn confirm(client: &Client) -> Result<bool, Failure> {
    let nats = client.nats();
    let inbox = nats.new_inbox();
    let failed = |e: &dyn fmt::Display| Failure::Bad(format!("cannot confirm delivery: {e}"));
    let mut echo = nats
        .subscribe(inbox.clone())
        .await
        .map_err(|e| failed(&e))?;
    nats.publish(inbox, Bytes::new())
        .await
        .map_err(|e| failed(&e))?;
    nats.flush().await.map_err(|e| failed(&e))?;
    Ok(matches!(
        tokio::time::timeout(CONFIRM_WITHIN, echo.next()).await,
        Ok(Some(_))
    ))
}

/// The message when [`confirm`] times out.
pub(crate) fn unconfirmed(frames: u64, url: &Servers) -> Failure {
    Failure::Bad(format!(
        "{url}: {frames} frames were sent but the server did not confirm receiving them \
         within {} s (connection lost?): some may not have arrived",
        CONFIRM_WITHIN.as_secs()
    ))
}

/// The JetStream stream `name` if the server has one (`None` if not).
pub(crate) async fn find_stream(
    client: &Client,
    name: &str,
    url: &Servers,
) -> Result<Option<jetstream::stream::Stream>, Failure> {
    let js = jetstream::new(client.nats().clone());
    match js.get_stream(name).await {
        Ok(stream) => Ok(Some(stream)),
        Err(e) => match e.kind() {
            GetStreamErrorKind::JetStream(js_error)
                if js_error.error_code() == ErrorCode::STREAM_NOT_FOUND =>
            {
                Ok(None)
            }
            _ => Err(Failure::Bad(format!(
                "{url}: cannot look up JetStream stream `{name}`: {e} \
                 (is JetStream enabled on the server?)"
            ))),
        },
    }
}

/// Opens the existing stream `name` for replay: a replay never creates one
/// (a misspelt name would be an empty stream, silently).
pub(crate) async fn open_archive(
    client: &Client,
    name: &str,
    url: &Servers,
) -> Result<Archive, Failure> {
    let Some(stream) = find_stream(client, name, url).await? else {
        return Err(Failure::Bad(format!(
            "{url}: there is no JetStream stream `{name}` \
             (`mframe record {url} --stream {name}` creates one)"
        )));
    };
    let wanted = client.subjects().all();
    let subjects = &stream.cached_info().config.subjects;
    if !subjects.contains(&wanted) {
        let hint = match subjects.first().and_then(|s| s.strip_suffix(".>")) {
            Some(prefix) if subjects.len() == 1 => format!(" (its prefix: --prefix {prefix})"),
            _ => String::new(),
        };
        return Err(Failure::Bad(format!(
            "{url}: stream `{name}` records {subjects:?}, not `{wanted}`: \
             give the prefix it records with --prefix{hint}"
        )));
    }
    client
        .archive(ArchiveConfig::new(name))
        .await
        .map_err(|e| Failure::Bad(format!("{url}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_come_from_the_first_url_that_has_them_decoded() {
        let servers = parse_servers("nats://a:4222,nats://us%40er:p%25ss%3a@b:4222").unwrap();
        assert_eq!(
            servers.credentials(),
            Some(Credentials::UserPassword("us@er".into(), "p%ss:".into()))
        );
        let token = parse_servers("tls://s3cret@host").unwrap();
        assert_eq!(
            token.credentials(),
            Some(Credentials::Token("s3cret".into()))
        );
        assert_eq!(parse_servers("nats://host").unwrap().credentials(), None);
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn urls_are_printed_without_credentials() {
        let servers =
            parse_servers("nats://u:secret@127.0.0.1:4000,tls://[::1],nats://host").unwrap();
        assert_eq!(
            servers.to_string(),
            "nats://127.0.0.1:4000,tls://[::1]:4222,nats://host:4222"
        );
    }
}
