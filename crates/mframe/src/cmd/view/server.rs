//! The page's HTTP server (axum, on 127.0.0.1 only).
//!
//! - `GET /`: the page; `GET /assets/...`: its script and style and the
//!   vendored uPlot (assets/view/, embedded in the binary: no CDN, nothing
//!   to install next to it);
//! - `GET /ws`: a WebSocket. The server pushes updates, at most one per
//!   [`PUSH_INTERVAL`] and only when something changed; the page sends
//!   `{"charts": [row ids]}` to say which rows it draws;
//! - `GET /api/attachment?id=N`: the bytes of an attachment last seen, when
//!   no larger than `--max-attachment`;
//! - `GET /api/state`: everything the page would get first, as JSON (for
//!   scripts and tests).
//!
//! The WebSocket and the API answer only requests whose `Host` names the
//! loopback interface and this server's port, and whose `Origin` (when the
//! browser sends one) is this page's own: the same host and port
//! ([`local`]). Every response carries a Content-Security-Policy (the
//! page's own scripts, styles and WebSocket only), `X-Content-Type-Options:
//! nosniff` and `X-Frame-Options: DENY` ([`guard`]).

use std::future::{Future, IntoFuture};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, Request, State as Shared};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::state::{Cursor, State};

/// The shortest time between two pushes to one page: at most 20 a second,
/// however many frames arrive.
pub(crate) const PUSH_INTERVAL: Duration = Duration::from_millis(50);

type Db = Arc<Mutex<State>>;

fn lock(state: &Db) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

const INDEX: &str = include_str!("../../../assets/view/index.html");
const APP_JS: &str = include_str!("../../../assets/view/app.js");
const VIEW_CSS: &str = include_str!("../../../assets/view/view.css");
const UPLOT_JS: &str = include_str!("../../../assets/view/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../../assets/view/uplot/uPlot.min.css");

/// The routes, for [`serve`] and the tests; `port` is the page's own.
pub(crate) fn router(state: Db, port: u16) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/assets/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/assets/view.css",
            get(|| async { asset("text/css; charset=utf-8", VIEW_CSS) }),
        )
        .route(
            "/assets/uPlot.iife.min.js",
            get(|| async { asset("text/javascript; charset=utf-8", UPLOT_JS) }),
        )
        .route(
            "/assets/uPlot.min.css",
            get(|| async { asset("text/css; charset=utf-8", UPLOT_CSS) }),
        )
        .route("/ws", get(websocket))
        .route("/api/attachment", get(attachment))
        .route("/api/state", get(snapshot))
        .with_state(state)
        .layer(middleware::from_fn(move |request, next| {
            guard(port, request, next)
        }))
}

/// Answers the WebSocket and the API only for this server's own pages, and
/// adds the security headers to every response.
async fn guard(port: u16, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let guarded = path == "/ws" || path.starts_with("/api/");
    let own = local(request.headers(), port);
    let mut response = if guarded && !own {
        forbidden()
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    // The page loads its script, styles and uPlot from /assets/ and talks
    // to /ws: nothing else, from nowhere else. `'self'` covers ws: in
    // current browsers; the WebSocket's URL is also named for older ones.
    let csp = format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self' ws://127.0.0.1:{port} ws://localhost:{port}; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    if let Ok(csp) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// Serves the page until `shutdown` completes. Not a graceful shutdown:
/// an open page's WebSocket never ends by itself, and would keep the
/// viewer running; its connection is dropped with the runtime.
pub(crate) async fn serve(
    listener: TcpListener,
    state: Db,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let port = listener.local_addr()?.port();
    tokio::select! {
        served = axum::serve(listener, router(state, port)).into_future() => served,
        () = shutdown => Ok(()),
    }
}

/// Whether a request comes from a page of this server: its `Host` is a
/// loopback name with this server's `port`, and its `Origin`, when there is
/// one, is `http://` and that same host and port. Another web site open in
/// the same browser could otherwise read the telemetry: a WebSocket is not
/// bound by the same-origin policy, a page served by another program on
/// another local port is another origin, and a DNS name rebound to
/// 127.0.0.1 passes the browser's checks, but not this one.
fn local(headers: &HeaderMap, port: u16) -> bool {
    fn own(host_port: &str, port: u16) -> bool {
        let Some((host, p)) = host_port.rsplit_once(':') else {
            return false;
        };
        matches!(host, "127.0.0.1" | "localhost" | "[::1]") && p.parse::<u16>() == Ok(port)
    }
    let text = |name| headers.get(name).map(|v| v.to_str().unwrap_or(""));
    let Some(host) = text(header::HOST).filter(|h| own(h, port)) else {
        return false;
    };
    match text(header::ORIGIN) {
        None => true,
        Some(origin) => origin.strip_prefix("http://") == Some(host),
    }
}

fn forbidden() -> Response {
    (
        StatusCode::FORBIDDEN,
        "mframe view answers pages it served itself (Host must be 127.0.0.1 or localhost with this port, and Origin the same)",
    )
        .into_response()
}

async fn snapshot(Shared(state): Shared<Db>) -> Response {
    let mut cursor = Cursor::default();
    let mut state = lock(&state);
    state.tick();
    let body = state.update(&mut cursor).unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[derive(Deserialize)]
struct AttachmentQuery {
    id: usize,
}

async fn attachment(Shared(state): Shared<Db>, Query(q): Query<AttachmentQuery>) -> Response {
    let found = lock(&state).attachment(q.id);
    match found {
        Ok((_, data)) => {
            ([(header::CONTENT_TYPE, "application/octet-stream")], data).into_response()
        }
        Err(why) => (StatusCode::NOT_FOUND, why).into_response(),
    }
}

async fn websocket(ws: WebSocketUpgrade, Shared(state): Shared<Db>) -> Response {
    ws.on_upgrade(move |socket| client(socket, state))
}

/// One page: pushes from [`push`], chart requests into it.
async fn client(mut socket: WebSocket, state: Db) {
    let (out_tx, mut out_rx) = mpsc::channel::<String>(1);
    let (charts_tx, charts_rx) = mpsc::channel::<Vec<usize>>(4);
    let pusher = tokio::spawn(push(state, charts_rx, out_tx));
    loop {
        tokio::select! {
            update = out_rx.recv() => {
                let Some(update) = update else { break };
                if socket.send(Message::Text(update.into())).await.is_err() {
                    break;
                }
            }
            message = socket.recv() => match message {
                Some(Ok(Message::Text(text))) => {
                    if let Some(ids) = chart_request(&text) {
                        if charts_tx.send(ids).await.is_err() {
                            break;
                        }
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            },
        }
    }
    pusher.abort();
}

/// `{"charts": [ids]}` from the page.
fn chart_request(text: &str) -> Option<Vec<usize>> {
    #[derive(Deserialize)]
    struct Request {
        charts: Vec<usize>,
    }
    serde_json::from_str::<Request>(cut(text, 64 << 10))
        .ok()
        .map(|r| r.charts)
}

/// `text`, cut to at most `max` bytes at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Sends a page its updates: the first at once, then at most one per
/// [`PUSH_INTERVAL`], only when there is something new, and never faster
/// than the page takes them (`out` holds one; a slow page gets fewer,
/// larger updates, never a queue).
pub(crate) async fn push(
    state: Db,
    mut charts: mpsc::Receiver<Vec<usize>>,
    out: mpsc::Sender<String>,
) {
    let mut cursor = Cursor::default();
    let mut interval = tokio::time::interval(PUSH_INTERVAL);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        while let Ok(ids) = charts.try_recv() {
            cursor.charts(&ids);
        }
        let update = {
            let mut state = lock(&state);
            state.tick();
            state.update(&mut cursor)
        };
        if let Some(update) = update {
            if out.send(update).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::view::state::Limits;
    use messageframe::{Decoder, Frame, Header};

    fn frame(i: u64) -> Vec<u8> {
        let mut header = Header::new(1, 2, 7, 3);
        header.set_timestamp(1_000 + i);
        let mut f = Frame::new(header);
        f.add("d", "x", i as f64);
        f.add("d", "y", i as i64);
        f.encode().unwrap()
    }

    /// 10,000 frames a (virtual) second, for two seconds: the page gets at
    /// most one update per 50 ms, each with the latest values.
    #[tokio::test(start_paused = true)]
    async fn pushes_are_at_most_twenty_a_second_however_fast_frames_come() {
        let state: Db = Arc::new(Mutex::new(State::new(Limits::default())));
        let (charts_tx, charts_rx) = mpsc::channel(4);
        let (out_tx, mut out_rx) = mpsc::channel(1);
        charts_tx.send(vec![0]).await.unwrap();
        let pusher = tokio::spawn(push(state.clone(), charts_rx, out_tx));
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(update) = out_rx.recv().await {
                got.push((tokio::time::Instant::now(), update));
            }
            got
        });
        let started = tokio::time::Instant::now();
        let decoder = Decoder::new();
        for i in 0..20_000u64 {
            let bytes = frame(i);
            state.lock().unwrap().ingest(&decoder.view(&bytes).unwrap());
            if i % 10 == 9 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let elapsed = started.elapsed();
        // The frames stop: at most one more update, then none.
        tokio::time::sleep(Duration::from_millis(500)).await;
        pusher.abort();
        let _ = pusher.await;
        let got = reader.await.unwrap();
        assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
        let seconds = (elapsed + Duration::from_millis(500)).as_secs_f64();
        assert!(
            got.len() as f64 <= seconds * 20.0 + 1.0,
            "{} updates in {seconds} s",
            got.len()
        );
        assert!(got.len() >= 30, "only {} updates in {seconds} s", got.len());
        for pair in got.windows(2) {
            assert!(pair[1].0 - pair[0].0 >= PUSH_INTERVAL);
        }
        let last: serde_json::Value = serde_json::from_str(&got.last().unwrap().1).unwrap();
        assert_eq!(last["frames"], 20_000);
        let points = last["series"]["0"]["v"].as_array().unwrap();
        assert_eq!(points.last().unwrap(), 19_999.0);
    }

    #[test]
    fn only_pages_of_this_server_are_answered() {
        let headers = |pairs: &[(header::HeaderName, &str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(name, value.parse().unwrap());
            }
            map
        };
        let own = |pairs: &[(header::HeaderName, &str)]| local(&headers(pairs), 8080);
        assert!(own(&[(header::HOST, "127.0.0.1:8080")]));
        assert!(own(&[(header::HOST, "localhost:8080")]));
        assert!(own(&[
            (header::HOST, "[::1]:8080"),
            (header::ORIGIN, "http://[::1]:8080")
        ]));
        assert!(own(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "http://127.0.0.1:8080")
        ]));
        assert!(!own(&[]), "no Host");
        assert!(!own(&[(header::HOST, "localhost")]), "no port");
        assert!(!own(&[(header::HOST, "127.0.0.1:8081")]), "another port");
        assert!(!own(&[(header::HOST, "evil.example:8080")]));
        assert!(!own(&[(header::HOST, "127.0.0.1.evil.example:8080")]));
        assert!(!own(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "http://evil.example")
        ]));
        // A page another local program serves, on another port.
        assert!(!own(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "http://127.0.0.1:3000")
        ]));
        // Another loopback name for the same port is another origin.
        assert!(!own(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "http://localhost:8080")
        ]));
        assert!(!own(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "https://127.0.0.1:8080")
        ]));
        assert!(!own(&[
            (header::HOST, "127.0.0.1:8080"),
            (header::ORIGIN, "null")
        ]));
    }

    #[test]
    fn text_is_cut_at_a_character_boundary() {
        // 64 KiB of two-byte characters, plus one: the 65,536th byte is
        // inside a character.
        let text = format!("x{}", "é".repeat(32 << 10));
        let cut = cut(&text, 64 << 10);
        assert_eq!(cut.len(), (64 << 10) - 1);
        assert!(text.starts_with(cut));
        assert_eq!(chart_request(&text), None, "no panic, not a request");
        assert_eq!(super::cut("abc", 10), "abc");
    }

    #[test]
    fn chart_requests_are_read_and_bounded() {
        assert_eq!(chart_request(r#"{"charts":[1,5]}"#), Some(vec![1, 5]));
        assert_eq!(chart_request("nonsense"), None);
        assert_eq!(chart_request(r#"{"charts":[-1]}"#), None);
    }
}
