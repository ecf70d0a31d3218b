//! The typed-record comparison of SPEC 5.3: the Order message of the
//! protobuf-vs-JSON article, with 1, 20 and 500 items.
//!
//! As in the article, encode serializes an already built message and decode
//! builds a new message from the bytes; here every encoder writes into a
//! reused buffer (the idiomatic Rust shape for every library here), and
//! every decoder also reads the last item's price back so nothing is
//! optimised away.

use std::collections::BTreeMap;

use messageframe::{Frame, FrameView, Header};
use prost::Message;
use serde::{Deserialize, Serialize};

use crate::proto::lab;

/// One item of the plain derived struct (serde_json and rmp-serde).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// `SKU-{i:05}`.
    pub sku: String,
    /// `i % 5 + 1`.
    pub qty: i32,
    /// `i * 1.25 + 0.99`.
    pub price: f64,
}

/// The plain derived struct (serde_json and rmp-serde).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    /// 90210.
    pub id: i64,
    /// "Ada Lovelace".
    pub customer: String,
    /// Her email.
    pub email: String,
    /// true.
    pub paid: bool,
    /// 1234.5.
    pub total: f64,
    /// The line items.
    pub items: Vec<Item>,
    /// channel / coupon / region.
    pub meta: BTreeMap<String, String>,
}

const META: [(&str, &str); 3] = [("channel", "web"), ("coupon", "SPRING"), ("region", "eu")];

/// The order with `n` items, as the derived struct.
#[must_use]
pub fn build_struct(n: usize) -> Order {
    Order {
        id: 90210,
        customer: "Ada Lovelace".into(),
        email: "ada@example.com".into(),
        paid: true,
        total: 1234.5,
        items: (0..n)
            .map(|i| Item {
                sku: format!("SKU-{i:05}"),
                qty: (i % 5 + 1) as i32,
                price: i as f64 * 1.25 + 0.99,
            })
            .collect(),
        meta: META
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    }
}

/// The order as prost's generated message.
#[must_use]
pub fn build_prost(o: &Order) -> lab::Order {
    lab::Order {
        id: o.id,
        customer: o.customer.clone(),
        email: o.email.clone(),
        paid: o.paid,
        total: o.total,
        items: o
            .items
            .iter()
            .map(|i| lab::Item {
                sku: i.sku.clone(),
                qty: i.qty,
                price: i.price,
            })
            .collect(),
        meta: o.meta.clone().into_iter().collect(),
    }
}

/// The order as a messageframe frame: device `order` for the scalars, `meta`
/// for the metadata, `item{i}` for each item's sku / qty / price.
#[must_use]
pub fn build_frame(o: &Order) -> Frame {
    let mut f = Frame::new(Header::new(300, 1, 1, 2));
    f.add("order", "id", o.id);
    f.add("order", "customer", &o.customer);
    f.add("order", "email", &o.email);
    f.add("order", "paid", o.paid);
    f.add("order", "total", o.total);
    for (k, v) in &o.meta {
        f.add("meta", k, v);
    }
    for (i, item) in o.items.iter().enumerate() {
        let dev = format!("item{i}");
        f.add(&dev, "sku", &item.sku);
        f.add(&dev, "qty", i64::from(item.qty));
        f.add(&dev, "price", item.price);
    }
    f
}

/// Backends of the Order comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderBackend {
    /// messageframe, `Frame::decode` into a new frame.
    Mf,
    /// messageframe, `decode_from` into a reused frame.
    MfReused,
    /// messageframe, zero-copy `FrameView`.
    MfView,
    /// The serde bridge: the derived struct straight to a frame's bytes
    /// (`messageframe::serde::to_bytes_into`, into the reused buffer), back
    /// through `from_bytes` (one pass that checks the frame as it reads it)
    /// into a new struct. The typed round trip the other serde backends
    /// make.
    MfSerde,
    /// The serde bridge through a frame: `to_frame_into` (a reused frame)
    /// and `encode_into`, back through `decode_from` into a reused frame and
    /// `from_frame`.
    MfSerdeFrame,
    /// prost's generated `Order`.
    Prost,
    /// serde_json with the derived struct.
    Json,
    /// rmp-serde with the derived struct (its default, compact array form:
    /// structs as arrays, no field names).
    RmpSerde,
    /// rmp-serde with field names (`to_vec_named`: structs as maps), the
    /// schema-free form a reader without the struct can decode.
    RmpSerdeNamed,
}

impl OrderBackend {
    /// All, in table order.
    pub const ALL: [OrderBackend; 9] = [
        OrderBackend::Mf,
        OrderBackend::MfReused,
        OrderBackend::MfView,
        OrderBackend::MfSerde,
        OrderBackend::MfSerdeFrame,
        OrderBackend::Prost,
        OrderBackend::Json,
        OrderBackend::RmpSerde,
        OrderBackend::RmpSerdeNamed,
    ];

    /// Stable identifier.
    #[must_use]
    pub fn id(self) -> &'static str {
        match self {
            OrderBackend::Mf => "messageframe",
            OrderBackend::MfReused => "messageframe-reused",
            OrderBackend::MfView => "messageframe-view",
            OrderBackend::MfSerde => "messageframe-serde",
            OrderBackend::MfSerdeFrame => "messageframe-serde-frame",
            OrderBackend::Prost => "prost",
            OrderBackend::Json => "serde_json",
            OrderBackend::RmpSerde => "rmp-serde",
            OrderBackend::RmpSerdeNamed => "rmp-serde-named",
        }
    }

    /// Table label.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            OrderBackend::Mf => "messageframe (new frame)",
            OrderBackend::MfReused => "messageframe (reused frame)",
            OrderBackend::MfView => "messageframe view",
            OrderBackend::MfSerde => "messageframe via serde (struct to bytes and back)",
            OrderBackend::MfSerdeFrame => {
                "messageframe via serde (struct to frame and back, reused frame)"
            }
            OrderBackend::Prost => "prost",
            OrderBackend::Json => "serde_json",
            OrderBackend::RmpSerde => "rmp-serde",
            OrderBackend::RmpSerdeNamed => "rmp-serde-named",
        }
    }
}

/// Everything one Order backend needs, built once.
#[derive(Debug)]
pub struct OrderCase {
    n: usize,
    order: Order,
    prost: lab::Order,
    frame: Frame,
    reused: Frame,
    /// The serde bridge's frame, refilled from the struct by every encode.
    serde_frame: Frame,
    last_item: String,
    /// Output buffer, reused by encode.
    pub buf: Vec<u8>,
}

impl OrderCase {
    /// The case with `n` items.
    #[must_use]
    pub fn new(n: usize) -> Self {
        let order = build_struct(n);
        let frame = build_frame(&order);
        OrderCase {
            n,
            prost: build_prost(&order),
            // Every messageframe backend writes the same header.
            serde_frame: Frame::new(*frame.header()),
            frame,
            reused: Frame::default(),
            last_item: format!("item{}", n.saturating_sub(1)),
            order,
            buf: Vec::new(),
        }
    }

    /// The price every decoder must read back (last item's).
    #[must_use]
    pub fn expected_price(&self) -> f64 {
        self.order.items.last().map_or(0.0, |i| i.price)
    }

    /// Number of items.
    #[must_use]
    pub fn items(&self) -> usize {
        self.n
    }

    /// Serializes the pre-built message into `self.buf`.
    #[inline]
    pub fn encode(&mut self, b: OrderBackend) {
        self.buf.clear();
        match b {
            OrderBackend::Mf | OrderBackend::MfReused | OrderBackend::MfView => {
                self.frame
                    .encode_into(&mut self.buf)
                    .expect("the benchmark frames encode");
            }
            OrderBackend::MfSerde => {
                messageframe::serde::to_bytes_into(&self.order, self.frame.header(), &mut self.buf)
                    .expect("the order maps to a frame");
            }
            OrderBackend::MfSerdeFrame => {
                messageframe::serde::to_frame_into(&self.order, &mut self.serde_frame)
                    .expect("the order maps to a frame");
                self.serde_frame
                    .encode_into(&mut self.buf)
                    .expect("the benchmark frames encode");
            }
            OrderBackend::Prost => self.prost.encode(&mut self.buf).expect("a Vec grows"),
            OrderBackend::Json => {
                serde_json::to_writer(&mut self.buf, &self.order).expect("a Vec grows");
            }
            OrderBackend::RmpSerde => {
                rmp_serde::encode::write(&mut self.buf, &self.order).expect("a Vec grows");
            }
            OrderBackend::RmpSerdeNamed => {
                // `to_vec_named`'s serializer, into the reused buffer.
                rmp_serde::encode::write_named(&mut self.buf, &self.order).expect("a Vec grows");
            }
        }
    }

    /// Decodes `self.buf` and returns the last item's price.
    #[inline]
    pub fn decode(&mut self, b: OrderBackend) -> f64 {
        match b {
            OrderBackend::Mf => {
                let f = Frame::decode(&self.buf).expect("valid frame");
                f.find(&self.last_item, "price")
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0)
            }
            OrderBackend::MfReused => {
                self.reused.decode_from(&self.buf).expect("valid frame");
                self.reused
                    .find(&self.last_item, "price")
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0)
            }
            OrderBackend::MfView => {
                let v = FrameView::new(&self.buf).expect("valid frame");
                v.find(&self.last_item, "price")
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0)
            }
            OrderBackend::MfSerde => {
                let o: Order =
                    messageframe::serde::from_bytes(&self.buf).expect("the order reads back");
                o.items.last().map_or(0.0, |i| i.price)
            }
            OrderBackend::MfSerdeFrame => {
                self.reused.decode_from(&self.buf).expect("valid frame");
                let o: Order =
                    messageframe::serde::from_frame(&self.reused).expect("the order reads back");
                o.items.last().map_or(0.0, |i| i.price)
            }
            OrderBackend::Prost => {
                let o = lab::Order::decode(self.buf.as_slice()).expect("valid message");
                o.items.last().map_or(0.0, |i| i.price)
            }
            OrderBackend::Json => {
                let o: Order = serde_json::from_slice(&self.buf).expect("valid JSON");
                o.items.last().map_or(0.0, |i| i.price)
            }
            OrderBackend::RmpSerde | OrderBackend::RmpSerdeNamed => {
                let o: Order = rmp_serde::from_slice(&self.buf).expect("valid msgpack");
                o.items.last().map_or(0.0, |i| i.price)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_serde_bridge_gives_back_the_whole_order() {
        for n in [0, 1, 20, 500] {
            let mut case = OrderCase::new(n);
            case.encode(OrderBackend::MfSerde);
            let v = FrameView::new(&case.buf).unwrap();
            let back: Order = messageframe::serde::from_view(&v).unwrap();
            assert_eq!(back, case.order, "{n} items");
            let direct: Order = messageframe::serde::from_bytes(&case.buf).unwrap();
            assert_eq!(direct, case.order, "{n} items");
            assert_eq!(v.len(), 5 + 1 + 3 * n + 1 + 3, "{n} items");
            assert_eq!(
                v.find(&format!("items.{}", n.saturating_sub(1)), "price")
                    .and_then(|p| p.as_f64()),
                case.order.items.last().map(|i| i.price)
            );
            // The bytes written directly are the frame's own encoding.
            let direct_bytes = case.buf.clone();
            case.encode(OrderBackend::MfSerdeFrame);
            let first_difference = case.buf.iter().zip(&direct_bytes).position(|(a, b)| a != b);
            assert_eq!(first_difference, None, "{n} items");
            assert_eq!(case.buf.len(), direct_bytes.len(), "{n} items");
        }
    }
}
