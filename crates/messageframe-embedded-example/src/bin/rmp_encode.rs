//! The same message as `encode`, byte for byte, written with rmp's
//! low-level functions into the same fixed buffer: the floor a hand-written
//! MessagePack encoder reaches (no frame, no heap use, no lookups). For the
//! code-size comparison of docs/performance.md.

#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use messageframe_embedded_example::{read_sensors, Reading, FW_VERSION};
use rmp::encode::{
    write_array_len, write_bin, write_bool, write_f64, write_map_len, write_sint, write_str,
    write_uint, RmpWrite, ValueWriteError,
};

/// The wire format of docs/wire-format.md, as rmp writes it.
fn write<W: RmpWrite>(out: &mut W, r: &Reading) -> Result<(), ValueWriteError<W::Error>> {
    write_array_len(out, 3)?;
    write_array_len(out, 8)?;
    write_uint(out, r.timestamp)?;
    write_uint(out, r.counter)?;
    write_uint(out, 50)?;
    write_uint(out, 99)?;
    write_sint(out, 1001)?;
    write_sint(out, 1)?;
    write_uint(out, 1)?;
    write_uint(out, 0)?;
    write_map_len(out, 4)?;
    write_str(out, "sensor_alpha\u{1f}voltage")?;
    write_array_len(out, 2)?;
    write_uint(out, 20)?;
    write_f64(out, r.voltage)?;
    write_str(out, "device_core\u{1f}fw_version")?;
    write_array_len(out, 2)?;
    write_uint(out, 30)?;
    write_str(out, FW_VERSION)?;
    write_str(out, "device_core\u{1f}uptime_s")?;
    write_array_len(out, 2)?;
    write_uint(out, 10)?;
    write_sint(out, r.uptime_s)?;
    write_str(out, "device_core\u{1f}ok")?;
    write_array_len(out, 2)?;
    write_uint(out, 40)?;
    write_bool(out, r.ok).map_err(ValueWriteError::InvalidMarkerWrite)?;
    write_array_len(out, 1)?;
    write_array_len(out, 2)?;
    write_str(out, "raw")?;
    write_bin(out, &r.samples)?;
    Ok(())
}

#[entry]
fn main() -> ! {
    let mut out = [0u8; 256];
    let mut counter = 0;
    loop {
        let r = read_sensors(counter);
        let mut rest = &mut out[..];
        let ok = write(&mut rest, &r).is_ok();
        let written = 256 - rest.len();
        black_box((&out, written, ok));
        counter += 1;
    }
}
