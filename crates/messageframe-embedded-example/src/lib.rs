//! What the binaries share: the heap, the panic handler, and the telemetry
//! message they all write (the same content, so that their code sizes
//! compare; docs/performance.md, "Code size on a microcontroller").
//!
//! A heap is needed by `Frame` (its parameter table and text arena are
//! `alloc` collections; a frame of a few short parameters holds them in
//! place, but the library may allocate); `embedded-alloc`'s linked-list
//! heap is the usual choice on Cortex-M, with `cortex-m`'s single-core
//! critical section. The encode-only path (`FrameEncoder`, the `encode` and
//! `full` binaries) and the view never allocate.

#![no_std]

use core::hint::black_box;
use core::mem::MaybeUninit;

use embedded_alloc::LlffHeap as Heap;
use messageframe::{EncodeError, Frame, FrameEncoder, Header};

#[global_allocator]
static HEAP: Heap = Heap::empty();

/// Bytes of RAM given to the heap: a frame of a few parameters needs a few
/// hundred.
pub const HEAP_SIZE: usize = 4096;

/// Hands the heap its memory. Call once, first thing in `main`.
pub fn init_heap() {
    static mut MEMORY: [MaybeUninit<u8>; HEAP_SIZE] = [MaybeUninit::uninit(); HEAP_SIZE];
    // SAFETY: called once, before any allocation; MEMORY is used by
    // nothing else. (`unsafe` here, in the example; the library itself
    // forbids it outside its three audited blocks.)
    #[allow(static_mut_refs)]
    unsafe {
        HEAP.init(core::ptr::addr_of_mut!(MEMORY) as usize, HEAP_SIZE)
    }
}

/// The message: what a sensor node sends once per period.
pub struct Reading {
    /// Milliseconds since boot, or since the epoch if the node knows it.
    pub timestamp: u64,
    /// The message counter.
    pub counter: u64,
    /// Volts.
    pub voltage: f64,
    /// Seconds since boot.
    pub uptime_s: i64,
    /// Whether the node is healthy.
    pub ok: bool,
    /// Raw ADC samples, sent as an attachment.
    pub samples: [u8; 16],
}

/// A reading the optimizer cannot see through (a real node reads it from
/// its peripherals).
pub fn read_sensors(counter: u64) -> Reading {
    black_box(Reading {
        timestamp: 1_700_000_000_000 + counter * 1000,
        counter,
        voltage: 12.6,
        uptime_s: 3600,
        ok: true,
        samples: [0xAB; 16],
    })
}

/// The firmware version string the node reports.
pub const FW_VERSION: &str = "v3.2.1";

/// The header of reading `r`.
fn header(r: &Reading) -> Header {
    Header::builder()
        .message_id(1001)
        .message_type(1)
        .source(50)
        .target(99)
        .counter(r.counter)
        .timestamp(r.timestamp)
        .build()
}

/// Writes reading `r` into `buf` with the encode-only path
/// ([`FrameEncoder`]: no frame, no heap); returns the frame's length. The
/// same bytes as [`fill`] and `Frame::encode_to_buf`.
pub fn write(buf: &mut [u8], r: &Reading) -> Result<usize, EncodeError> {
    let mut enc = FrameEncoder::new(buf, &header(r))?;
    enc.add("sensor_alpha", "voltage", r.voltage)?
        .add("device_core", "fw_version", FW_VERSION)?
        .add("device_core", "uptime_s", r.uptime_s)?
        .add("device_core", "ok", r.ok)?
        .attachment("raw", &r.samples)?;
    enc.finish()
}

/// Refills the reused `frame` with reading `r`: after the first message,
/// nothing is allocated.
pub fn fill(frame: &mut Frame, r: &Reading) {
    frame.clear();
    frame.set_header(header(r));
    frame.add("sensor_alpha", "voltage", r.voltage);
    frame.add("device_core", "fw_version", FW_VERSION);
    frame.add("device_core", "uptime_s", r.uptime_s);
    frame.add("device_core", "ok", r.ok);
    frame.add_attachment_copy("raw", &r.samples);
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {
        cortex_m::asm::bkpt();
    }
}
