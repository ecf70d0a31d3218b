//! Frames written by the C++ library decode to exactly their JSON
//! description, and our encoder reproduces them byte for byte.

mod common;

use std::collections::HashSet;

use common::*;
use messageframe::{Frame, FrameView, Header};

#[test]
fn every_interop_frame_decodes_to_its_json_description() {
    for f in interop_frames() {
        let json = &f.json;
        assert_eq!(
            f.bytes.len() as u64,
            json["frame_len"].as_u64().unwrap(),
            "{}",
            f.name
        );
        assert_eq!(
            sha256_hex(&f.bytes),
            json["frame_sha256"].as_str().unwrap(),
            "{}",
            f.name
        );

        let frame = Frame::decode(&f.bytes).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        assert_eq!(
            *frame.header(),
            header_from_json(&json["header"]),
            "{}",
            f.name
        );

        let params = json["parameters"].as_array().unwrap();
        assert_eq!(frame.len(), params.len(), "{}", f.name);
        if f.name == "map_mode" {
            // Written in hash-table order by C++: compare as a set, and check
            // every parameter is found by lookup.
            for p in params {
                let v = frame
                    .find(p["device"].as_str().unwrap(), p["param"].as_str().unwrap())
                    .unwrap_or_else(|| panic!("map_mode: missing {p}"));
                assert!(value_matches(p, v), "map_mode: {p} decoded as {v:?}");
            }
            let keys: HashSet<_> = frame.iter().map(|(d, p, _)| (d, p)).collect();
            assert_eq!(keys.len(), params.len());
        } else {
            for ((d, k, v), p) in frame.iter().zip(params) {
                assert_eq!(d, p["device"].as_str().unwrap(), "{}", f.name);
                assert_eq!(k, p["param"].as_str().unwrap(), "{}", f.name);
                assert!(value_matches(p, v), "{}: {p} decoded as {v:?}", f.name);
                let found = frame.find(d, k).unwrap();
                assert!(value_matches(p, found), "{}: find {d}.{k}", f.name);
            }
        }

        let atts = json["attachments"].as_array().unwrap();
        assert_eq!(frame.attachment_count(), atts.len(), "{}", f.name);
        for ((name, data), a) in frame.attachments().zip(atts) {
            assert_eq!(name, a["name"].as_str().unwrap());
            assert_eq!(data.len() as u64, a["len"].as_u64().unwrap());
            assert_eq!(sha256_hex(data), a["sha256"].as_str().unwrap());
        }
    }
}

#[test]
fn the_view_sees_the_same_content_as_the_owned_decode() {
    for f in interop_frames() {
        let frame = Frame::decode(&f.bytes).unwrap();
        let view = FrameView::new(&f.bytes).unwrap();
        assert_eq!(view.header(), frame.header(), "{}", f.name);
        assert_eq!(view.len(), frame.len());
        for ((vd, vp, vv), (d, p, v)) in view.iter().zip(frame.iter()) {
            assert_eq!((vd, vp), (d, p));
            assert_eq!(format!("{vv:?}"), format!("{v:?}"), "{}", f.name);
            assert_eq!(format!("{:?}", view.find(d, p).unwrap()), format!("{v:?}"));
        }
        assert!(view
            .attachments()
            .map(|(n, d)| (n, d.to_vec()))
            .eq(frame.attachments().map(|(n, d)| (n, d.to_vec()))));
        assert_eq!(Header::peek(&f.bytes).unwrap(), *frame.header());
    }
}

#[test]
fn encoding_the_json_content_reproduces_each_file_byte_for_byte() {
    for f in interop_frames() {
        let json = &f.json;
        let params = json["parameters"].as_array().unwrap();
        let decoded = Frame::decode(&f.bytes).unwrap();

        let mut frame = Frame::new(header_from_json(&json["header"]));
        for p in params {
            add_json_param(&mut frame, p);
        }
        // Attachment data is not in the JSON; take it from the decoded file
        // (its SHA-256 is checked against the JSON above).
        for (name, data) in decoded.attachments() {
            frame.add_attachment(name, data.clone());
        }
        let bytes = frame.encode().unwrap();
        assert_eq!(bytes.len(), frame.encoded_len(), "{}", f.name);
        if params.len() <= 128 {
            assert!(
                bytes == f.bytes,
                "{}: encoding differs from the C++ bytes",
                f.name
            );
            // And re-encoding the decoded frame gives the same bytes again.
            assert!(
                decoded.encode().unwrap() == f.bytes,
                "{}: re-encode differs",
                f.name
            );
        } else {
            // map_mode: C++ wrote hash order, we write insertion order; the
            // content is the same.
            assert_eq!(f.name, "map_mode");
            let back = Frame::decode(&bytes).unwrap();
            for p in params {
                let v = back
                    .find(p["device"].as_str().unwrap(), p["param"].as_str().unwrap())
                    .unwrap();
                assert!(value_matches(p, v));
            }
            assert!(back
                .iter()
                .zip(params)
                .all(|((d, k, _), p)| d == p["device"] && k == p["param"]));
            // Re-encoding the decoded C++ frame keeps its (hash) order.
            assert!(decoded.encode().unwrap() == f.bytes);
        }
    }
}
