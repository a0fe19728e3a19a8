//! Just enough HTTP/1.1 for Node's (undici) and Python's (httpx/aiohttp) clients: keep-alive,
//! `Content-Length` or chunked request bodies, `Expect: 100-continue`, and chunked responses so a
//! server-sent-event stream can be cut mid-reply (the client then sees a truncated body, exactly
//! like a dropped connection to the real provider).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// One parsed request, before it is recorded.
pub struct RawRequest {
    pub method: String,
    pub target: String,
    /// Header names lowercased; values as sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads the next request on a keep-alive connection; `Ok(None)` when the client closed it.
pub fn read_request(
    reader: &mut BufReader<TcpStream>,
    writer: &mut TcpStream,
) -> io::Result<Option<RawRequest>> {
    let mut line = String::new();
    // Clients may send stray CRLFs between requests (RFC 9112 §2.2 says to ignore them).
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((n, v)) = l.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut req = RawRequest {
        method,
        target,
        headers,
        body: Vec::new(),
    };
    if req
        .header("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    if chunked {
        req.body = read_chunked(reader)?;
    } else if let Some(n) = req
        .header("content-length")
        .and_then(|n| n.parse::<usize>().ok())
    {
        let mut body = vec![0; n];
        reader.read_exact(&mut body)?;
        req.body = body;
    }
    Ok(Some(req))
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let size = line.trim().split(';').next().unwrap_or("0");
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
        if size == 0 {
            // Trailers, then the blank line that ends the body.
            loop {
                line.clear();
                if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        line.clear();
        reader.read_line(&mut line)?;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// A complete response with a `Content-Length` body (JSON answers and error statuses).
pub fn write_full(
    w: &mut TcpStream,
    status: u16,
    extra: &[(&str, String)],
    body: &[u8],
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        reason(status),
        body.len()
    );
    for (n, v) in extra {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    w.write_all(body)?;
    w.flush()
}

/// A `text/event-stream` response written as HTTP chunks, one chunk per event, flushed at once
/// so the client sees each event as it would from a real provider.
pub struct Sse<'a> {
    w: &'a mut TcpStream,
}

impl<'a> Sse<'a> {
    pub fn start(w: &'a mut TcpStream) -> io::Result<Sse<'a>> {
        w.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
              transfer-encoding: chunked\r\n\r\n",
        )?;
        w.flush()?;
        Ok(Sse { w })
    }

    /// One event: `event: NAME` (when the API uses names) and one `data:` line.
    pub fn event(&mut self, name: Option<&str>, data: &str) -> io::Result<()> {
        let mut text = String::new();
        if let Some(n) = name {
            text.push_str(&format!("event: {n}\n"));
        }
        text.push_str(&format!("data: {data}\n\n"));
        write!(self.w, "{:x}\r\n{text}\r\n", text.len())?;
        self.w.flush()
    }

    /// The terminating chunk: the stream ended normally.
    pub fn finish(self) -> io::Result<()> {
        self.w.write_all(b"0\r\n\r\n")?;
        self.w.flush()
    }
}
