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
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use futures_util::StreamExt;
use messageframe_nats::async_nats::jetstream::context::GetStreamErrorKind;
use messageframe_nats::async_nats::jetstream::{self, ErrorCode};
use messageframe_nats::async_nats::{ConnectOptions, ServerAddr};
use messageframe_nats::{Archive, ArchiveConfig, Client, Filter, Subjects};

use super::events::EventLog;
use crate::failure::Failure;

/// The subject prefix when `--prefix` is not given: frames go on
/// `frames.<target>.<message_type>.<source>`.
pub(crate) const DEFAULT_PREFIX: &str = "frames";

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

    /// Each server as shown (no credentials), with its host and port.
    pub(crate) fn endpoints(&self) -> Vec<(String, String, u16)> {
        self.addrs
            .iter()
            .map(|a| {
                let shown = Servers {
                    addrs: vec![a.clone()],
                };
                (shown.to_string(), a.host().to_owned(), a.port())
            })
            .collect()
    }

    /// The credentials of the first URL that has some.
    fn credentials(&self) -> Option<Login> {
        let addr = self.addrs.iter().find(|a| a.username().is_some())?;
        let user = percent_decode(addr.username().unwrap_or_default());
        Some(match addr.password() {
            Some(password) => Login::UserPassword(user, percent_decode(password)),
            None => Login::Token(user),
        })
    }
}

/// A user and password, or a token: from a URL or from the environment.
#[derive(Debug, PartialEq, Eq)]
enum Login {
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

/// A URL (or a comma-separated list of them) as it may be shown: whatever
/// stands before an `@` in a URL's authority (`user:password`, a token) is
/// replaced by `***` (`user:***` when a user name is there). Every message
/// about a URL the user typed goes through this, so that a malformed URL
/// never echoes its password.
pub(crate) fn redact(text: &str) -> String {
    text.split(',')
        .map(|url| {
            let (scheme, rest) = match url.split_once("://") {
                Some((scheme, rest)) => (Some(scheme), rest),
                None => (None, url),
            };
            let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            let shown = match authority.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _)) => format!("{user}:***@{host}"),
                    None => format!("***@{host}"),
                },
                None => authority.to_owned(),
            };
            match scheme {
                Some(scheme) => format!("{scheme}://{shown}{path}"),
                None => format!("{shown}{path}"),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses `nats://HOST:PORT` (or `tls://`; several joined by commas). The
/// scheme is required: a bare `host:port` would be taken for a file name by
/// `replay`, and `nats://` says what the argument is. Errors name the URL
/// redacted ([`redact`]).
pub(crate) fn parse_servers(text: &str) -> Result<Servers, String> {
    let mut addrs = Vec::new();
    for url in text.split(',') {
        let url = url.trim();
        let shown = redact(url);
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(format!(
                "`{shown}` is not a NATS URL: expected nats://HOST:PORT (or tls://HOST:PORT)"
            ));
        };
        if scheme != "nats" && scheme != "tls" {
            return Err(format!(
                "`{shown}`: the scheme must be nats:// or tls://, not {scheme}://"
            ));
        }
        let host_part = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        if host_part.is_empty() || host_part.starts_with(':') || host_part.starts_with('/') {
            return Err(format!(
                "`{shown}` names no host: expected {scheme}://HOST:PORT"
            ));
        }
        // The URL parser's message never holds the URL, but it is not
        // ours to promise: only its kind of error is kept.
        let addr: ServerAddr = url.parse().map_err(|e: std::io::Error| {
            format!(
                "`{shown}` is not a valid NATS URL: {}",
                redact(&e.to_string())
            )
        })?;
        if addr.host().is_empty() {
            return Err(format!(
                "`{shown}` names no host: expected {scheme}://HOST:PORT"
            ));
        }
        addrs.push(addr);
    }
    Ok(Servers { addrs })
}

/// clap's parser for a server URL argument: [`parse_servers`], with an
/// error that shows the URL redacted. (clap's own "invalid value" message
/// would print the argument as typed, password included.)
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServersParser;

impl clap::builder::TypedValueParser for ServersParser {
    type Value = Servers;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Servers, clap::Error> {
        let text = value.to_string_lossy();
        parse_servers(&text).map_err(|reason| {
            let arg = arg.map_or_else(|| "URL".to_owned(), ToString::to_string);
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value '{}' for '{arg}': {reason}\n", redact(&text)),
            )
            .with_cmd(cmd)
        })
    }
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
pub(crate) fn parse_seconds(text: &str) -> Result<Duration, String> {
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
    #[arg(value_name = "URL", value_parser = ServersParser)]
    pub(crate) url: Servers,
    #[command(flatten)]
    pub(crate) options: Connection,
    #[command(flatten)]
    pub(crate) auth: Auth,
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

/// How to log in and what TLS to use: `--creds`, `--nkey`, `--tls-*`; and,
/// from the environment, `NATS_USER` with `NATS_PASSWORD`, or `NATS_TOKEN`
/// (never on the command line, where `ps` shows them).
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Auth {
    /// Log in with this NATS credentials file (.creds: a user JWT and its
    /// NKey seed, as `nsc` writes them). A user and password can come from
    /// NATS_USER and NATS_PASSWORD, a token from NATS_TOKEN.
    #[arg(long, value_name = "FILE", conflicts_with = "nkey", value_parser = readable_file)]
    pub(crate) creds: Option<PathBuf>,
    /// Log in with the NKey seed (`SU…`) in this file: the server's
    /// challenge is signed with it, the seed never leaves the machine.
    #[arg(long, value_name = "FILE", value_parser = readable_file)]
    pub(crate) nkey: Option<PathBuf>,
    /// Trust servers whose certificate is signed by this CA (PEM) instead of
    /// the system's CAs; implies TLS.
    #[arg(long, value_name = "FILE", value_parser = readable_file)]
    pub(crate) tls_ca: Option<PathBuf>,
    /// Present this client certificate (PEM) to the server; implies TLS
    /// (with --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key", value_parser = readable_file)]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert", value_parser = readable_file)]
    pub(crate) tls_key: Option<PathBuf>,
}

/// The environment variables that hold a user and password or a token
/// (the names the `nats` CLI reads).
pub(crate) const ENV_USER: &str = "NATS_USER";
/// See [`ENV_USER`].
pub(crate) const ENV_PASSWORD: &str = "NATS_PASSWORD";
/// See [`ENV_USER`].
pub(crate) const ENV_TOKEN: &str = "NATS_TOKEN";

/// clap's check that a file named by an option can be read, so that a
/// typo is an error at once (exit 2), not a TLS failure later.
fn readable_file(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    std::fs::File::open(&path)
        .map(|_| path)
        .map_err(|e| format!("cannot read `{text}`: {e}"))
}

impl Auth {
    fn uses_tls(&self) -> bool {
        self.tls_ca.is_some() || self.tls_cert.is_some()
    }

    /// The login from the environment, if any.
    fn from_env() -> Result<Option<Login>, Failure> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        match (var(ENV_USER), var(ENV_PASSWORD), var(ENV_TOKEN)) {
            (None, None, None) => Ok(None),
            (Some(user), Some(password), None) => Ok(Some(Login::UserPassword(user, password))),
            (None, None, Some(token)) => Ok(Some(Login::Token(token))),
            (Some(_), None, None) => Err(Failure::Usage(format!(
                "{ENV_USER} is set but {ENV_PASSWORD} is not: set both, or neither"
            ))),
            (None, Some(_), None) => Err(Failure::Usage(format!(
                "{ENV_PASSWORD} is set but {ENV_USER} is not: set both, or neither"
            ))),
            (_, _, Some(_)) => Err(Failure::Usage(format!(
                "{ENV_TOKEN} and {ENV_USER}/{ENV_PASSWORD} are both set: set one way to log in"
            ))),
        }
    }

    /// Applies the credentials and TLS settings: `--creds` or `--nkey`
    /// first, else a user/password or token in the URL, else the
    /// environment's. Errors never hold a secret.
    async fn apply(
        &self,
        mut options: ConnectOptions,
        url: &Servers,
    ) -> Result<ConnectOptions, Failure> {
        if let Some(path) = &self.creds {
            options = options.credentials_file(path).await.map_err(|e| {
                Failure::Bad(format!(
                    "cannot use the credentials file {}: {}",
                    path.display(),
                    e.kind()
                ))
            })?;
        } else if let Some(path) = &self.nkey {
            let seed = std::fs::read_to_string(path)
                .map_err(|e| Failure::Bad(format!("cannot read {}: {e}", path.display())))?;
            // A seed file may hold comments (as nsc writes them): the seed
            // is the line that starts with `SU`.
            let seed = seed
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("SU"))
                .ok_or_else(|| {
                    Failure::Bad(format!(
                        "{}: no user NKey seed (a line starting with SU) in the file",
                        path.display()
                    ))
                })?;
            options = options.nkey(seed.to_owned());
        } else {
            let login = match url.credentials() {
                Some(login) => Some(login),
                None => Auth::from_env()?,
            };
            // async-nats does not read credentials from URLs; they are
            // passed on here, as other NATS clients do: `user:password@` or
            // `token@`.
            options = match login {
                Some(Login::UserPassword(user, password)) => {
                    options.user_and_password(user, password)
                }
                Some(Login::Token(token)) => options.token(token),
                None => options,
            };
        }
        if let Some(ca) = &self.tls_ca {
            options = options.add_root_certificates(ca.clone());
        }
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            options = options.add_client_certificate(cert.clone(), key.clone());
        }
        if self.uses_tls() {
            options = options.require_tls(true);
        }
        Ok(options)
    }
}

/// The client's buffer of messages per subscription, in messages (async-nats
/// counts messages, not bytes). mframe takes each message out as it comes,
/// without decoding it, and bounds what waits for stdout in bytes
/// (`--max-pending`); this buffer only fills if mframe itself cannot run.
const SUBSCRIPTION_CAPACITY: usize = 4096;

/// Connects to `url` under `connection.prefix`, within the connect timeout
/// per server: an unreachable or silent server is an error, never a hang.
/// Credentials from the URL or the environment only (`view`).
pub(crate) async fn connect(
    url: &Servers,
    connection: &Connection,
    command: &str,
) -> Result<Client, Failure> {
    connect_with(url, connection, &Auth::default(), command).await
}

/// [`connect`] with `--creds`, `--nkey` and TLS options.
pub(crate) async fn connect_with(
    url: &Servers,
    connection: &Connection,
    auth: &Auth,
    command: &str,
) -> Result<Client, Failure> {
    let timeout = connection.connect_timeout;
    let options = ConnectOptions::new()
        .name(format!("mframe {command}"))
        .connection_timeout(timeout)
        .subscription_capacity(SUBSCRIPTION_CAPACITY);
    let options = auth.apply(options, url).await?;
    // async-nats bounds each TCP connect by the timeout, but not the name
    // lookup nor a server that accepts and never says hello: the whole
    // first connection is bounded here.
    let bound = timeout * u32::try_from(url.count()).unwrap_or(u32::MAX);
    let connecting = Client::connect_with(options, url.addrs.clone(), &connection.prefix);
    match tokio::time::timeout(bound, connecting).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(Failure::Bad(format!(
            "cannot connect to {url}: {}",
            explain_connect(&e)
        ))),
        Err(_) => Err(Failure::Bad(format!(
            "cannot connect to {url}: no NATS server answered within {} s (--connect-timeout)",
            timeout.as_secs_f64()
        ))),
    }
}

/// The library's connect error, with its causes (async-nats' own message
/// stops at the kind: "IO error"), and what to do about a refused login.
fn explain_connect(e: &messageframe_nats::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e).and_then(std::error::Error::source);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    if text.contains("authorization violation") {
        text.push_str(&format!(
            " (check the user and password or token: in the URL, or in {ENV_USER}/{ENV_PASSWORD} \
             or {ENV_TOKEN}; or --creds / --nkey)"
        ));
    }
    text
}

/// Prints the client's connection events on stderr (disconnections,
/// reconnections and their cause, rate-limited: [`EventLog`]) while the
/// returned guard lives: for the commands that have no subscription to
/// carry them. The guard goes before the client, so that the command's own
/// closing of the connection is not reported.
pub(crate) fn print_events(client: &Client, url: &Servers) -> EventPrinter {
    let mut events = client.events();
    let mut log = EventLog::new(url);
    EventPrinter(tokio::spawn(async move {
        while let Some(event) = events.next().await {
            log.log(&event);
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
            Some(Login::UserPassword("us@er".into(), "p%ss:".into()))
        );
        let token = parse_servers("tls://s3cret@host").unwrap();
        assert_eq!(token.credentials(), Some(Login::Token("s3cret".into())));
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
