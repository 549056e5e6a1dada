//! The AWS event-stream framing that ConverseStream answers in (`application/vnd.amazon.eventstream`):
//! each message is a prelude (total length, headers length, the prelude's CRC32), typed headers
//! (`:message-type`, `:event-type`, `:exception-type`, …), a payload and the message's CRC32.
//! A bad CRC, a length out of bounds, a malformed header or a stream that ends inside a frame is
//! a retryable `StreamCut`; a stream that sends nothing for the idle timeout is an `IdleTimeout`.

use crate::model::ModelError;
use crate::protocol::ModelErrorKind;
use futures_util::StreamExt;
use std::time::Duration;

/// The prelude (12 bytes) and the message CRC (4).
const OVERHEAD: usize = 16;
/// AWS's limits: 16 MiB a message, 128 KiB of headers.
pub const MAX_MESSAGE: usize = 16 << 20;
pub const MAX_HEADERS: usize = 128 << 10;

/// A header's value, by the wire's type tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Bool(bool),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Bytes(Vec<u8>),
    String(String),
    /// Milliseconds since the epoch.
    Timestamp(i64),
    Uuid([u8; 16]),
}

/// One decoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub headers: Vec<(String, Value)>,
    pub payload: Vec<u8>,
}

impl Frame {
    /// The string header `name` (`:message-type`, `:event-type`, …).
    pub fn str(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).and_then(|(_, v)| match v {
            Value::String(s) => Some(s.as_str()),
            _ => None,
        })
    }
}

/// Why bytes are not a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a frame declares {total} bytes with {headers} of headers, outside the framing's bounds")]
    Length { total: usize, headers: usize },
    #[error("a frame's prelude fails its CRC32")]
    PreludeCrc,
    #[error("a frame fails its message CRC32")]
    MessageCrc,
    #[error("a frame's headers are malformed: {0}")]
    Header(&'static str),
    #[error("the stream ended inside a frame ({0} bytes left over)")]
    Cut(usize),
}

impl From<FrameError> for ModelError {
    fn from(e: FrameError) -> Self {
        ModelError::retryable(ModelErrorKind::StreamCut, format!("the event stream broke: {e}"))
    }
}

/// Frames from bytes that arrive in any pieces.
#[derive(Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame, `None` while more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        if self.buf.len() < 12 {
            return Ok(None);
        }
        let total = be_u32(&self.buf[0..4]) as usize;
        let headers_len = be_u32(&self.buf[4..8]) as usize;
        if !(OVERHEAD..=MAX_MESSAGE).contains(&total) || headers_len > MAX_HEADERS || headers_len > total - OVERHEAD {
            return Err(FrameError::Length { total, headers: headers_len });
        }
        if crc32fast::hash(&self.buf[0..8]) != be_u32(&self.buf[8..12]) {
            return Err(FrameError::PreludeCrc);
        }
        if self.buf.len() < total {
            return Ok(None);
        }
        let message: Vec<u8> = self.buf.drain(..total).collect();
        if crc32fast::hash(&message[..total - 4]) != be_u32(&message[total - 4..]) {
            return Err(FrameError::MessageCrc);
        }
        let headers = parse_headers(&message[12..12 + headers_len])?;
        Ok(Some(Frame { headers, payload: message[12 + headers_len..total - 4].to_vec() }))
    }

    /// The stream ended: no bytes may be left over.
    pub fn finish(&self) -> Result<(), FrameError> {
        if self.buf.is_empty() { Ok(()) } else { Err(FrameError::Cut(self.buf.len())) }
    }
}

fn be_u32(b: &[u8]) -> u32 {
    b.iter().take(4).fold(0, |n, x| (n << 8) | u32::from(*x))
}

/// Reads a header block, checking every length against what is left.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        if self.0.len() < n {
            return Err(FrameError::Header("a header runs past the header block"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], FrameError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
}

fn parse_headers(block: &[u8]) -> Result<Vec<(String, Value)>, FrameError> {
    let mut c = Cursor(block);
    let mut out = Vec::new();
    while !c.0.is_empty() {
        let [len] = c.array::<1>()?;
        let name = std::str::from_utf8(c.take(usize::from(len))?)
            .map_err(|_| FrameError::Header("a header name is not UTF-8"))?
            .to_string();
        let [tag] = c.array::<1>()?;
        out.push((name, value(tag, &mut c)?));
    }
    Ok(out)
}

fn value(tag: u8, c: &mut Cursor<'_>) -> Result<Value, FrameError> {
    Ok(match tag {
        0 => Value::Bool(true),
        1 => Value::Bool(false),
        2 => Value::Byte(i8::from_be_bytes(c.array()?)),
        3 => Value::Short(i16::from_be_bytes(c.array()?)),
        4 => Value::Int(i32::from_be_bytes(c.array()?)),
        5 => Value::Long(i64::from_be_bytes(c.array()?)),
        6 | 7 => {
            let len = u16::from_be_bytes(c.array()?);
            let bytes = c.take(usize::from(len))?.to_vec();
            if tag == 6 {
                Value::Bytes(bytes)
            } else {
                Value::String(String::from_utf8(bytes).map_err(|_| FrameError::Header("a string header is not UTF-8"))?)
            }
        }
        8 => Value::Timestamp(i64::from_be_bytes(c.array()?)),
        9 => Value::Uuid(c.array()?),
        _ => return Err(FrameError::Header("a header has an unknown type")),
    })
}

/// Read the frames of `resp`, handing each to `on` until the stream ends or `on` returns `true`.
pub async fn read(
    resp: reqwest::Response,
    idle: Duration,
    mut on: impl FnMut(Frame) -> Result<bool, ModelError>,
) -> Result<(), ModelError> {
    let mut body = resp.bytes_stream();
    let mut decoder = Decoder::default();
    loop {
        let chunk = match tokio::time::timeout(idle, body.next()).await {
            Err(_) => {
                let msg = format!("the stream sent nothing for {}s", idle.as_secs());
                return Err(ModelError::retryable(ModelErrorKind::IdleTimeout, msg));
            }
            Ok(None) => return decoder.finish().map_err(ModelError::from),
            Ok(Some(Err(e))) => {
                return Err(ModelError::retryable(ModelErrorKind::StreamCut, format!("the stream broke: {e}")));
            }
            Ok(Some(Ok(c))) => c,
        };
        decoder.push(&chunk);
        while let Some(frame) = decoder.next_frame()? {
            if on(frame)? {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
#[path = "eventstream_tests.rs"]
mod tests;
