//! The decoder against frames written by AWS's own encoder (`aws-smithy-eventstream`, a
//! dev-dependency), in any pieces; broken frames are retryable cuts; random bytes never panic.

use super::*;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use proptest::prelude::*;

/// A frame as AWS's encoder writes it.
fn aws_frame(headers: Vec<Header>, payload: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&Message::new_from_parts(headers, payload.to_vec()), &mut out)
        .unwrap();
    out
}

fn event(kind: &'static str, payload: &str) -> Vec<u8> {
    aws_frame(
        vec![
            Header::new(":message-type", HeaderValue::String("event".into())),
            Header::new(":event-type", HeaderValue::String(kind.into())),
            Header::new(":content-type", HeaderValue::String("application/json".into())),
        ],
        payload.as_bytes(),
    )
}

fn all(bytes: &[u8]) -> Result<Vec<Frame>, FrameError> {
    let mut d = Decoder::default();
    d.push(bytes);
    let mut out = Vec::new();
    while let Some(f) = d.next_frame()? {
        out.push(f);
    }
    d.finish()?;
    Ok(out)
}

#[test]
fn decodes_every_header_type_as_aws_writes_it() {
    let uuid = 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10u128;
    let bytes = aws_frame(
        vec![
            Header::new("t", HeaderValue::Bool(true)),
            Header::new("f", HeaderValue::Bool(false)),
            Header::new("b", HeaderValue::Byte(-3)),
            Header::new("s", HeaderValue::Int16(-300)),
            Header::new("i", HeaderValue::Int32(70_000)),
            Header::new("l", HeaderValue::Int64(-5_000_000_000)),
            Header::new("a", HeaderValue::ByteArray(vec![0u8, 255, 7].into())),
            Header::new("str", HeaderValue::String("héllo".into())),
            Header::new("ts", HeaderValue::Timestamp(aws_smithy_types::DateTime::from_millis(1_700_000_000_123))),
            Header::new("u", HeaderValue::Uuid(uuid)),
        ],
        b"{\"x\":1}",
    );
    let frames = all(&bytes).unwrap();
    assert_eq!(frames.len(), 1);
    let want = vec![
        ("t".to_string(), Value::Bool(true)),
        ("f".into(), Value::Bool(false)),
        ("b".into(), Value::Byte(-3)),
        ("s".into(), Value::Short(-300)),
        ("i".into(), Value::Int(70_000)),
        ("l".into(), Value::Long(-5_000_000_000)),
        ("a".into(), Value::Bytes(vec![0, 255, 7])),
        ("str".into(), Value::String("héllo".into())),
        ("ts".into(), Value::Timestamp(1_700_000_000_123)),
        ("u".into(), Value::Uuid(uuid.to_be_bytes())),
    ];
    assert_eq!(frames[0].headers, want);
    assert_eq!(frames[0].payload, b"{\"x\":1}");
    assert_eq!(frames[0].str("str"), Some("héllo"));
    assert_eq!(frames[0].str("i"), None, "not a string");
}

#[test]
fn frames_arrive_whole_whatever_the_pieces() {
    let mut bytes = event("messageStart", r#"{"role":"assistant"}"#);
    bytes.extend(event("contentBlockDelta", r#"{"contentBlockIndex":0,"delta":{"text":"hi"}}"#));
    bytes.extend(aws_frame(vec![], b""));
    for piece in [1, 3, 11, 12, 13, 50, bytes.len()] {
        let mut d = Decoder::default();
        let mut got = Vec::new();
        for chunk in bytes.chunks(piece) {
            d.push(chunk);
            while let Some(f) = d.next_frame().unwrap() {
                got.push(f);
            }
        }
        d.finish().unwrap();
        assert_eq!(got.len(), 3, "pieces of {piece}");
        assert_eq!(got[1].str(":event-type"), Some("contentBlockDelta"));
        assert!(got[2].headers.is_empty() && got[2].payload.is_empty(), "the smallest frame: 16 bytes");
    }
}

#[test]
fn a_bad_crc_a_bad_length_or_a_cut_frame_is_a_retryable_cut() {
    let good = event("messageStop", r#"{"stopReason":"end_turn"}"#);
    let mut payload_flipped = good.clone();
    let n = payload_flipped.len();
    payload_flipped[n - 6] ^= 1;
    assert_eq!(all(&payload_flipped).unwrap_err(), FrameError::MessageCrc);
    let mut length_flipped = good.clone();
    length_flipped[3] ^= 1;
    assert_eq!(all(&length_flipped).unwrap_err(), FrameError::PreludeCrc);
    let cut = &good[..good.len() - 5];
    assert_eq!(all(cut).unwrap_err(), FrameError::Cut(cut.len()));
    let mut huge = vec![0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
    huge.extend(crc32fast::hash(&huge).to_be_bytes());
    assert!(matches!(all(&huge).unwrap_err(), FrameError::Length { .. }));
    let e = ModelError::from(FrameError::MessageCrc);
    assert_eq!((e.class(), e.kind()), ("retryable", ModelErrorKind::StreamCut));
}

fn response(chunks: Vec<Vec<u8>>, then_stall: bool) -> reqwest::Response {
    let head = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
    let body = if then_stall {
        reqwest::Body::wrap_stream(head.chain(futures_util::stream::pending()))
    } else {
        reqwest::Body::wrap_stream(head)
    };
    reqwest::Response::from(::http::Response::new(body))
}

#[tokio::test]
async fn read_hands_over_frames_and_fails_on_a_cut_end() {
    let a = event("messageStart", "{}");
    let b = event("messageStop", "{}");
    let mut seen = Vec::new();
    let whole = vec![a.clone(), b[..7].to_vec(), b[7..].to_vec()];
    read(response(whole, false), Duration::from_secs(5), |f| {
        seen.push(f.str(":event-type").unwrap_or_default().to_string());
        Ok(false)
    })
    .await
    .unwrap();
    assert_eq!(seen, ["messageStart", "messageStop"]);
    let e = read(response(vec![a, b[..20].to_vec()], false), Duration::from_secs(5), |_| Ok(false)).await.unwrap_err();
    assert_eq!(e.kind(), ModelErrorKind::StreamCut, "{e}");
}

#[tokio::test(start_paused = true)]
async fn a_stalled_stream_is_an_idle_timeout() {
    let e = read(response(vec![event("messageStart", "{}")], true), Duration::from_secs(30), |_| Ok(false))
        .await
        .unwrap_err();
    assert_eq!((e.class(), e.kind()), ("retryable", ModelErrorKind::IdleTimeout), "{e}");
}

proptest! {
    /// Random bytes, and valid frames with random bytes changed, never panic the decoder.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600), cut in 1usize..64) {
        let _ = all(&bytes);
        let mut d = Decoder::default();
        for c in bytes.chunks(cut) {
            d.push(c);
            if d.next_frame().is_err() { break; }
        }
    }

    /// Any one byte changed: an error (the CRCs catch every burst of up to 32 bits).
    #[test]
    fn a_changed_byte_never_passes(at in 0usize..400, x in 1u8..=255) {
        let mut bytes = event("contentBlockDelta", r#"{"contentBlockIndex":0,"delta":{"text":"some text"}}"#);
        let n = bytes.len();
        bytes[at % n] ^= x;
        prop_assert!(all(&bytes).is_err());
    }

    #[test]
    fn corrupted_frames_never_panic(flips in proptest::collection::vec((0usize..400, any::<u8>()), 1..8)) {
        let mut bytes = event("contentBlockDelta", r#"{"contentBlockIndex":0,"delta":{"text":"some text"}}"#);
        let n = bytes.len();
        for (at, x) in flips {
            bytes[at % n] ^= x;
        }
        let _ = all(&bytes);
    }

    /// Headers with CRCs right but garbage inside: an error, never a panic.
    #[test]
    fn garbage_headers_with_valid_crcs_never_panic(headers in proptest::collection::vec(any::<u8>(), 0..300)) {
        let total = (16 + headers.len()) as u32;
        let mut bytes = total.to_be_bytes().to_vec();
        bytes.extend((headers.len() as u32).to_be_bytes());
        bytes.extend(crc32fast::hash(&bytes).to_be_bytes());
        bytes.extend(&headers);
        bytes.extend(crc32fast::hash(&bytes).to_be_bytes());
        let _ = all(&bytes);
    }
}
