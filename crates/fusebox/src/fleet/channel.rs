//! The node's subscription to its namespace's channel, on a connection of
//! its own, read here with a bound: a message longer than
//! [`MAX_MESSAGE_BYTES`] is read past in small chunks, dropped and counted,
//! never held in memory whatever its size (the command connection's client
//! reads every reply whole into its buffer before anyone sees it). Commands
//! go on the node's other connection, so Redis closing this one (a
//! subscriber over its `client-output-buffer-limit pubsub`, say) never
//! fails a sync: the node subscribes again and syncs at once, so what was
//! published meanwhile is caught up within one reconnect.
//!
//! The protocol spoken is RESP2's subscriber mode: `AUTH`, `SUBSCRIBE`,
//! `PING`; what comes back is parsed by [`Reader`], which holds at most
//! [`BUFFER`] bytes of the stream and [`MAX_ARRAY`] elements of a reply.

use super::codec::MAX_MESSAGE_BYTES;
use super::link::Shared;
use super::status::Counters;
use super::FleetError;
use redis::ConnectionAddr;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

/// The reader's buffer, in bytes: the most of the stream held at once, and
/// the longest line (a status, an error, a length) it accepts.
pub(crate) const BUFFER: usize = 8 * 1024;

/// Elements of one reply, at most (a message has three).
pub(crate) const MAX_ARRAY: usize = 8;

/// The first wait before connecting again; it doubles up to the fleet's
/// reconnect delay.
const MIN_DELAY: Duration = Duration::from_millis(20);

/// One reply as read, bulk strings bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Nil,
    Bulk(Vec<u8>),
    /// A bulk string longer than the reader's limit: read past, not kept;
    /// its length.
    Oversized(u64),
    Array(Vec<Reply>),
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("RESP: {what}"))
}

/// A RESP2 reader that never holds more than [`BUFFER`] bytes of the stream
/// nor a bulk string longer than `limit`.
pub(crate) struct Reader<'a, R> {
    inner: R,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    limit: usize,
    /// Bytes read from the stream so far (the connection is alive while it
    /// grows).
    seen: &'a AtomicU64,
}

impl<'a, R: AsyncRead + Unpin> Reader<'a, R> {
    /// `limit` must leave room in the buffer for a bulk string and its CRLF.
    pub(crate) fn new(inner: R, limit: usize, seen: &'a AtomicU64) -> Self {
        Reader {
            inner,
            buf: vec![0; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            limit: limit.min(BUFFER - 2),
            seen,
        }
    }

    /// Reads more of the stream after what is buffered (moving what is
    /// buffered to the front first, when it reaches the end).
    async fn fill(&mut self) -> io::Result<()> {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.end == self.buf.len() && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            return Err(invalid("a line longer than the reader's buffer"));
        }
        let n = self.inner.read(&mut self.buf[self.end..]).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.end += n;
        // Relaxed: a liveness count, read by the same task.
        self.seen.fetch_add(n as u64, Ordering::Relaxed);
        Ok(())
    }

    /// One line, without its CRLF.
    async fn line(&mut self) -> io::Result<Vec<u8>> {
        // What was searched already, after `start` (moving the buffered
        // bytes to the front keeps it right).
        let mut searched = 0;
        loop {
            let here = &self.buf[self.start..self.end];
            if let Some(at) = here[searched..].windows(2).position(|w| w == b"\r\n") {
                let at = searched + at;
                let line = here[..at].to_vec();
                self.start += at + 2;
                return Ok(line);
            }
            // The last byte may be the CR of a CRLF still to come.
            searched = here.len().saturating_sub(1);
            self.fill().await?;
        }
    }

    /// Reads past `n` bytes of the stream, a buffer at a time.
    async fn skip(&mut self, mut n: u64) -> io::Result<()> {
        loop {
            let here = ((self.end - self.start) as u64).min(n);
            self.start += here as usize;
            n -= here;
            if n == 0 {
                return Ok(());
            }
            self.fill().await?;
        }
    }

    /// A bulk string's `len` bytes and CRLF: kept up to the limit, read
    /// past beyond it.
    async fn bulk(&mut self, len: u64) -> io::Result<Reply> {
        if len > self.limit as u64 {
            // len <= i64::MAX: no overflow.
            self.skip(len + 2).await?;
            return Ok(Reply::Oversized(len));
        }
        let need = len as usize + 2;
        while self.end - self.start < need {
            self.fill().await?;
        }
        let body = &self.buf[self.start..self.start + need];
        if &body[need - 2..] != b"\r\n" {
            return Err(invalid("a bulk string without its CRLF"));
        }
        let bytes = body[..need - 2].to_vec();
        self.start += need;
        Ok(Reply::Bulk(bytes))
    }

    /// Any reply but an array, from its first line.
    async fn scalar(&mut self, line: Vec<u8>) -> io::Result<Reply> {
        let Some((&kind, rest)) = line.split_first() else {
            return Err(invalid("an empty line"));
        };
        let text = || String::from_utf8_lossy(rest).into_owned();
        Ok(match kind {
            b'+' => Reply::Status(text()),
            b'-' => Reply::Error(text()),
            b':' => Reply::Int(number(rest)?),
            b'$' => match number(rest)? {
                -1 => Reply::Nil,
                n if n < 0 => return Err(invalid("a negative length")),
                n => self.bulk(n as u64).await?,
            },
            b'*' => return Err(invalid("an array in an array")),
            _ => return Err(invalid("an unknown type")),
        })
    }

    /// The next reply: a scalar, or an array of at most [`MAX_ARRAY`]
    /// scalars.
    pub(crate) async fn read(&mut self) -> io::Result<Reply> {
        let line = self.line().await?;
        let Some(count) = line.strip_prefix(b"*") else {
            return self.scalar(line).await;
        };
        let count = match number(count)? {
            -1 => return Ok(Reply::Nil),
            n if n < 0 || n as u64 > MAX_ARRAY as u64 => {
                return Err(invalid("an array of an unexpected length"))
            }
            n => n as usize,
        };
        let mut items = Vec::with_capacity(count);
        for _ in 0..count {
            let line = self.line().await?;
            items.push(self.scalar(line).await?);
        }
        Ok(Reply::Array(items))
    }
}

fn number(digits: &[u8]) -> io::Result<i64> {
    std::str::from_utf8(digits)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| invalid("not a number"))
}

/// A command as RESP: an array of bulk strings.
pub(crate) fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Where and as whom the subscription connects: the fleet's URL, as the
/// command connection's client parsed it.
#[derive(Clone)]
pub(crate) struct Endpoint {
    addr: ConnectionAddr,
    username: Option<String>,
    password: Option<String>,
    /// A private CA's PEM for `rediss://` (else the system's roots).
    #[cfg(feature = "fleet-tls")]
    root_certificate: Option<Vec<u8>>,
}

impl Endpoint {
    pub(crate) fn new(
        info: &redis::ConnectionInfo,
        #[cfg(feature = "fleet-tls")] root_certificate: Option<Vec<u8>>,
    ) -> Endpoint {
        let redis = info.redis_settings();
        Endpoint {
            addr: info.addr().clone(),
            username: redis.username().map(str::to_owned),
            password: redis.password().map(str::to_owned),
            #[cfg(feature = "fleet-tls")]
            root_certificate,
        }
    }
}

/// The TLS settings of a `rediss://` subscription: the private CA if one
/// was given, else the system's roots (as the command connection).
#[cfg(feature = "fleet-tls")]
fn tls_config(root: Option<&[u8]>) -> Result<Arc<rustls::ClientConfig>, FleetError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let tls = |e: &dyn std::fmt::Display| FleetError::Redis(format!("TLS: {e}"));
    let mut roots = rustls::RootCertStore::empty();
    match root {
        Some(pem) => {
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| tls(&e))?;
                roots.add(cert).map_err(|e| tls(&e))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                let _ = roots.add(cert);
            }
            if roots.is_empty() {
                let why = found.errors.first().map(ToString::to_string);
                return Err(tls(
                    &why.unwrap_or_else(|| "no root certificate found".into())
                ));
            }
        }
    }
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(&e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The subscription's task: connects, subscribes, reads; connects again
/// whenever the connection ends, after a delay doubling from
/// [`MIN_DELAY`] up to `max_delay` (back to the start once subscribed).
pub(crate) async fn channel_loop(
    shared: Arc<Shared>,
    endpoint: Endpoint,
    inbox: mpsc::Sender<Vec<u8>>,
    max_delay: Duration,
    mut stop: watch::Receiver<()>,
) {
    let mut channel = Channel {
        shared: &shared,
        endpoint,
        inbox,
        #[cfg(feature = "fleet-tls")]
        tls: None,
    };
    let mut delay = MIN_DELAY;
    loop {
        let ended = tokio::select! {
            _ = stop.changed() => return,
            ended = channel.connect() => ended,
        };
        if shared.channel_down(&ended) {
            delay = MIN_DELAY;
        }
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(max_delay.max(MIN_DELAY));
    }
}

struct Channel<'a> {
    shared: &'a Shared,
    endpoint: Endpoint,
    inbox: mpsc::Sender<Vec<u8>>,
    #[cfg(feature = "fleet-tls")]
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Channel<'_> {
    fn timeout(&self) -> Duration {
        self.shared.settings.timeout
    }

    /// One connection, from connecting to its end (always an error).
    async fn connect(&mut self) -> FleetError {
        let timeout = self.timeout();
        let addr = self.endpoint.addr.clone();
        let tcp = |host: String, port: u16| async move {
            let stream =
                tokio::time::timeout(timeout, tokio::net::TcpStream::connect((host, port)))
                    .await
                    .map_err(|_| FleetError::Timeout)?
                    .map_err(io_error)?;
            let _ = stream.set_nodelay(true);
            Ok::<_, FleetError>(stream)
        };
        match addr {
            ConnectionAddr::Tcp(host, port) => match tcp(host, port).await {
                Ok(stream) => self.session(stream).await,
                Err(e) => e,
            },
            #[cfg(feature = "fleet-tls")]
            ConnectionAddr::TcpTls {
                host,
                port,
                insecure,
                ..
            } => {
                if insecure {
                    return FleetError::Redis("#insecure TLS is not supported".into());
                }
                let config = match &self.tls {
                    Some(c) => Arc::clone(c),
                    None => match tls_config(self.endpoint.root_certificate.as_deref()) {
                        Ok(c) => Arc::clone(self.tls.insert(c)),
                        Err(e) => return e,
                    },
                };
                let name = match rustls::pki_types::ServerName::try_from(host.clone()) {
                    Ok(n) => n,
                    Err(e) => return FleetError::Redis(format!("TLS: {e}")),
                };
                let stream = match tcp(host, port).await {
                    Ok(s) => s,
                    Err(e) => return e,
                };
                let connector = tokio_rustls::TlsConnector::from(config);
                match tokio::time::timeout(timeout, connector.connect(name, stream)).await {
                    Ok(Ok(stream)) => self.session(stream).await,
                    Ok(Err(e)) => io_error(e),
                    Err(_) => FleetError::Timeout,
                }
            }
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => {
                match tokio::time::timeout(timeout, tokio::net::UnixStream::connect(path)).await {
                    Ok(Ok(stream)) => self.session(stream).await,
                    Ok(Err(e)) => io_error(e),
                    Err(_) => FleetError::Timeout,
                }
            }
            _ => FleetError::Redis("an address the fleet's channel cannot reach".into()),
        }
    }

    /// Subscribes on `stream`, then reads until the connection ends.
    async fn session<S: AsyncRead + AsyncWrite + Unpin>(&self, stream: S) -> FleetError {
        let (read, mut write) = tokio::io::split(stream);
        let seen = AtomicU64::new(0);
        let mut reader = Reader::new(read, MAX_MESSAGE_BYTES, &seen);
        let handshake = async {
            if let Some(password) = &self.endpoint.password {
                let mut args: Vec<&[u8]> = vec![b"AUTH"];
                if let Some(user) = &self.endpoint.username {
                    args.push(user.as_bytes());
                }
                args.push(password.as_bytes());
                write.write_all(&command(&args)).await.map_err(io_error)?;
                match reader.read().await.map_err(io_error)? {
                    Reply::Status(s) if s == "OK" => {}
                    Reply::Error(e) => return Err(FleetError::Redis(e)),
                    _ => return Err(FleetError::Redis("unexpected answer to AUTH".into())),
                }
            }
            let channel = self.shared.channel.as_bytes();
            write
                .write_all(&command(&[b"SUBSCRIBE", channel]))
                .await
                .map_err(io_error)?;
            loop {
                match reader.read().await.map_err(io_error)? {
                    Reply::Array(items) if is(items.first(), b"subscribe") => return Ok(()),
                    Reply::Error(e) => return Err(FleetError::Redis(e)),
                    _ => {}
                }
            }
        };
        match tokio::time::timeout(self.timeout(), handshake).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return e,
            Err(_) => return FleetError::Timeout,
        }
        self.shared.channel_up();
        let reading = async {
            loop {
                match reader.read().await {
                    Ok(Reply::Error(e)) => return FleetError::Redis(e),
                    Ok(reply) => self.take(reply),
                    Err(e) => return io_error(e),
                }
            }
        };
        // A connection with nothing to read for a timeout is asked for a
        // PONG; silent for another, it is given up (a frozen or unreachable
        // Redis keeps a TCP connection open without a word).
        let every = self.timeout();
        let ping = command(&[b"PING"]);
        let pinging = async {
            // Relaxed (here and below): a count this task alone writes.
            let mut last = seen.load(Ordering::Relaxed);
            let mut asked = false;
            loop {
                tokio::time::sleep(every).await;
                let now = seen.load(Ordering::Relaxed);
                if now != last {
                    (last, asked) = (now, false);
                    continue;
                }
                if asked {
                    return FleetError::Timeout;
                }
                match tokio::time::timeout(every, write.write_all(&ping)).await {
                    Ok(Ok(())) => asked = true,
                    Ok(Err(e)) => return io_error(e),
                    Err(_) => return FleetError::Timeout,
                }
            }
        };
        tokio::select! {
            e = reading => e,
            e = pinging => e,
        }
    }

    /// One reply of the subscription: a message goes to the inbox; an
    /// oversized one, or one beyond the inbox, is dropped and counted.
    fn take(&self, reply: Reply) {
        let Reply::Array(items) = reply else { return };
        let mut items = items.into_iter();
        let (Some(kind), Some(_channel), Some(payload), None) =
            (items.next(), items.next(), items.next(), items.next())
        else {
            return; // a PONG, or not a message
        };
        if !is(Some(&kind), b"message") {
            return; // a subscription's confirmation
        }
        let counters = &self.shared.counters;
        match payload {
            Reply::Bulk(bytes) => {
                if self.inbox.try_send(bytes).is_err() {
                    Counters::bump(&counters.dropped);
                }
            }
            Reply::Oversized(_) => {
                Counters::bump(&counters.dropped);
                Counters::bump(&counters.oversized);
            }
            _ => Counters::bump(&counters.dropped),
        }
    }
}

fn is(item: Option<&Reply>, word: &[u8]) -> bool {
    matches!(item, Some(Reply::Bulk(b)) if b.eq_ignore_ascii_case(word))
}

fn io_error(e: io::Error) -> FleetError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        FleetError::Redis("connection closed by the server".into())
    } else {
        FleetError::Redis(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads every reply of `input`, fed `chunk` bytes at a time.
    fn replies(input: &[u8], limit: usize, chunk: usize) -> (Vec<Reply>, Option<io::ErrorKind>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (mut tx, rx) = tokio::io::duplex(chunk.max(1));
            let input = input.to_vec();
            let feed = async move {
                for piece in input.chunks(chunk.max(1)) {
                    if tx.write_all(piece).await.is_err() {
                        return;
                    }
                }
            };
            let seen = AtomicU64::new(0);
            let read = async {
                let mut reader = Reader::new(rx, limit, &seen);
                let mut out = Vec::new();
                loop {
                    match reader.read().await {
                        Ok(r) => out.push(r),
                        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return (out, None),
                        Err(e) => return (out, Some(e.kind())),
                    }
                }
            };
            let ((), out) = tokio::join!(feed, read);
            out
        })
    }

    fn message(payload: &[u8]) -> Vec<u8> {
        let mut out = b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n".to_vec();
        out.extend_from_slice(format!("${}\r\n", payload.len()).as_bytes());
        out.extend_from_slice(payload);
        out.extend_from_slice(b"\r\n");
        out
    }

    #[test]
    fn messages_up_to_the_limit_are_kept_longer_ones_are_read_past() {
        let big = vec![b'x'; 3 * BUFFER + 17];
        let mut input = message(b"hello");
        input.extend(message(&big));
        input.extend(message(&[b'y'; 512]));
        input.extend(b"+OK\r\n:42\r\n$-1\r\n*-1\r\n-ERR no\r\n");
        for chunk in [1, 7, 4096, 100_000] {
            let (out, error) = replies(&input, 512, chunk);
            assert_eq!(error, None, "chunk {chunk}");
            let msg = |p: Reply| {
                Reply::Array(vec![
                    Reply::Bulk(b"message".to_vec()),
                    Reply::Bulk(b"ch".to_vec()),
                    p,
                ])
            };
            assert_eq!(
                out,
                [
                    msg(Reply::Bulk(b"hello".to_vec())),
                    msg(Reply::Oversized(big.len() as u64)),
                    msg(Reply::Bulk(vec![b'y'; 512])),
                    Reply::Status("OK".into()),
                    Reply::Int(42),
                    Reply::Nil,
                    Reply::Nil,
                    Reply::Error("ERR no".into()),
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn malformed_input_is_an_error_never_a_panic() {
        let cases: [&[u8]; 9] = [
            b"*2\r\n*1\r\n:1\r\n",           // nested array
            b"*9\r\n",                       // too many elements
            b"*-5\r\n",                      // negative length
            b"$-2\r\n",                      // negative length
            b"$3\r\nabcd\r\n",               // no CRLF after the bulk
            b"\r\n",                         // empty line
            b"?what\r\n",                    // unknown type
            b":12x\r\n",                     // not a number
            b"$99999999999999999999999\r\n", // a length beyond i64
        ];
        for case in cases {
            let (_, error) = replies(case, 512, 3);
            assert_eq!(error, Some(io::ErrorKind::InvalidData), "{case:?}");
        }
        // A line longer than the buffer.
        let mut long = b"+".to_vec();
        long.extend(vec![b'a'; BUFFER + 1]);
        let (_, error) = replies(&long, 512, 1000);
        assert_eq!(error, Some(io::ErrorKind::InvalidData));
        // A huge length with nothing behind it: an end of stream, nothing held.
        let (out, error) = replies(format!("${}\r\nab", i64::MAX).as_bytes(), 512, 2);
        assert_eq!((out, error), (vec![], None));
        // Non-UTF-8 after the type byte.
        let (out, _) = replies(b"-\xff\xfe\r\n", 512, 1);
        assert_eq!(out, [Reply::Error("\u{fffd}\u{fffd}".into())]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

        /// Whatever the server sends, in whatever pieces: replies or an
        /// error, never a panic, and no bulk string over the limit kept.
        #[test]
        fn arbitrary_input_never_panics(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
            chunk in 1usize..64,
            limit in 0usize..40,
        ) {
            // Mostly RESP-looking: every other piece a valid reply.
            let mut input = Vec::new();
            for (i, piece) in bytes.chunks(23).enumerate() {
                if i % 2 == 0 {
                    input.extend(message(piece));
                } else {
                    input.extend_from_slice(piece);
                }
            }
            let (out, _) = replies(&input, limit, chunk);
            for reply in out {
                let items = match reply {
                    Reply::Array(items) => items,
                    other => vec![other],
                };
                for item in items {
                    if let Reply::Bulk(b) = item {
                        proptest::prop_assert!(b.len() <= limit);
                    }
                }
            }
        }
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        assert_eq!(
            command(&[b"SUBSCRIBE", b"fusebox:{ns}:events"]),
            b"*2\r\n$9\r\nSUBSCRIBE\r\n$19\r\nfusebox:{ns}:events\r\n"
        );
    }
}
