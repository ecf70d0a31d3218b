//! `mframe view SOURCE [--port P]`: a live web page of every parameter.
//!
//! SOURCE is a TCP address to accept producers on (as `listen`), a NATS
//! server (`nats://HOST:PORT`, with `--prefix` and the header filters as
//! `sub`), or a file or pipe of frames (`-` for stdin) replayed by header
//! timestamp at `--speed`. The page is served on 127.0.0.1 only; its URL is
//! the one line on stdout. Nothing is opened by itself.
//!
//! - [`state`]: what is known, bounded by counts fixed at start;
//! - [`source`]: the three inputs, each feeding the state; bad input is an
//!   error line on stderr and a row on the page, never the end;
//! - [`server`]: the page, its assets (embedded), the WebSocket pushes
//!   (at most 20 a second per page) and the attachment bytes.

pub(crate) mod server;
pub(crate) mod source;
pub(crate) mod state;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use clap::Args;

use super::nats::{self, Connection, FilterArgs};
use crate::failure::{status, Failure};
use crate::net::ServerArgs;
use state::{Limits, State};

#[derive(Args, Debug)]
pub(crate) struct ViewArgs {
    /// Where frames come from: ADDR to accept TCP producers on (e.g.
    /// 127.0.0.1:7000), nats://HOST:PORT to subscribe under --prefix, or a
    /// FILE (a pipe too; `-`: stdin) replayed by header timestamp.
    #[arg(value_name = "SOURCE")]
    input: String,
    /// Port of the page on 127.0.0.1 (0: any free port; the URL is printed).
    #[arg(long, value_name = "PORT", default_value = "0")]
    port: u16,
    /// File replay speed: 1 keeps the spacing of the header timestamps, 2
    /// plays twice as fast, 0 as fast as the file reads.
    #[arg(long, value_name = "X", default_value = "1", value_parser = parse_speed)]
    speed: f64,
    /// Rows (source, device, parameter) tracked at most; values of further
    /// keys are counted as dropped.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_keys)]
    max_keys: usize,
    /// Numeric rows that keep points for a chart; further ones are listed,
    /// not charted.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_charted)]
    max_charted: usize,
    /// Points kept per charted row (one per millisecond of header time).
    #[arg(long, value_name = "N", default_value_t = Limits::default().points,
          value_parser = parse_points)]
    points: usize,
    /// Largest attachment (bytes) the page can fetch; larger ones are listed.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_attachment)]
    max_attachment: usize,
    #[command(flatten)]
    connection: Connection,
    /// The TCP input's limits and TLS (a TCP SOURCE only).
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    filter: FilterArgs,
}

/// `--speed`.
fn parse_speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!(
            "`{text}` is not a speed (a number >= 0; 0: as fast as possible)"
        )),
    }
}

/// `--points`: at least 2 (a line), at most a million.
fn parse_points(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (2..=1_000_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{text}` is not a number of points from 2 to 1000000"
        )),
    }
}

/// Which input SOURCE names.
#[derive(Debug)]
pub(crate) enum Origin {
    Tcp(String),
    Nats(nats::Servers),
    File(Option<PathBuf>),
}

impl Origin {
    /// A URL is NATS; an existing path (a pipe too) or `-` is a file; an
    /// address with a port is TCP; anything else is a file that does not
    /// exist (which says so when opened).
    pub(crate) fn parse(source: &str) -> Result<Origin, Failure> {
        if source.starts_with("nats://") || source.starts_with("tls://") {
            return nats::parse_servers(source)
                .map(Origin::Nats)
                .map_err(Failure::Usage);
        }
        if source == "-" {
            return Ok(Origin::File(None));
        }
        if std::path::Path::new(source).exists() {
            return Ok(Origin::File(Some(PathBuf::from(source))));
        }
        let is_addr = source.parse::<SocketAddr>().is_ok()
            || source
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        Ok(if is_addr {
            Origin::Tcp(source.to_owned())
        } else {
            Origin::File(Some(PathBuf::from(source)))
        })
    }
}

pub(crate) fn run(args: &ViewArgs) -> Result<(), Failure> {
    let origin = Origin::parse(&args.input)?;
    let limits = Limits {
        max_keys: args.max_keys,
        max_charted: args.max_charted,
        points: args.points,
        max_attachment: args.max_attachment,
    };
    let state = Arc::new(Mutex::new(State::new(limits)));
    let rt = super::runtime()?;
    let result = rt.block_on(async {
        // The page first: its URL is printed before any input is waited for.
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
            .await
            .map_err(|e| {
                Failure::Bad(format!("cannot serve the page on port {}: {e}", args.port))
            })?;
        let local = listener
            .local_addr()
            .map_err(|e| Failure::Bad(format!("cannot serve the page: {e}")))?;
        let input = source::start(origin, args, state.clone()).await?;
        let mut stdout = std::io::stdout();
        writeln!(stdout, "http://{local}/")?;
        stdout.flush()?;
        status(format_args!("view: serving the page on http://{local}/"));
        let served = server::serve(listener, state, super::shutdown_signal()).await;
        input.stop();
        served.map_err(|e| Failure::Bad(format!("the page's server failed: {e}")))
    });
    // The pages' connections and the inputs' tasks end here, at once.
    rt.shutdown_background();
    status("view: stopped");
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_told_apart() {
        assert!(matches!(
            Origin::parse("nats://127.0.0.1:4222"),
            Ok(Origin::Nats(_))
        ));
        assert!(matches!(Origin::parse("-").unwrap(), Origin::File(None)));
        assert!(
            matches!(Origin::parse("127.0.0.1:7000").unwrap(), Origin::Tcp(t) if t == "127.0.0.1:7000")
        );
        assert!(
            matches!(Origin::parse("localhost:0").unwrap(), Origin::Tcp(t) if t == "localhost:0")
        );
        assert!(
            matches!(Origin::parse("[::1]:7000").unwrap(), Origin::Tcp(t) if t == "[::1]:7000")
        );
        assert!(
            matches!(Origin::parse("frames.mfb").unwrap(), Origin::File(Some(p)) if p == std::path::Path::new("frames.mfb"))
        );
        assert!(matches!(Origin::parse("nats://"), Err(Failure::Usage(_))));
        // An existing file wins over the address reading of its name.
        let dir = std::env::temp_dir().join(format!("mframe-view-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let odd = dir.join("host:1");
        std::fs::write(&odd, b"").unwrap();
        let name = odd.to_str().unwrap();
        assert!(matches!(Origin::parse(name).unwrap(), Origin::File(Some(p)) if p == odd));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn speeds_are_checked() {
        assert_eq!(parse_speed("2.5"), Ok(2.5));
        assert_eq!(parse_speed("0"), Ok(0.0));
        assert!(parse_speed("-1").is_err());
        assert!(parse_speed("inf").is_err());
        assert!(parse_speed("fast").is_err());
    }
}
