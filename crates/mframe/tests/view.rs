//! `mframe view` in a real browser: Debian's chromium, headless, driven over
//! CDP (chromiumoxide), against a real `mframe view` process fed over TCP
//! on loopback. One browser and one viewer for every check (a launch costs
//! seconds); each check is a step of the one test, bounded in time.
//!
//! The page is read through its DOM (the table's cells, the error rows)
//! and through `window.mframeView`, the script's own state (the charts'
//! uPlot data, the count of updates received).

mod support;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::{Browser, Page};
use futures_util::StreamExt;
use messageframe::{Frame, Header, KeyDisplay};
use messageframe_testkit::Chromium;
use serde_json::Value;
use support::Proc;

/// The longest one step may wait for the page.
const STEP: Duration = Duration::from_secs(30);

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../messageframe/tests/data/interop")
}

/// Every golden frame (bytes and description), sorted by name.
fn golden() -> Vec<(Vec<u8>, Value)> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(interop_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mfb"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 11, "every interop frame is found");
    names
        .iter()
        .map(|p| {
            let json = std::fs::read_to_string(p.with_extension("json")).unwrap();
            (
                std::fs::read(p).unwrap(),
                serde_json::from_str(&json).unwrap(),
            )
        })
        .collect()
}

/// What a row of the table must show: its type and its value.
#[derive(Debug, Clone, PartialEq)]
enum Expected {
    Int(i64),
    Double(f64),
    String(String),
    Bool(bool),
}

/// The rows the golden frames make, by `source/device/param`; a later
/// frame's value replaces an earlier one's.
fn expected_rows(frames: &[(Vec<u8>, Value)]) -> BTreeMap<String, Expected> {
    let mut rows = BTreeMap::new();
    for (_, json) in frames {
        let source = json["header"]["source"].as_u64().unwrap();
        for p in json["parameters"].as_array().unwrap() {
            let key = format!(
                "{source}/{}/{}",
                p["device"].as_str().unwrap(),
                p["param"].as_str().unwrap()
            );
            let v = &p["value"];
            let expected = match p["type"].as_str().unwrap() {
                "int64" => Expected::Int(v.as_i64().unwrap()),
                "double" => Expected::Double(match v.as_str() {
                    Some("NaN") => f64::NAN,
                    Some("Infinity") => f64::INFINITY,
                    Some("-Infinity") => f64::NEG_INFINITY,
                    _ => v.as_f64().unwrap(),
                }),
                "string" => {
                    // The viewer keeps the first 256 bytes of a string.
                    let s = v.as_str().unwrap();
                    let mut end = s.len().min(256);
                    while !s.is_char_boundary(end) {
                        end -= 1;
                    }
                    Expected::String(s[..end].to_owned())
                }
                "bool" => Expected::Bool(v.as_bool().unwrap()),
                other => panic!("type {other}"),
            };
            rows.insert(key, expected);
        }
    }
    rows
}

/// Whether a cell shows `expected`, with the type name the table gives it.
fn shows(kind: &str, value: &str, expected: &Expected) -> bool {
    match expected {
        Expected::Int(i) => kind == "int" && value.parse::<i64>() == Ok(*i),
        Expected::Double(d) => {
            kind == "double"
                && match value {
                    "NaN" => d.is_nan(),
                    "Infinity" => *d == f64::INFINITY,
                    "-Infinity" => *d == f64::NEG_INFINITY,
                    // The page prints JavaScript's shortest round trip.
                    text => text.parse::<f64>() == Ok(*d),
                }
        }
        Expected::String(s) => kind == "string" && value == s,
        Expected::Bool(b) => kind == "bool" && value == b.to_string(),
    }
}

async fn eval(page: &Page, js: &str) -> Value {
    page.evaluate(js)
        .await
        .unwrap_or_else(|e| panic!("evaluating {js}: {e}"))
        .into_value()
        .unwrap_or(Value::Null)
}

/// Evaluates `js` until it gives something other than null or false;
/// panics with `what` after [`STEP`].
async fn until(page: &Page, what: &str, js: &str) -> Value {
    let deadline = Instant::now() + STEP;
    loop {
        let v = eval(page, js).await;
        if !matches!(v, Value::Null | Value::Bool(false)) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "the page never showed {what} ({js})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The table rows in the DOM: key -> (type cell, value cell).
async fn table(page: &Page) -> BTreeMap<String, (String, String)> {
    let rows = eval(
        page,
        r#"[...document.querySelectorAll('#rows tbody tr')].map(tr =>
             [tr.dataset.key, tr.querySelector('td.kind').textContent, tr.querySelector('td.value').textContent])"#,
    )
    .await;
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |i: usize| r[i].as_str().unwrap().to_owned();
            (s(0), (s(1), s(2)))
        })
        .collect()
}

/// Sets a filter control and lets the page redraw its table.
async fn filter(page: &Page, id: &str, value: &str) {
    let event = if id == "filter-text" {
        "input"
    } else {
        "change"
    };
    eval(
        page,
        &format!(
            "(() => {{ const el = document.getElementById('{id}'); el.value = {}; \
             el.dispatchEvent(new Event('{event}')); return true; }})()",
            serde_json::to_string(value).unwrap()
        ),
    )
    .await;
}

fn live_frame(seq: u64, x: f64) -> Vec<u8> {
    let mut header = Header::new(5, 9, 77, 1);
    header.set_timestamp(1_800_000_000_000 + seq * 10);
    header.set_counter(seq);
    let mut f = Frame::new(header);
    f.add("live", "x", x);
    f.add("live", "y", (seq * 2) as i64);
    f.add("live", "label", "running");
    f.encode().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_charts_filters_and_errors_in_a_real_browser() {
    let mut viewer = Proc::spawn(&["view", "127.0.0.1:0", "--port", "0", "--max-charted", "600"]);
    let frames_addr = viewer.listening_on();
    let url = viewer.stdout_line(support::WAIT).expect("the page's URL");
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let chromium = Chromium::start();
    let (mut browser, mut handler) = Browser::connect(chromium.ws_url())
        .await
        .expect("CDP connects");
    // chromiumoxide may not know every event a newer chromium sends: those
    // errors concern nobody here.
    let events = tokio::spawn(async move { while handler.next().await.is_some() {} });
    let page = browser
        .new_page(url.as_str())
        .await
        .expect("the page opens");
    until(
        &page,
        "a live connection",
        "document.getElementById('conn').textContent === 'live'",
    )
    .await;

    // 1. The golden frames, over one TCP connection: every parameter is
    // listed with its value and type.
    let frames = golden();
    let expected = expected_rows(&frames);
    let mut producer = TcpStream::connect(&frames_addr).unwrap();
    for (bytes, _) in &frames {
        producer.write_all(bytes).unwrap();
    }
    producer.flush().unwrap();
    until(
        &page,
        "every golden row",
        &format!("window.mframeView.rows.size === {}", expected.len()),
    )
    .await;
    // More than the table shows at once (500): one source at a time, which
    // is the source filter at work too.
    let mut sources: Vec<&str> = expected
        .keys()
        .map(|k| k.split('/').next().unwrap())
        .collect();
    sources.dedup();
    sources.sort_unstable();
    sources.dedup();
    let mut seen = 0;
    for source in &sources {
        filter(&page, "filter-source", source).await;
        let shown = table(&page).await;
        let wanted: Vec<&String> = expected
            .keys()
            .filter(|k| k.starts_with(&format!("{source}/")))
            .collect();
        assert_eq!(shown.len(), wanted.len(), "rows of source {source}");
        for key in wanted {
            let (kind, value) = shown.get(key).unwrap_or_else(|| panic!("no row {key}"));
            assert!(
                shows(kind, value, &expected[key]),
                "{key}: shows {kind} {value:?}, expected {:?}",
                expected[key]
            );
            seen += 1;
        }
    }
    assert_eq!(seen, expected.len());
    filter(&page, "filter-source", "").await;

    // 1b. The first look, without a click: the page charts up to four of
    // the numeric rows by itself, one chart each, each legend showing the
    // row's latest value (not "--" until hovered); the address stays bare
    // (nothing chosen yet) and the header counts the rows on charts.
    let numeric = expected
        .values()
        .filter(|e| matches!(e, Expected::Int(_) | Expected::Double(_)))
        .count();
    let auto = until(
        &page,
        "the default charts",
        "(() => { const v = window.mframeView; \
           return v.auto && v.charts.length > 0 && v.charts.every(c => c.plot) \
             ? v.charts.map(c => [c.ids.length, c.plot.series.length]) : null; })()",
    )
    .await;
    assert_eq!(
        auto.as_array().unwrap().len(),
        numeric.min(4),
        "up to four charts: {auto}"
    );
    for chart in auto.as_array().unwrap() {
        assert_eq!(chart, &serde_json::json!([1, 2]), "one row per chart");
    }
    let legends = eval(&page, &legend_values("")).await;
    for (n, value) in legends.as_array().unwrap().iter().enumerate() {
        let value = value.as_str().unwrap();
        assert!(
            value != "--" && !value.is_empty(),
            "chart {n}'s legend: {value:?}"
        );
    }
    assert_eq!(eval(&page, "location.hash").await, "");
    let totals = eval(&page, "document.getElementById('totals').textContent").await;
    assert!(
        totals
            .as_str()
            .unwrap()
            .contains(&format!(" · {} on charts · ", numeric.min(4))),
        "{totals}"
    );

    // 1c. Keys show in the one human form (`KeyDisplay`, as in `dump
    // --pretty` and error messages): a part with a dot or a control
    // character is quoted.
    let mut odd = Frame::new(Header::from_fields(1, 0, 88, 1234, 0, 1234, 1, 0));
    odd.add("items.10", "price", "text");
    odd.add("core", "a\u{1f}b", "text");
    producer.write_all(&odd.encode().unwrap()).unwrap();
    until(
        &page,
        "source 88 among the choices",
        "[...document.getElementById('filter-source').options].some(o => o.value === '88')",
    )
    .await;
    filter(&page, "filter-source", "88").await;
    let keys = until(
        &page,
        "the rows of source 88",
        "(() => { const cells = [...document.querySelectorAll('#rows tbody td.key')]; \
           return cells.length === 2 ? cells.map(td => td.textContent) : null; })()",
    )
    .await;
    assert_eq!(
        keys,
        serde_json::json!([
            KeyDisplay::new("items.10", "price").to_string(),
            KeyDisplay::new("core", "a\u{1f}b").to_string()
        ])
    );
    assert_eq!(keys[1], r#"core."a\u001fb""#);
    filter(&page, "filter-source", "").await;

    // 2. Filters: the key text, the target, the message type, combined.
    filter(&page, "filter-text", "SDR_2").await;
    let shown: Vec<String> = table(&page).await.into_keys().collect();
    assert_eq!(shown, ["10/sdr_2/center_freq", "10/sdr_2/rx_gain"]);
    filter(&page, "filter-text", "").await;
    filter(&page, "filter-target", "99").await;
    let shown: Vec<String> = table(&page).await.into_keys().collect();
    assert_eq!(
        shown,
        ["50/device_core/fw_version", "50/sensor_alpha/voltage"]
    );
    filter(&page, "filter-target", "").await;
    filter(&page, "filter-type", "2").await;
    assert_eq!(table(&page).await.len(), 6, "the sdr frame's parameters");
    filter(&page, "filter-text", "gain").await;
    let shown: Vec<String> = table(&page).await.into_keys().collect();
    assert_eq!(shown, ["10/sdr_1/tx_gain", "10/sdr_2/rx_gain"]);
    filter(&page, "filter-type", "").await;
    filter(&page, "filter-text", "live.").await;

    // 3. Charts. Live frames: the most active rows (live x and y) take
    // their place among the default charts by themselves, with their
    // latest values in the legends.
    let mut live = TcpStream::connect(&frames_addr).unwrap();
    let mut seq = 0u64;
    let deadline = Instant::now() + STEP;
    loop {
        for _ in 0..4 {
            live.write_all(&live_frame(seq, seq as f64 * 0.5)).unwrap();
            seq += 1;
        }
        let shown = eval(
            &page,
            "(() => { const v = window.mframeView; if (!v.auto) return null; \
               const shown = v.charts.map(c => c.ids[0]); \
               return shown.includes(v.idOfKey.get('77/live/x')) \
                 && shown.includes(v.idOfKey.get('77/live/y')) && v.charts.every(c => c.plot); })()",
        )
        .await;
        if shown == Value::Bool(true) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the live rows were never charted by themselves"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let latest = |param: &str| {
        format!(
            "window.mframeView.rows.get(window.mframeView.idOfKey.get('77/live/{param}')).value"
        )
    };
    until(
        &page,
        "the auto legends at the latest values",
        &format!(
            "(() => {{ const v = window.mframeView; const legends = {}; \
               const of = (p) => legends[v.charts.findIndex(c => c.ids[0] === v.idOfKey.get('77/live/' + p))]; \
               return of('x') === String({}) && of('y') === String({}); }})()",
            legend_values(""),
            latest("x"),
            latest("y"),
        ),
    )
    .await;
    until(
        &page,
        "the live rows",
        "document.querySelectorAll('#rows tbody tr').length === 3",
    )
    .await;
    let first_look =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("../view-screenshot-first-look.png");
    page.save_screenshot(
        ScreenshotParams::builder().full_page(true).build(),
        &first_look,
    )
    .await
    .expect("a screenshot");

    // The user's own charts: click x, then y, into one chart (the default
    // charts go); the chart grows as frames come, with the values sent.
    let click = |key: &str| {
        format!("(() => {{ const tr = document.querySelector('#rows tr[data-key=\"{key}\"]'); if (!tr) return false; tr.click(); return true; }})()")
    };
    assert_eq!(eval(&page, &click("77/live/x")).await, true);
    assert_eq!(eval(&page, &click("77/live/y")).await, true);
    assert_eq!(
        eval(&page, &click("77/live/label")).await,
        true,
        "a string row is listed"
    );
    assert_eq!(eval(&page, "window.mframeView.charts.length").await, 1);
    assert_eq!(eval(&page, "window.mframeView.auto").await, false);
    assert_eq!(
        eval(&page, "window.mframeView.charts[0].ids.length").await,
        2,
        "a string is not charted"
    );
    until(
        &page,
        "every point of x and y so far",
        &format!("(() => {{ const p = window.mframeView.charts[0].plot; return p && p.data[0].length === {seq} && p.series.length === 3; }})()"),
    )
    .await;
    let end = seq + 30;
    for s in seq..end {
        live.write_all(&live_frame(s, s as f64 * 0.5)).unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    seq = end;
    let last = until(
        &page,
        "the chart updated with the new frames",
        &format!(
            "(() => {{ const d = window.mframeView.charts[0].plot.data; const n = d[0].length; \
               return n === {seq} ? [d[0][n - 1], d[1][n - 1], d[2][n - 1]] : null; }})()"
        ),
    )
    .await;
    let t = (1_800_000_000_000 + (seq - 1) * 10) as f64 / 1000.0;
    assert_eq!(
        last,
        serde_json::json!([t, (seq - 1) as f64 * 0.5, (seq - 1) * 2])
    );
    // The legends show the latest values without a hover.
    until(
        &page,
        "the legends at the latest values",
        &format!(
            "JSON.stringify({}) === JSON.stringify([String({}), String({})])",
            legend_values("0"),
            (seq - 1) as f64 * 0.5,
            (seq - 1) * 2
        ),
    )
    .await;
    let time = eval(
        &page,
        "window.mframeView.charts[0].plot.root.querySelector('.u-legend .u-series .u-value').textContent",
    )
    .await;
    assert!(
        time.as_str()
            .is_some_and(|t| t.ends_with(&format!(".{:03}", (seq - 1) * 10 % 1000))),
        "the header time legend shows the latest point's time: {time}"
    );
    let totals = eval(&page, "document.getElementById('totals').textContent").await;
    assert!(
        totals.as_str().unwrap().contains(" · 2 on charts · "),
        "{totals}"
    );

    // The charts are in the address: a reload shows the same ones.
    assert_eq!(
        eval(&page, "location.hash").await,
        "#charts=77/live/x,77/live/y"
    );
    let ids = eval(&page, "window.mframeView.charts[0].ids").await;
    eval(&page, "window.beforeReload = true").await;
    page.reload().await.expect("the page reloads");
    until(
        &page,
        "the reloaded page, live",
        "!window.beforeReload && document.getElementById('conn').textContent === 'live'",
    )
    .await;
    let restored = until(
        &page,
        "the charts restored from the address",
        &format!(
            "(() => {{ const v = window.mframeView; const c = v.charts[0]; \
               return !v.auto && v.charts.length === 1 && c.plot && c.plot.data[0].length === {seq} \
                 ? c.ids : null; }})()"
        ),
    )
    .await;
    assert_eq!(restored, ids);
    filter(&page, "filter-text", "live.").await;

    // 4. A malformed frame on another connection: an error row naming the
    // connection; the viewer goes on.
    let mut bad = TcpStream::connect(&frames_addr).unwrap();
    let bad_peer = bad.local_addr().unwrap().to_string();
    // A frame whose header is a string: the framing fails at byte 1.
    bad.write_all(&[0x93, 0xa3, b'b', b'a', b'd', 0x80, 0x90])
        .unwrap();
    bad.flush().unwrap();
    let error = until(
        &page,
        "an error row",
        "(() => { const tr = document.querySelector('#errors tbody tr'); \
           return tr ? [tr.children[1].textContent, tr.children[2].textContent] : null; })()",
    )
    .await;
    assert_eq!(error[0], bad_peer.as_str());
    assert!(
        error[1]
            .as_str()
            .unwrap()
            .contains("frame 0 (starts at byte 0)"),
        "{error}"
    );
    assert_eq!(
        eval(&page, "document.getElementById('error-count').textContent").await,
        "1"
    );
    live.write_all(&live_frame(seq, 100.0)).unwrap();
    seq += 1;
    until(
        &page,
        "a frame after the error",
        &format!("window.mframeView.rows.get([...window.mframeView.rows.values()].find(r => r.param === 'x').id).count === {seq}"),
    )
    .await;

    // 5. Frames as fast as one connection takes them: the page keeps
    // getting updates, and at most 20 a second. The flood lasts at least a
    // second and until the page has handled 5 updates: on a loaded 2-core
    // machine (this test, the viewer and chromium share it) chromium may be
    // starved for a while, so the bound is STEP, not a time. The rate is
    // judged on the server's clock (`now` of the updates the page handled),
    // not on this process's: a starved page handles late updates in a burst.
    let pushed = "[window.mframeView.updates, window.mframeView.last.now]";
    let snapshot = |v: Value| (v[0].as_u64().unwrap(), v[1].as_u64().unwrap());
    let (updates_before, now_before) = snapshot(eval(&page, pushed).await);
    let started = Instant::now();
    let flood_start = seq;
    let mut last_check = started;
    let (updates, span_ms) = loop {
        let batch: Vec<u8> = (seq..seq + 200)
            .flat_map(|s| live_frame(s, s as f64))
            .collect();
        live.write_all(&batch).unwrap();
        seq += 200;
        if last_check.elapsed() < Duration::from_millis(100) {
            continue;
        }
        last_check = Instant::now();
        let (updates_now, now) = snapshot(eval(&page, pushed).await);
        let updates = updates_now - updates_before;
        if updates >= 5 && started.elapsed() >= Duration::from_secs(1) {
            break (updates, now - now_before);
        }
        assert!(
            started.elapsed() < STEP,
            "only {updates} page updates in {:?} while {} frames came",
            started.elapsed(),
            seq - flood_start
        );
    };
    // Pushes are 50 ms apart on the server's interval; a tick that fires up
    // to 5 ms late does not delay the next (tokio's rule), and `now` is
    // read under the state's lock: 40 ms is the smallest spacing allowed.
    assert!(
        updates <= span_ms / 40 + 1,
        "{updates} updates in {span_ms} ms of the server's clock"
    );
    let frames_sent = seq - flood_start;
    assert!(
        frames_sent >= 100 * updates,
        "{frames_sent} frames, {updates} updates: updates are not throttled"
    );
    // Every frame of the flood reaches the page's row in the end.
    until(
        &page,
        "the flood's last frame",
        &format!(
            "window.mframeView.rows.get([...window.mframeView.rows.values()].find(r => r.param === 'x').id).count === {}",
            seq
        ),
    )
    .await;

    // 6. The attachment of the sdr frame, drawn as a spectrum of f32 and as
    // a waveform of i16 samples (fetched from the server).
    filter(&page, "filter-text", "").await;
    let draw = |sample: &str, mode: &str| {
        format!(
            "(() => {{ const tr = document.querySelector('#attachments tr[data-name=\"raw_iq\"]'); \
               if (!tr) return false; tr.querySelector('select').value = '{sample}'; \
               tr.querySelector('button[data-mode=\"{mode}\"]').click(); return true; }})()"
        )
    };
    until(&page, "the attachment listed", &draw("i16", "wave")).await;
    until(
        &page,
        "the waveform",
        "document.getElementById('attachment-plot').dataset.drawn === 'raw_iq:i16:wave:2048'",
    )
    .await;
    assert_eq!(eval(&page, &draw("f32", "spectrum")).await, true);
    until(
        &page,
        "the spectrum",
        "document.getElementById('attachment-plot').dataset.drawn === 'raw_iq:f32:spectrum:512'",
    )
    .await;
    let size = eval(
        &page,
        "document.querySelector('#attachments tr[data-name=\"raw_iq\"]').children[2].textContent",
    )
    .await;
    assert_eq!(size, "4096");

    // 7. A screenshot, to look at.
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../view-screenshot.png");
    page.save_screenshot(ScreenshotParams::builder().full_page(true).build(), &shot)
        .await
        .expect("a screenshot");
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);

    // SIGTERM stops the viewer while the page is still connected.
    viewer.signal("TERM");
    assert!(viewer.wait().success(), "{}", viewer.stderr_text());
    browser.close().await.ok();
    events.abort();
    drop(chromium);
    let log = viewer.stderr_text();
    assert!(
        log.contains(&format!("view: {bad_peer}: frame 0 (starts at byte 0)")),
        "{log}"
    );
    // Connections are summarised, not a line each; the last line counts
    // them all: the golden producer, the live one, the bad one.
    assert!(
        !log.contains(": connected") && !log.contains("closed after"),
        "{log}"
    );
    assert!(log.contains("view: producers: +"), "{log}");
    assert!(
        log.contains(&format!(
            "view: producers: 3 connections and {} frames in all",
            frames.len() as u64 + 1 + seq
        )),
        "{log}"
    );
}

/// A script giving the legend values (the latest unless hovered) of the
/// rows of chart `chart` (`""`: of every chart, the first row of each).
fn legend_values(chart: &str) -> String {
    let values = "[...c.plot.root.querySelectorAll('.u-legend .u-series')].slice(1)\
                  .map(tr => tr.querySelector('.u-value').textContent)";
    if chart.is_empty() {
        format!("window.mframeView.charts.map(c => {values}[0])")
    } else {
        format!("(() => {{ const c = window.mframeView.charts[{chart}]; return {values}; }})()")
    }
}

/// `GET path` on the page's server: the status and the body.
fn http_get(url: &str, path: &str) -> (u16, Vec<u8>) {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    http_get_as(url, path, &format!("Host: {addr}\r\n"))
}

/// `GET path` with these headers (each line ending in CRLF).
fn http_get_as(url: &str, path: &str, headers: &str) -> (u16, Vec<u8>) {
    use std::io::Read;
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(support::WAIT)).unwrap();
    let close = if headers.contains("Connection:") {
        ""
    } else {
        "Connection: close\r\n"
    };
    write!(s, "GET {path} HTTP/1.1\r\n{headers}{close}\r\n").unwrap();
    // Read up to the end of the head, then the body by its length: a
    // refused upgrade keeps the connection open.
    let mut response = Vec::new();
    let mut chunk = [0u8; 8192];
    let end = loop {
        if let Some(end) = response.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the connection closed inside the response's head");
        response.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let length: Option<usize> = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap());
    let mut body = response[end + 4..].to_vec();
    match length {
        Some(length) => {
            while body.len() < length {
                let n = s.read(&mut chunk).unwrap();
                assert!(n > 0, "the connection closed inside the body");
                body.extend_from_slice(&chunk[..n]);
            }
        }
        None => {
            s.read_to_end(&mut body).unwrap();
        }
    }
    (status, body)
}

/// `/api/state` until `done` says so (bounded by [`STEP`]).
fn state_until(url: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + STEP;
    loop {
        let (status, body) = http_get(url, "/api/state");
        assert_eq!(status, 200);
        let state: Value = serde_json::from_slice(&body).unwrap();
        if done(&state) {
            return state;
        }
        assert!(Instant::now() < deadline, "never {what}: {state}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn row<'a>(state: &'a Value, device: &str, param: &str) -> &'a Value {
    state["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["device"] == device && r["param"] == param)
        .unwrap_or_else(|| panic!("no row {device}/{param} in {state}"))
}

#[test]
fn the_viewer_subscribes_to_nats_filters_and_shows_bad_payloads() {
    use messageframe_nats::async_nats;
    use messageframe_testkit::{NatsServer, ServerOptions};

    let server = NatsServer::start(ServerOptions::new());
    let nats_url = server.url();
    let viewer = Proc::spawn(&[
        "view", &nats_url, "--prefix", "v", "--source", "10", "--port", "0",
    ]);
    viewer.stderr_line("view: subscribed to `v.*.*.10`");
    let url = viewer.stdout_line(support::WAIT).expect("the page's URL");
    let read = |name: &str| std::fs::read(interop_dir().join(format!("{name}.mfb"))).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = async_nats::connect(&nats_url).await.unwrap();
        // Another source: the server does not send it.
        client
            .publish("v.99.1.50", read("basic").into())
            .await
            .unwrap();
        client
            .publish("v.20.2.10", b"not a frame".to_vec().into())
            .await
            .unwrap();
        client
            .publish("v.20.2.10", read("sdr").into())
            .await
            .unwrap();
        client.flush().await.unwrap();
    });
    let state = state_until(&url, "the sdr frame and the error", |s| {
        s["frames"] == 1 && s["error_count"] == 1
    });
    assert_eq!(state["rows"].as_array().unwrap().len(), 6, "{state}");
    assert_eq!(row(&state, "sdr_2", "center_freq")["value"], 433_000_000.0);
    assert_eq!(row(&state, "core", "firmware")["value"], "v1.3.5");
    let error = &state["errors"][0];
    assert!(
        error["message"].as_str().unwrap().contains("v.20.2.10"),
        "{error}"
    );
    assert_eq!(state["attachments"][0]["name"], "raw_iq");
    let (status, data) = http_get(&url, "/api/attachment?id=0");
    assert_eq!(status, 200);
    let sdr = read("sdr");
    assert!(
        sdr.windows(data.len()).any(|w| w == data),
        "the attachment's bytes, as sent"
    );
    assert_eq!(data.len(), 4096);
    assert_eq!(http_get(&url, "/api/attachment?id=1").0, 404);
    viewer.signal("TERM");
}

#[test]
fn a_file_is_replayed_by_header_time_and_its_broken_tail_is_an_error() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mframe-view-file");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("paced.mfb");
    let mut bytes = Vec::new();
    // Three frames 1 s apart in header time, eight parameters each.
    for i in 0..3u64 {
        let mut header = Header::new(1, 2, 4, 5);
        header.set_timestamp(1_700_000_000_000 + i * 1_000);
        let mut f = Frame::new(header);
        for k in 0..8 {
            f.add("dev", &format!("p{k}"), (i * 10 + k) as i64);
        }
        bytes.extend(f.encode().unwrap());
    }
    // Then a frame cut short.
    bytes.extend(&[0x93, 0x98, 0x01]);
    std::fs::write(&path, &bytes).unwrap();
    let started = Instant::now();
    let viewer = Proc::spawn(&[
        "view",
        path.to_str().unwrap(),
        "--speed",
        "2",
        "--max-keys",
        "5",
        "--port",
        "0",
    ]);
    let url = viewer.stdout_line(support::WAIT).expect("the page's URL");
    let state = state_until(&url, "the whole file", |s| {
        s["frames"] == 3 && s["error_count"] == 1
    });
    // 2 s of header time at twice the speed.
    assert!(
        started.elapsed() >= Duration::from_millis(1_000),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(state["tracked"], 5);
    assert_eq!(state["dropped_values"], 9, "3 of 8 keys, 3 frames");
    assert_eq!(row(&state, "dev", "p4")["value"], 24);
    assert_eq!(row(&state, "dev", "p4")["count"], 3);
    let message = state["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("frame 3 (starts at byte"), "{message}");
    assert!(
        message.ends_with("the rest of the input is not read"),
        "{message}"
    );
    viewer.stderr_line("view: ");
    // The page stays.
    let (status, page) = http_get(&url, "/");
    assert_eq!(status, 200);
    assert!(String::from_utf8(page).unwrap().contains("mframe view"));
    let (status, script) = http_get(&url, "/assets/uPlot.iife.min.js");
    assert_eq!(status, 200);
    assert!(script.len() > 40_000);
    // Another site's page (or a DNS name rebound to 127.0.0.1) gets nothing.
    let port = url.trim_end_matches('/').rsplit(':').next().unwrap();
    let rebound = format!("Host: evil.example:{port}\r\n");
    assert_eq!(http_get_as(&url, "/api/state", &rebound).0, 403);
    let cross = format!("Host: 127.0.0.1:{port}\r\nOrigin: http://evil.example\r\n");
    assert_eq!(http_get_as(&url, "/api/state", &cross).0, 403);
    let upgrade = format!(
        "{cross}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    );
    assert_eq!(http_get_as(&url, "/ws", &upgrade).0, 403);
    viewer.signal("TERM");
}

#[test]
fn the_viewer_of_an_open_pipe_stops_on_sigterm() {
    let mut viewer = Proc::spawn(&["view", "-", "--port", "0"]);
    let url = viewer.stdout_line(support::WAIT).expect("the page's URL");
    viewer.write_stdin(&std::fs::read(interop_dir().join("basic.mfb")).unwrap());
    state_until(&url, "the frame from the pipe", |s| s["frames"] == 1);
    // The pipe stays open: the reading thread is blocked in read(2).
    viewer.signal("TERM");
    assert!(viewer.wait().success(), "{}", viewer.stderr_text());
    assert!(viewer.stderr_text().contains("view: stopped"));
}

#[test]
fn an_mcap_recording_is_replayed_as_far_as_it_is_whole() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mframe-view-mcap");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let frames: Vec<Vec<u8>> = golden().into_iter().map(|(bytes, _)| bytes).collect();
    let mfb = dir.join("golden.mfb");
    std::fs::write(&mfb, frames.concat()).unwrap();
    let mcap = dir.join("golden.mcap");
    let export = std::process::Command::new(env!("CARGO_BIN_EXE_mframe"))
        .args([
            "export",
            mfb.to_str().unwrap(),
            "-o",
            mcap.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(export.status.success());
    // Cut inside its summary's last record: the data is whole.
    let mut bytes = std::fs::read(&mcap).unwrap();
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&mcap, &bytes).unwrap();
    let viewer = Proc::spawn(&[
        "view",
        mcap.to_str().unwrap(),
        "--speed",
        "0",
        "--port",
        "0",
    ]);
    let url = viewer.stdout_line(support::WAIT).expect("the page's URL");
    let state = state_until(&url, "every frame of the recording", |s| {
        s["frames"] == frames.len()
    });
    let expected = expected_rows(&golden());
    assert_eq!(row(&state, "types", "int_neg")["value"], -5);
    assert_eq!(row(&state, "sdr_2", "center_freq")["value"], 433_000_000.0);
    assert_eq!(state["tracked"], expected.len());
    assert_eq!(state["error_count"], 0);
    viewer.signal("TERM");

    // A recording cut inside its first chunk has nothing whole: an error.
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&mcap, &bytes).unwrap();
    let viewer = Proc::spawn(&[
        "view",
        mcap.to_str().unwrap(),
        "--speed",
        "0",
        "--port",
        "0",
    ]);
    let url = viewer.stdout_line(support::WAIT).expect("the page's URL");
    let state = state_until(&url, "the error", |s| s["error_count"] == 1);
    assert_eq!(state["frames"], 0);
    let message = state["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("then stopped"), "{message}");
    viewer.signal("TERM");
}
