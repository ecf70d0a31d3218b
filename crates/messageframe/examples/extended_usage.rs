//! Everything else the C++ examples show: two SDRs with integral doubles, an
//! IQ attachment moved in, upsert and update, pre-composed keys in a hot
//! loop, a reused frame and buffer, the sizing hint, a stream of frames, and
//! unknown tags passed through by a relay.
//!
//! Run with `cargo run --example extended_usage`.

use messageframe::{
    Decoder, FlatKey, Frame, FrameConfig, FrameView, Header, UnknownValue, ValueRef,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // --- Two SDRs and a 4 KiB IQ capture --------------------------------
    let mut frame = Frame::new(Header::new(1002, 2, 10, 20).with_counter(3));
    frame.add("sdr_1", "tx_gain", 10.0); // integral doubles go on the wire as integers
    frame.add("sdr_1", "sample_rate", 2_000_000.0);
    frame.add("sdr_2", "rx_gain", 25.0);
    frame.add("sdr_2", "center_freq", 433_000_000.0);
    frame.add("core", "firmware", "v1.3.5");
    frame.add("channel_1", "status_ok", true);
    let iq: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    frame.add_attachment("raw_iq", iq); // moved in, not copied

    // set() upserts, update() only changes an existing key.
    frame.set("sdr_2", "rx_gain", 27.5);
    let updated = frame.update("sdr_3", "rx_gain", 1.0);
    println!("update of a missing key changed something: {updated}");

    let bytes = frame.encode()?;
    println!("SDR frame: {} params, {} bytes", frame.len(), bytes.len());

    // The receiver borrows the attachment straight from the buffer.
    let view = FrameView::new(&bytes)?;
    let (name, data) = view.attachments().next().expect("one attachment");
    println!(
        "attachment {name}: {} bytes, first {:02x?}",
        data.len(),
        &data[..4]
    );
    println!("sdr_2.rx_gain = {}", view.find("sdr_2", "rx_gain").unwrap());

    // --- Hot loop: reused frame and buffer, pre-composed keys ------------
    let gain = FlatKey::new("sdr_1", "rx_gain")?;
    let temp = FlatKey::new("sdr_1", "temperature")?;
    let mut tx = Frame::with_config(Header::new(1, 1, 10, 20), FrameConfig::for_params(2));
    let mut rx = Frame::default();
    let mut buf = Vec::with_capacity(256);
    let mut stream = Vec::new();
    for tick in 0..5u32 {
        tx.clear(); // keeps every container's capacity: no allocation below
        tx.header_mut().set_counter(u64::from(tick));
        tx.header_mut().update_timestamp();
        tx.add_flat(&gain, 30.0 + f64::from(tick));
        tx.add_flat(&temp, 41.5);
        buf.clear();
        tx.encode_into(&mut buf)?;
        rx.decode_from(&buf)?; // reuses rx's storage
        assert_eq!(
            rx.find_flat(&gain),
            Some(ValueRef::Double(30.0 + f64::from(tick)))
        );
        stream.extend_from_slice(&buf);
    }

    // --- A stream of concatenated frames ----------------------------------
    let decoder = Decoder::new();
    let mut rest = &stream[..];
    let mut count = 0;
    while !rest.is_empty() {
        let view = decoder.view_prefix(rest)?;
        count += 1;
        rest = &rest[view.encoded_len()..];
    }
    println!("stream held {count} frames");

    // --- Large frames: the sizing hint removes all growth ------------------
    let mut big = Frame::with_config(Header::default(), FrameConfig::for_params(1024));
    for k in 0..1024 {
        big.add(&format!("d{}", k % 8), &format!("p{k}"), k);
    }
    println!("1024-param frame: {} bytes", big.encoded_len());
    println!("d7.p1023 = {}", big.find("d7", "p1023").unwrap());

    // --- Unknown tags survive a relay --------------------------------------
    let mut newer = Frame::default();
    let future = UnknownValue::new(50, &[0x92, 0x01, 0x02]).expect("valid raw value");
    newer.add("future", "vector", ValueRef::Unknown(future));
    let relayed = Frame::decode(&newer.encode()?)?.encode()?;
    assert_eq!(relayed, newer.encode()?);
    println!("relay kept the unknown tag 50 byte for byte");

    // --- Errors say what and where ----------------------------------------
    let err = Frame::decode(&bytes[..bytes.len() - 10]).unwrap_err();
    println!("truncated frame: {err}");
    Ok(())
}
