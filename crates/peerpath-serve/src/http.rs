//! HTTP/1.1: GET and HEAD of files, one byte range, keep-alive.

use crate::resolve::{percent_decode, resolve, Refused};
use crate::out::Done;
use crate::{read_head, respond, Conn, Next, ReadHead};
use std::io::Write;
use std::time::Instant;

/// The end of a request's headers in `buf`, if they are all there.
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// An answer without a payload; the connection is closed after it.
fn simple(conn: &mut Conn, status: u16, extra: &str) {
    let body = format!("{status} {}\n", reason(status));
    let _ = write!(conn, "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\nContent-Type: text/plain\r\nConnection: close\r\n{extra}\r\n{body}", reason(status), body.len());
}

/// What `Range: bytes=...` asks of a `len`-byte file: `None` to send it
/// whole (no header, or one this server does not take: several ranges or
/// bad syntax, which RFC 9110 lets a server ignore), `Some(Err)` if it
/// cannot be satisfied, else the first byte and the length.
pub(crate) fn byte_range(value: &[u8], len: u64) -> Option<Result<(u64, u64), ()>> {
    let v = std::str::from_utf8(value).ok()?.trim();
    let spec = v.strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    let range = if a.is_empty() {
        let n: u64 = b.parse().ok()?;
        if n == 0 || len == 0 {
            return Some(Err(()));
        }
        (len - n.min(len), n.min(len))
    } else {
        let first: u64 = a.parse().ok()?;
        let last: u64 = if b.is_empty() { u64::MAX } else { b.parse().ok()? };
        if last < first {
            return None;
        }
        if first >= len {
            return Some(Err(()));
        }
        (first, last.min(len - 1) - first + 1)
    };
    Some(Ok(range))
}

/// Answers the connection's requests as long as they come; `Park` when
/// the client has sent nothing more for a while.
pub(crate) fn serve(conn: &mut Conn) -> Next {
    let shared = conn.shared;
    if conn.over {
        simple(conn, 503, "Retry-After: 1\r\n");
        return Next::Close;
    }
    loop {
        let n = match read_head(conn, head_end) {
            ReadHead::Ready(n) => n,
            ReadHead::Park => return Next::Park,
            ReadHead::TooLong => {
                simple(conn, 431, "");
                shared.done(std::time::Duration::ZERO, 0, 0, 431);
                return Next::Close;
            }
            ReadHead::TimedOut => {
                if !conn.pending.is_empty() {
                    simple(conn, 408, "");
                    shared.done(std::time::Duration::ZERO, 0, 0, 408);
                }
                return Next::Close;
            }
            ReadHead::Closed => return Next::Close,
        };
        let started = Instant::now();
        let head = conn.take_request(n);
        let (status, keep, payload, copied, from_host) = answer(conn, &head);
        conn.request_done(Done { started, payload, copied, from_host, status });
        conn.answered();
        if !keep {
            return Next::Close;
        }
        if let Some(next) = conn.after_request() {
            return next;
        }
    }
}

/// Answers one request: (status, keep the connection, payload bytes sent,
/// bytes copied by this process, payload bytes sent from host memory).
fn answer(conn: &mut Conn, head: &[u8]) -> (u16, bool, u64, u64, u64) {
    let shared = conn.shared;
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Err(httparse::Error::TooManyHeaders) => {
            simple(conn, 431, "");
            return (431, false, 0, 0, 0);
        }
        _ => {
            simple(conn, 400, "");
            return (400, false, 0, 0, 0);
        }
    }
    let header = |name: &str| req.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value);
    let http10 = req.version == Some(0);
    let close_asked = header("connection").is_some_and(|v| v.eq_ignore_ascii_case(b"close"));
    let keep_asked = header("connection").is_some_and(|v| v.eq_ignore_ascii_case(b"keep-alive"));
    let keep = if http10 { keep_asked } else { !close_asked };
    // This server reads no request bodies: one would be taken for the next request.
    if header("transfer-encoding").is_some() || header("content-length").is_some_and(|v| v != b"0") {
        simple(conn, 400, "");
        return (400, false, 0, 0, 0);
    }
    let method = req.method.unwrap_or("");
    if method != "GET" && method != "HEAD" {
        simple(conn, 405, "Allow: GET, HEAD\r\n");
        return (405, false, 0, 0, 0);
    }
    let target = req.path.unwrap_or("");
    let path = target.split(['?', '#']).next().unwrap_or("");
    let Some(name) = percent_decode(path.as_bytes()) else {
        simple(conn, 400, "");
        return (400, false, 0, 0, 0);
    };
    let found = match resolve(&shared.root, &name) {
        Ok(f) => f,
        Err(Refused::BadName) => {
            simple(conn, 400, "");
            return (400, false, 0, 0, 0);
        }
        Err(Refused::NotFound) => {
            simple(conn, 404, "");
            return (404, false, 0, 0, 0);
        }
    };
    let (status, offset, len, range_line) = match header("range").and_then(|v| byte_range(v, found.len)) {
        None => (200, 0, found.len, String::new()),
        Some(Ok((first, n))) => (206, first, n, format!("Content-Range: bytes {first}-{}/{}\r\n", first + n - 1, found.len)),
        Some(Err(())) => {
            simple(conn, 416, &format!("Content-Range: bytes */{}\r\n", found.len));
            return (416, false, 0, 0, 0);
        }
    };
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {len}\r\nContent-Type: application/octet-stream\r\nAccept-Ranges: bytes\r\n{range_line}Connection: {}\r\n\r\n",
        reason(status),
        if keep { "keep-alive" } else { "close" }
    );
    if method == "HEAD" {
        let written = conn.write_all(head.as_bytes()).is_ok();
        return (status, keep && written, 0, 0, 0);
    }
    let sent = respond(conn, head.as_bytes(), found, offset, len, b"");
    (status, keep && !sent.close, sent.payload, sent.copied, sent.from_host)
}

#[cfg(test)]
mod tests {
    use super::byte_range;

    #[test]
    fn ranges() {
        assert_eq!(byte_range(b"bytes=0-9", 100), Some(Ok((0, 10))));
        assert_eq!(byte_range(b"bytes=90-", 100), Some(Ok((90, 10))));
        assert_eq!(byte_range(b"bytes=-5", 100), Some(Ok((95, 5))));
        assert_eq!(byte_range(b"bytes=-500", 100), Some(Ok((0, 100))));
        assert_eq!(byte_range(b"bytes=50-5000", 100), Some(Ok((50, 50))));
        assert_eq!(byte_range(b"bytes=100-", 100), Some(Err(())));
        assert_eq!(byte_range(b"bytes=-0", 100), Some(Err(())));
        assert_eq!(byte_range(b"bytes=0-1,5-6", 100), None, "several ranges: the whole file");
        assert_eq!(byte_range(b"items=0-1", 100), None);
        assert_eq!(byte_range(b"bytes=9-2", 100), None);
        assert_eq!(byte_range(b"bytes=x-2", 100), None);
    }
}
