//! HTTP/1.1: GET and HEAD of files, one byte range, conditional requests (ETag and
//! Last-Modified), keep-alive.

use crate::resolve::{percent_decode, resolve, Refused, Version};
use crate::out::Done;
use crate::{read_head, respond, Conn, Next, ReadHead};
use httpdate::HttpDate;
use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

/// The end of a request's headers in `buf`, if they are all there (empty
/// lines before the request line are not its end: they are skipped). A
/// line may end with a bare LF as well as CRLF (RFC 9112 §2.2 lets a
/// recipient take a single LF as a line's end; httparse does): a head of
/// bare LFs waited for a CRLF CRLF that never came, then got 408.
fn head_end(buf: &[u8]) -> Option<usize> {
    let start = buf.iter().position(|&b| b != b'\r' && b != b'\n')?;
    let mut at = start;
    while let Some(i) = buf[at..].iter().position(|&b| b == b'\n') {
        let lf = at + i;
        match &buf[lf + 1..] {
            [b'\n', ..] => return Some(lf + 2),
            [b'\r', b'\n', ..] => return Some(lf + 3),
            _ => at = lf + 1,
        }
    }
    None
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        206 => "Partial Content",
        304 => "Not Modified",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        412 => "Precondition Failed",
        414 => "URI Too Long",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

/// An answer without a payload (its body says the status; none to a HEAD),
/// the connection closed after it (`keep`: kept where the request was whole
/// and understood, and its client asked nothing else). Whether it was written.
fn simple_to(conn: &mut Conn, status: u16, extra: &str, head_only: bool, keep: bool) -> bool {
    let body = format!("{status} {}\n", reason(status));
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {}\r\nContent-Type: text/plain\r\nDate: {}\r\nConnection: {}\r\n{extra}\r\n",
        reason(status),
        body.len(),
        httpdate::fmt_http_date(std::time::SystemTime::now()),
        if keep { "keep-alive" } else { "close" }
    );
    conn.write_all(head.as_bytes()).is_ok() && (head_only || conn.write_all(body.as_bytes()).is_ok())
}

/// [`simple_to`] for a request that ends the connection (`head`: a HEAD's, answered without
/// a body, whatever else is wrong with it).
fn simple(conn: &mut Conn, status: u16, extra: &str, head: bool) {
    simple_to(conn, status, extra, head, false);
}

/// A request's bytes from its request line on (empty lines before it are skipped: RFC 9112 §2.2).
fn after_empty_lines(buf: &[u8]) -> &[u8] {
    &buf[buf.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(buf.len())..]
}

/// The strong entity tag of a version of a file (RFC 9110 §8.8.3): its inode, length, and
/// modification and change times to the nanosecond, in hex; cheap (the metadata is at hand), and
/// changed by a replacement (another inode), a new length, or any rewrite: one within the
/// modification time's tick (or with that time set back) still moves the change time, which
/// nothing sets back. Without it, a file rewritten at the same length within one tick kept its
/// tag, and a cache that revalidated kept the old content.
struct ETag<'a>(&'a Version);

impl std::fmt::Display for ETag<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let (v, (secs, nanos), (csecs, cnanos)) = (self.0, self.0.mtime, self.0.ctime);
        write!(f, "\"{:x}-{:x}-{secs:x}.{nanos:x}-{csecs:x}.{cnanos:x}\"", v.ino, v.len)
    }
}

/// A file's modification time as an HTTP date (to the second); `None` before 1970 or from the
/// year 10000 on, which an HTTP date cannot say.
fn last_modified(v: &Version) -> Option<HttpDate> {
    let secs = u64::try_from(v.mtime.0).ok().filter(|&s| s < 253_402_300_800)?;
    Some(HttpDate::from(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)))
}

/// A version's validators (its entity tag, its Last-Modified date where it has one), as a
/// response's header fields.
struct Validators<'a>(&'a Version, Option<HttpDate>);

impl std::fmt::Display for Validators<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "ETag: {}\r\n", ETag(self.0))?;
        match self.1 {
            Some(date) => write!(f, "Last-Modified: {date}\r\n"),
            None => Ok(()),
        }
    }
}

/// The entity tags of a list of them (`If-None-Match`'s, RFC 9110 §13.1.2): each whether it is
/// weak (`W/`), and its opaque tag, quotes included; `None` if the value is no such list. Empty
/// elements and spaces around them are allowed (§5.6.1); a tag may hold a comma.
fn entity_tags(mut v: &[u8]) -> Option<Vec<(bool, &[u8])>> {
    let mut tags = Vec::new();
    loop {
        v = v.trim_ascii_start();
        while let [b',', rest @ ..] = v {
            v = rest.trim_ascii_start();
        }
        if v.is_empty() {
            return Some(tags);
        }
        let (weak, tag) = match v.strip_prefix(b"W/") {
            Some(rest) => (true, rest),
            None => (false, v),
        };
        let [b'"', inner @ ..] = tag else { return None };
        let end = inner.iter().position(|&b| b == b'"')?;
        // etagc: %x21 / %x23-7E / obs-text (§8.8.3).
        if !inner[..end].iter().all(|&b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80) {
            return None;
        }
        tags.push((weak, &tag[..end + 2]));
        v = inner[end + 1..].trim_ascii_start();
        if !v.is_empty() && v[0] != b',' {
            return None;
        }
    }
}

/// Whether a request has `name` fields (`If-Match`, `If-None-Match`: lists of entity tags) and,
/// if so, whether any of them is `*` or lists the file's entity tag: by strong comparison (a weak
/// tag never matches: §8.8.3.2), else by weak comparison (`W/` ignored on either side). A field
/// that is no such list lists none.
fn tag_condition(headers: &[httparse::Header], name: &str, ours: &Validators, strong: bool) -> Option<bool> {
    let mut fields = headers.iter().filter(|h| h.name.eq_ignore_ascii_case(name)).peekable();
    fields.peek()?;
    let etag = ETag(ours.0).to_string();
    let listed = |&(weak, tag): &(bool, &[u8])| tag == etag.as_bytes() && !(strong && weak);
    Some(fields.any(|h| h.value.trim_ascii() == b"*" || entity_tags(h.value).is_some_and(|tags| tags.iter().any(listed))))
}

/// The value of a request's first `name` field, if it has one.
fn field<'h>(headers: &[httparse::Header<'h>], name: &str) -> Option<&'h [u8]> {
    headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
}

/// The date of a request's first `name` field (`If-Modified-Since`, `If-Unmodified-Since`);
/// `None` without one, or if it is not an HTTP date (such a field is ignored: §13.1.3, §13.1.4).
fn date_field(headers: &[httparse::Header], name: &str) -> Option<HttpDate> {
    std::str::from_utf8(field(headers, name)?).ok()?.parse().ok()
}

/// Whether a request's preconditions fail (412 Precondition Failed; the first precondition
/// evaluated, RFC 9110 §13.2.2): an `If-Match` (in any of its fields) that is neither `*` nor
/// lists the file's entity tag by strong comparison (§13.1.1); without one, an `If-Unmodified-Since` date before its
/// Last-Modified (§13.1.4; one that is not a date, or a file without a Last-Modified, is ignored).
fn precondition_failed(headers: &[httparse::Header], ours: &Validators) -> bool {
    if let Some(matched) = tag_condition(headers, "if-match", ours, true) {
        return !matched;
    }
    date_field(headers, "if-unmodified-since").zip(ours.1).is_some_and(|(since, modified)| modified > since)
}

/// Whether a GET's or HEAD's preconditions (RFC 9110 §13.2.2) say the client's copy is current
/// (304, no body): an `If-None-Match` that is `*` or names the file's entity tag (weak comparison,
/// `W/` ignored on either side: §13.1.2), in any of its fields; without one, an
/// `If-Modified-Since` date not before its Last-Modified (§13.1.3; one that is not a date is
/// ignored).
fn not_modified(headers: &[httparse::Header], ours: &Validators) -> bool {
    if let Some(matched) = tag_condition(headers, "if-none-match", ours, false) {
        return matched;
    }
    date_field(headers, "if-modified-since").zip(ours.1).is_some_and(|(since, modified)| modified <= since)
}

/// Whether an `If-Range` lets its Range be served (RFC 9110 §13.1.5; else the whole file, 200):
/// it is the file's entity tag, by strong comparison (a weak tag never matches), or exactly its
/// Last-Modified date, which is a strong validator only once its second is over (§8.8.2.2: a
/// file changed twice within the second it names would have the same date).
fn if_range_holds(value: &[u8], ours: &Validators, now: SystemTime) -> bool {
    let value = value.trim_ascii();
    if value.starts_with(b"\"") || value.starts_with(b"W/") {
        let etag = ETag(ours.0).to_string();
        return matches!(entity_tags(value).as_deref(), Some([(false, tag)]) if *tag == etag.as_bytes());
    }
    let date = std::str::from_utf8(value).ok().and_then(|d| d.parse::<HttpDate>().ok());
    date.zip(ours.1).is_some_and(|(date, modified)| date == modified && SystemTime::from(modified) + Duration::from_secs(1) <= now)
}

/// What a GET or HEAD of a `len`-byte file gets: `Ok` with the range to send (`None`: the whole
/// file, 200; else its first byte and length, 206), or `Err` with the status of an answer without
/// a payload (416, 412, 304). A Range that cannot be satisfied is 416 whatever the preconditions:
/// RFC 9110 §13.2.1 has a server ignore every precondition received where the same request
/// without them would get neither a 2xx nor 412, and 416 is neither (the rule makes no exception
/// for 304: a current If-None-Match does not make it 304 either). An If-Range that does not hold is no 416: the Range is then
/// ignored (§13.1.5), the response a 200, and the preconditions stand. Then they are evaluated
/// in §13.2.2's order: 412 (If-Match, else If-Unmodified-Since), then 304 (If-None-Match, else
/// If-Modified-Since). They were evaluated first: a failing If-Match made an unsatisfiable Range
/// 412, and a current copy made it 304. `get`: whether the method is GET, the only one range
/// handling is defined for; any other (HEAD) has its Range and If-Range ignored (§14.2), the
/// answer the one without them. (A HEAD with a Range was answered 206 or 416.)
fn outcome(headers: &[httparse::Header], ours: &Validators, len: u64, now: SystemTime, get: bool) -> Result<Option<(u64, u64)>, u16> {
    let range = field(headers, "range").filter(|_| get && field(headers, "if-range").is_none_or(|v| if_range_holds(v, ours, now)));
    let range = range.and_then(|v| byte_range(v, len)).transpose().map_err(|()| 416_u16)?;
    if precondition_failed(headers, ours) {
        return Err(412);
    }
    if not_modified(headers, ours) {
        return Err(304);
    }
    Ok(range)
}

/// What `Range: bytes=...` asks of a `len`-byte file: `None` to send it
/// whole (no header, or one this server does not take: several ranges, or
/// one that is not valid syntax, which RFC 9110 §14.2 lets a server ignore),
/// `Some(Err)` if it cannot be satisfied (416), else the first byte and the
/// length. Positions are digits only (RFC 9110 §14.1.2: `+1-3` and `0 - 1`
/// are not ranges, so ignored); a position too large for a u64 is still a
/// number, just larger than any file: a first byte past the end (416), a
/// last byte or suffix beyond it (up to the end). `99999999999999999999-`
/// was taken for bad syntax and got the whole file (200), not 416.
pub(crate) fn byte_range(value: &[u8], len: u64) -> Option<Result<(u64, u64), ()>> {
    /// A position: one or more ASCII digits, saturating at u64::MAX.
    fn position(s: &str) -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(s.bytes().fold(0u64, |v, d| v.saturating_mul(10).saturating_add(u64::from(d - b'0'))))
    }
    let v = std::str::from_utf8(value).ok()?.trim();
    // The unit is case-insensitive, and empty list elements (and spaces around them) are
    // allowed (RFC 9110 §14.1, §5.6.1); within an element, no spaces.
    let (unit, set) = v.split_once('=')?;
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return None;
    }
    let mut specs = set.split(',').map(|r| r.trim_matches([' ', '\t'])).filter(|r| !r.is_empty());
    let spec = specs.next()?;
    if specs.next().is_some() {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let range = if a.is_empty() {
        let n = position(b)?;
        if n == 0 || len == 0 {
            return Some(Err(()));
        }
        (len - n.min(len), n.min(len))
    } else {
        let first = position(a)?;
        let last = if b.is_empty() { u64::MAX } else { position(b)? };
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
    if conn.over {
        return conn.refuse_unread(503, |c| simple(c, 503, "Retry-After: 1\r\n", false));
    }
    loop {
        let n = match read_head(conn, head_end) {
            ReadHead::Ready(n) => n,
            ReadHead::Park => return Next::Park,
            ReadHead::TooLong => {
                // A request line that does not end within the limit is a long URI (414); a HEAD's
                // answer has no body (it had one).
                let line = after_empty_lines(&conn.pending);
                let status = if line.is_empty() || line.contains(&b'\n') { 431 } else { 414 };
                let head = line.starts_with(b"HEAD ");
                return conn.refuse_unread(status, |c| simple(c, status, "", head));
            }
            ReadHead::TimedOut if !conn.pending.is_empty() => {
                let head = after_empty_lines(&conn.pending).starts_with(b"HEAD ");
                return conn.refuse_unread(408, |c| simple(c, 408, "", head));
            }
            ReadHead::TimedOut => return Next::Close,
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

/// A request line's version that httparse does not take, where it sits.
enum Later {
    /// `HTTP/1.2` to `HTTP/1.9`, at this offset.
    Minor(usize),
    /// `HTTP/0.x` or `HTTP/2.x` and up: 505.
    Major,
}

/// The version of a whole request line (`METHOD SP TARGET SP HTTP/D.D`) that is
/// neither 1.0 nor 1.1; `None` for those and for what is not a request line (a 400 after).
fn later_version(head: &[u8]) -> Option<Later> {
    let line = &head[..head.iter().position(|&b| b == b'\n')?];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let at = line.len().checked_sub(8)?;
    match &line[at..] {
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor] if major.is_ascii_digit() && minor.is_ascii_digit() && at > 0 && line[at - 1] == b' ' => match (major, minor) {
            (b'1', b'0' | b'1') => None,
            (b'1', _) => Some(Later::Minor(at)),
            _ => Some(Later::Major),
        },
        _ => None,
    }
}

/// Answers one request: (status, keep the connection, payload bytes sent,
/// bytes copied by this process, payload bytes sent from host memory).
fn answer(conn: &mut Conn, head: &[u8]) -> (u16, bool, u64, u64, u64) {
    let shared = conn.shared;
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let head = after_empty_lines(head);
    // A HEAD is answered without a body, errors included (told from its first bytes: the
    // request may not parse).
    let is_head = head.starts_with(b"HEAD ");
    let as_1_1;
    let head = match later_version(head) {
        None => head,
        Some(Later::Minor(at)) => {
            // A later HTTP/1 is answered as the highest minor version known (RFC 9110 §2.5).
            as_1_1 = [&head[..at], b"HTTP/1.1", &head[at + 8..]].concat();
            &as_1_1
        }
        Some(Later::Major) => {
            simple(conn, 505, "", is_head);
            return (505, false, 0, 0, 0);
        }
    };
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Err(httparse::Error::TooManyHeaders) => {
            simple(conn, 431, "", is_head);
            return (431, false, 0, 0, 0);
        }
        _ => {
            simple(conn, 400, "", is_head);
            return (400, false, 0, 0, 0);
        }
    }
    let header = |name: &str| field(req.headers, name);
    let http10 = req.version == Some(0);
    // Connection's options, in every Connection field (a list: `keep-alive, close`).
    let option = |o: &str| req.headers.iter().filter(|h| h.name.eq_ignore_ascii_case("connection")).any(|h| h.value.split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(o.as_bytes())));
    let keep = if http10 { option("keep-alive") && !option("close") } else { !option("close") };
    // HTTP/1.1 asks for exactly one Host (RFC 9112 §3.2).
    let hosts = req.headers.iter().filter(|h| h.name.eq_ignore_ascii_case("host")).count();
    if !http10 && hosts != 1 {
        simple(conn, 400, "", is_head);
        return (400, false, 0, 0, 0);
    }
    // This server reads no request bodies: one would be taken for the next request. Content-Length
    // given twice is refused too, even twice 0 (RFC 9112 §6.3: differing ones are a framing error
    // the connection cannot recover from): only the first was looked at, so `0` then `38` let 38
    // bytes of body be taken for a second request (smuggled past a proxy that read the last).
    let lengths = req.headers.iter().filter(|h| h.name.eq_ignore_ascii_case("content-length")).count();
    if header("transfer-encoding").is_some() || lengths > 1 || header("content-length").is_some_and(|v| v != b"0") {
        simple(conn, 400, "", is_head);
        return (400, false, 0, 0, 0);
    }
    let method = req.method.unwrap_or("");
    if method != "GET" && method != "HEAD" {
        simple(conn, 405, "Allow: GET, HEAD\r\n", is_head);
        return (405, false, 0, 0, 0);
    }
    let head_only = method == "HEAD";
    let target = req.path.unwrap_or("");
    // The absolute form (`GET http://host/file`), which a server must take (RFC 9112 §3.2.2).
    let target = match target.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") => rest.find('/').map_or("/", |i| &rest[i..]),
        _ => target,
    };
    let path = target.split(['?', '#']).next().unwrap_or("");
    let Some(name) = percent_decode(path.as_bytes()) else {
        simple_to(conn, 400, "", head_only, false);
        return (400, false, 0, 0, 0);
    };
    let found = match resolve(&shared.root, &name) {
        Ok(f) => f,
        Err(Refused::BadName) => {
            simple_to(conn, 400, "", head_only, false);
            return (400, false, 0, 0, 0);
        }
        // A whole request, understood: the connection stays for the next one.
        Err(Refused::NotFound) => return (404, simple_to(conn, 404, "", head_only, keep) && keep, 0, 0, 0),
    };
    let now = SystemTime::now();
    let validators = Validators(&found.version, last_modified(&found.version));
    let (status, offset, len, range_line) = match outcome(req.headers, &validators, found.len, now, !head_only) {
        Ok(None) => (200, 0, found.len, String::new()),
        Ok(Some((first, n))) => (206, first, n, format!("Content-Range: bytes {first}-{}/{}\r\n", first + n - 1, found.len)),
        Err(304) => {
            let head = format!("HTTP/1.1 304 Not Modified\r\n{validators}Date: {}\r\nConnection: {}\r\n\r\n", HttpDate::from(now), if keep { "keep-alive" } else { "close" });
            let written = conn.write_all(head.as_bytes()).is_ok();
            return (304, keep && written, 0, 0, 0);
        }
        Err(status) => {
            let extra = if status == 416 { format!("Content-Range: bytes */{}\r\n", found.len) } else { String::new() };
            let written = simple_to(conn, status, &extra, head_only, keep);
            return (status, written && keep, 0, 0, 0);
        }
    };
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {len}\r\nContent-Type: application/octet-stream\r\nAccept-Ranges: bytes\r\n{range_line}{validators}Date: {}\r\nConnection: {}\r\n\r\n",
        reason(status),
        HttpDate::from(now),
        if keep { "keep-alive" } else { "close" }
    );
    if head_only {
        let written = conn.write_all(head.as_bytes()).is_ok();
        return (status, keep && written, 0, 0, 0);
    }
    let sent = respond(conn, status, head.as_bytes(), found, offset, len, b"");
    (status, keep && !sent.close, sent.payload, sent.copied, sent.from_host)
}

#[cfg(test)]
mod tests {
    use super::{byte_range, entity_tags, head_end, if_range_holds, last_modified, later_version, not_modified, outcome, precondition_failed, ETag, Later, Validators};
    use crate::resolve::Version;
    use std::time::{Duration, SystemTime};

    #[test]
    fn entity_tag_lists_are_parsed_as_rfc_9110_writes_them() {
        let tags = entity_tags(b" W/\"a\", \"b,c\" ,, \"\",\"d\"").unwrap();
        assert_eq!(tags, vec![(true, &b"\"a\""[..]), (false, b"\"b,c\""), (false, b"\"\""), (false, b"\"d\"")]);
        assert_eq!(entity_tags(b""), Some(vec![]));
        for bad in [&b"a"[..], b"\"a", b"\"a\" \"b\"", b"\"a\"x", b"w/\"a\"", b"W/ \"a\"", b"\"a b\""] {
            assert_eq!(entity_tags(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    /// A file's version, its modification time set to `mtime` (seconds, nanoseconds).
    fn version(mtime: (i64, i64)) -> Version {
        let mut v = Version::of(&std::fs::metadata(std::env::current_exe().unwrap()).unwrap());
        v.mtime = mtime;
        v
    }

    #[test]
    fn preconditions_compare_the_entity_tag_then_the_date() {
        // 2020-01-01 00:00:00 UTC and a half.
        let v = version((1_577_836_800, 500_000_000));
        let ours = Validators(&v, last_modified(&v));
        let etag = ETag(&v).to_string();
        assert!(etag.starts_with('"') && etag.contains("-5e0be100.1dcd6500-"), "{etag}");
        assert_eq!(ours.to_string(), format!("ETag: {etag}\r\nLast-Modified: Wed, 01 Jan 2020 00:00:00 GMT\r\n"));
        let ask = |fields: &[(&str, &str)]| {
            let headers: Vec<httparse::Header> = fields.iter().map(|&(name, value)| httparse::Header { name, value: value.as_bytes() }).collect();
            not_modified(&headers, &ours)
        };
        let weak = format!("W/{etag}");
        let listed = format!("\"other\", {etag}");
        for current in [&etag[..], &weak, &listed, "*", " * "] {
            assert!(ask(&[("If-None-Match", current)]), "{current}");
        }
        assert!(ask(&[("if-none-match", "\"other\""), ("If-None-Match", &etag)]), "in a later field");
        for stale in ["\"other\"", "garbage", "", "\"5e0be100\""] {
            assert!(!ask(&[("If-None-Match", stale)]), "{stale}");
        }
        // If-None-Match there: If-Modified-Since is not looked at.
        assert!(!ask(&[("If-None-Match", "\"other\""), ("If-Modified-Since", "Fri, 01 Jan 2100 00:00:00 GMT")]));
        for (since, current) in [
            ("Wed, 01 Jan 2020 00:00:00 GMT", true),
            ("Wednesday, 01-Jan-20 00:00:01 GMT", true),
            ("Tue, 31 Dec 2019 23:59:59 GMT", false),
            ("yesterday", false),
        ] {
            assert_eq!(ask(&[("If-Modified-Since", since)]), current, "{since}");
        }
        assert!(!ask(&[]));
        // No HTTP date before 1970 or from the year 10000: no Last-Modified, If-Modified-Since ignored.
        for mtime in [-1, 253_402_300_800] {
            let v = version((mtime, 0));
            assert_eq!(last_modified(&v), None);
            let headers = [httparse::Header { name: "If-Modified-Since", value: b"Fri, 31 Dec 9999 23:59:59 GMT" }];
            assert!(!not_modified(&headers, &Validators(&v, None)));
            assert!(Validators(&v, None).to_string().starts_with("ETag: \"") && !Validators(&v, None).to_string().contains("Last-Modified"));
        }
        assert!(last_modified(&version((253_402_300_799, 0))).is_some());
    }

    #[test]
    fn if_match_then_if_unmodified_since_fail_a_request_with_412() {
        let v = version((1_577_836_800, 500_000_000));
        let ours = Validators(&v, last_modified(&v));
        let etag = ETag(&v).to_string();
        let fails = |fields: &[(&str, &str)]| {
            let headers: Vec<httparse::Header> = fields.iter().map(|&(name, value)| httparse::Header { name, value: value.as_bytes() }).collect();
            precondition_failed(&headers, &ours)
        };
        assert!(!fails(&[]));
        let listed = format!("\"other\", {etag}");
        for holds in [&etag[..], &listed, "*", " * "] {
            assert!(!fails(&[("If-Match", holds)]), "{holds}");
        }
        assert!(!fails(&[("if-match", "\"other\""), ("IF-MATCH", &etag)]), "in a later field");
        // Strong comparison: a weak tag never matches (RFC 9110 §13.1.1).
        let weak = format!("W/{etag}");
        for stale in [&weak[..], "\"other\"", "garbage", ""] {
            assert!(fails(&[("If-Match", stale)]), "{stale}");
        }
        // If-Match there: If-Unmodified-Since is not looked at.
        assert!(!fails(&[("If-Match", &etag), ("If-Unmodified-Since", "Tue, 31 Dec 2019 23:59:59 GMT")]));
        assert!(fails(&[("If-Match", "\"other\""), ("If-Unmodified-Since", "Fri, 01 Jan 2100 00:00:00 GMT")]));
        for (since, failed) in [
            ("Wed, 01 Jan 2020 00:00:00 GMT", false),
            ("Fri, 01 Jan 2100 00:00:00 GMT", false),
            ("Tue, 31 Dec 2019 23:59:59 GMT", true),
            ("Tuesday, 31-Dec-19 23:59:59 GMT", true),
            ("yesterday", false),
        ] {
            assert_eq!(fails(&[("If-Unmodified-Since", since)]), failed, "{since}");
        }
        // No Last-Modified: If-Unmodified-Since is ignored (§13.1.4).
        let old = version((-1, 0));
        let headers = [httparse::Header { name: "If-Unmodified-Since", value: b"Thu, 01 Jan 1970 00:00:00 GMT" }];
        assert!(!precondition_failed(&headers, &Validators(&old, None)));
    }

    /// RFC 9110 §13.2.1: preconditions are ignored where the response without them would be
    /// neither 2xx nor 412, so an unsatisfiable Range is 416 whatever they say (it was 412 after
    /// a failing If-Match or If-Unmodified-Since, 304 after a current If-None-Match or
    /// If-Modified-Since); an If-Range that does not hold drops the Range, and they stand.
    #[test]
    fn an_unsatisfiable_range_is_416_whatever_the_preconditions_say() {
        let v = version((1_577_836_800, 500_000_000));
        let ours = Validators(&v, last_modified(&v));
        let etag = ETag(&v).to_string();
        let later = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
        let ask = |fields: &[(&str, &str)]| {
            let headers: Vec<httparse::Header> = fields.iter().map(|&(name, value)| httparse::Header { name, value: value.as_bytes() }).collect();
            outcome(&headers, &ours, 100, later, true)
        };
        let (stale, past, future) = ("\"other\"", "Tue, 31 Dec 2019 23:59:59 GMT", "Fri, 01 Jan 2100 00:00:00 GMT");
        for (range, sent) in [("bytes=100-", Err(416)), ("bytes=-0", Err(416)), ("bytes=90-", Ok(Some((90, 10)))), ("bytes=0-1,5-6", Ok(None))] {
            assert_eq!(ask(&[("Range", range)]), sent, "{range}");
            // Failing preconditions answer what would have been 2xx; the 416 stays.
            let failed = |conditional: Result<Option<(u64, u64)>, u16>| if sent == Err(416) { Err(416) } else { conditional };
            for fields in [[("If-Match", stale)], [("If-Unmodified-Since", past)]] {
                assert_eq!(ask(&[fields[0], ("Range", range)]), failed(Err(412)), "{range} {fields:?}");
            }
            for fields in [[("If-None-Match", &etag[..])], [("If-Modified-Since", future)]] {
                assert_eq!(ask(&[fields[0], ("Range", range)]), failed(Err(304)), "{range} {fields:?}");
            }
            assert_eq!(ask(&[("If-Match", stale), ("If-None-Match", &etag), ("Range", range)]), failed(Err(412)), "{range}: 412 before 304");
            assert_eq!(ask(&[("If-Match", &etag), ("If-None-Match", stale), ("Range", range)]), sent, "{range}: preconditions that hold");
            // A stale If-Range: the Range is ignored (the whole file), so it is no 416.
            assert_eq!(ask(&[("Range", range), ("If-Range", stale)]), Ok(None), "{range}");
            assert_eq!(ask(&[("If-None-Match", &etag), ("Range", range), ("If-Range", stale)]), Err(304), "{range}");
            assert_eq!(ask(&[("If-Match", stale), ("Range", range), ("If-Range", stale)]), Err(412), "{range}");
        }
        assert_eq!(ask(&[]), Ok(None));
    }

    /// RFC 9110 §14.2: range handling is defined for GET only, so a HEAD's Range is ignored,
    /// satisfiable or not, If-Range with it: the whole file (200), its preconditions standing.
    /// (A HEAD was answered as a GET's range: 206, or 416 whatever the preconditions.)
    #[test]
    fn a_heads_range_is_ignored() {
        let v = version((1_577_836_800, 500_000_000));
        let ours = Validators(&v, last_modified(&v));
        let etag = ETag(&v).to_string();
        let later = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
        let ask = |fields: &[(&str, &str)], get: bool| {
            let headers: Vec<httparse::Header> = fields.iter().map(|&(name, value)| httparse::Header { name, value: value.as_bytes() }).collect();
            outcome(&headers, &ours, 100, later, get)
        };
        for (range, as_get) in [("bytes=0-1", Ok(Some((0, 2)))), ("bytes=90-", Ok(Some((90, 10)))), ("bytes=100-", Err(416)), ("bytes=-0", Err(416))] {
            assert_eq!(ask(&[("Range", range)], true), as_get, "GET {range}");
            assert_eq!(ask(&[("Range", range)], false), Ok(None), "HEAD {range}");
            for if_range in [&etag[..], "\"other\""] {
                assert_eq!(ask(&[("Range", range), ("If-Range", if_range)], false), Ok(None), "HEAD {range} If-Range {if_range}");
            }
            assert_eq!(ask(&[("If-None-Match", &etag), ("Range", range)], false), Err(304), "HEAD {range}");
            assert_eq!(ask(&[("If-Match", "\"other\""), ("Range", range)], false), Err(412), "HEAD {range}");
        }
    }

    /// A file rewritten at the same length with the same modification time (within one tick of
    /// it, or set back) is another version: its change time moved, and so does its tag.
    #[test]
    fn the_entity_tag_changes_with_the_change_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"first").unwrap();
        let before = std::fs::metadata(&path).unwrap();
        let mtime = before.modified().unwrap();
        // Rewritten until the change time moves (a coarse clock may need a tick), the modification time set back.
        let after = loop {
            std::fs::write(&path, b"other").unwrap();
            std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
            let after = std::fs::metadata(&path).unwrap();
            if Version::of(&after).ctime != Version::of(&before).ctime {
                break after;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let (a, b) = (Version::of(&before), Version::of(&after));
        assert_eq!((a.ino, a.len, a.mtime), (b.ino, b.len, b.mtime));
        assert_ne!(ETag(&a).to_string(), ETag(&b).to_string());
        assert_eq!(last_modified(&a), last_modified(&b), "Last-Modified is the modification time's alone");
    }

    #[test]
    fn if_range_takes_a_strong_tag_or_a_date_whose_second_is_over() {
        let v = version((1_577_836_800, 500_000_000));
        let ours = Validators(&v, last_modified(&v));
        let etag = ETag(&v).to_string();
        let later = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
        assert!(if_range_holds(etag.as_bytes(), &ours, later));
        for no in [format!("W/{etag}"), "\"other\"".into(), format!("{etag}, {etag}"), "Tue, 31 Dec 2019 23:59:59 GMT".into(), "soon".into()] {
            assert!(!if_range_holds(no.as_bytes(), &ours, later), "{no}");
        }
        let date = b"Wed, 01 Jan 2020 00:00:00 GMT";
        assert!(if_range_holds(date, &ours, later));
        // Within the second the date names, the file may change again unseen: not strong.
        let within = SystemTime::UNIX_EPOCH + Duration::from_millis(1_577_836_800_900);
        assert!(!if_range_holds(date, &ours, within) && if_range_holds(etag.as_bytes(), &ours, within));
    }

    #[test]
    fn a_head_ends_at_an_empty_line_after_crlf_or_a_bare_lf() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET"), Some(27));
        assert_eq!(head_end(b"GET / HTTP/1.1\nHost: x\n\nGET"), Some(24));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\n\r\n"), Some(26));
        assert_eq!(head_end(b"GET / HTTP/1.1\nHost: x\r\n\n"), Some(25));
        assert_eq!(head_end(b"\r\n\nGET / HTTP/1.1\nHost: x\n\n"), Some(27), "empty lines first are skipped");
        assert_eq!(head_end(b"GET / HTTP/1.1\nHost: x\n"), None);
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r"), None);
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\r\n"), None, "a bare CR ends no line");
        assert_eq!(head_end(b"\r\n\n"), None);
        // What head_end takes, httparse parses whole.
        let head = b"GET /a HTTP/1.1\nHost: x\r\nRange: bytes=0-1\n\n";
        let mut headers = [httparse::EMPTY_HEADER; 4];
        let mut req = httparse::Request::new(&mut headers);
        assert_eq!(req.parse(head), Ok(httparse::Status::Complete(head.len())));
        assert_eq!((req.path, req.headers.len()), (Some("/a"), 2));
        assert!(matches!(later_version(b"GET / HTTP/1.5\nHost: x\n\n"), Some(Later::Minor(6))));
        assert!(matches!(later_version(b"GET / HTTP/2.0\r\nHost: x\r\n\r\n"), Some(Later::Major)));
    }

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
        assert_eq!(byte_range(b"BYTES=0-1", 100), Some(Ok((0, 2))), "the unit in any case");
        assert_eq!(byte_range(b"bytes=0-1,", 100), Some(Ok((0, 2))), "an empty element is allowed");
        assert_eq!(byte_range(b"bytes= ,0-1", 100), Some(Ok((0, 2))));
        // Positions too large for a u64 are numbers past any end.
        assert_eq!(byte_range(b"bytes=99999999999999999999-", 100), Some(Err(())), "a first byte past the end");
        assert_eq!(byte_range(b"bytes=99999999999999999999-99999999999999999999", 100), Some(Err(())));
        assert_eq!(byte_range(b"bytes=18446744073709551615-", 100), Some(Err(())));
        assert_eq!(byte_range(b"bytes=5-99999999999999999999", 100), Some(Ok((5, 95))), "a last byte past the end: to the end");
        assert_eq!(byte_range(b"bytes=-99999999999999999999", 100), Some(Ok((0, 100))), "a suffix longer than the file: all of it");
        // Digits only: anything else is not a range, and is ignored (the whole file).
        for bad in ["bytes=+1-3", "bytes=1-+3", "bytes=-+3", "bytes=0 - 1", "bytes=0x1-2", "bytes=1.0-2", "bytes=--1", "bytes=-", "bytes=1-2-3", "bytes=\u{0661}-2"] {
            assert_eq!(byte_range(bad.as_bytes(), 100), None, "{bad}");
        }
    }
}
