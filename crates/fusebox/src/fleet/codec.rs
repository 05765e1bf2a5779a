//! The fleet's channel messages: one small text line each, decoded by one
//! function that never panics (fuzzed by a proptest on arbitrary bytes).
//!
//! A message is `fb1|KIND|MILLIS|NAMESPACE|NODE|BREAKER`:
//!
//! - `KIND` is `trip`, `close`, `force_open`, `disable` or `reset`;
//! - `MILLIS` is the rest of the open period for a `trip` (a duration, never a
//!   time of day: no clock is compared between machines), `0` otherwise;
//! - `NAMESPACE` and `NODE` are 1 to 64 bytes of `A-Z a-z 0-9 . _ : -`;
//! - `BREAKER` is the breaker's name, 1 to [`MAX_NAME_BYTES`] bytes of UTF-8
//!   (it may contain `|`: it is the last field).
//!
//! A fleet with a key ([`FleetKey`]) signs every message:
//! `fb1s|MAC|KIND|MILLIS|NAMESPACE|NODE|BREAKER`, where `MAC` is the
//! HMAC-SHA256 of what follows it (`KIND|...|BREAKER`), in lowercase hex.

use std::fmt;
use std::time::Duration;

/// The longest message [`decode`] accepts, in bytes; longer ones are dropped.
pub const MAX_MESSAGE_BYTES: usize = 512;

/// The longest breaker name a fleet shares, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

/// The longest namespace or node id, in bytes.
pub const MAX_ID_BYTES: usize = 64;

/// The longest open period a message may carry (a year); longer is malformed.
const MAX_MILLIS: u64 = 365 * 24 * 3600 * 1000;

const MAGIC: &str = "fb1";

/// The magic of a signed message.
const SIGNED: &str = "fb1s";

/// The shortest fleet key, in bytes.
pub const MIN_KEY_BYTES: usize = 16;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The fleet's shared secret: with it, a node signs every message it sends
/// (HMAC-SHA256) and drops every message that is not signed with it. Its
/// bytes are never shown (`Debug` prints `FleetKey(..)`).
///
/// The key authenticates the fleet, not each node: any holder may speak
/// for any node id. A replayed message (signed, genuine, old) is undone by
/// the next sync, which reads the fleet's state from Redis.
///
/// # Examples
///
/// ```
/// use fusebox::fleet::{FleetKey, Kind, Message};
/// let key = FleetKey::new("a shared secret of 16+ bytes")?;
/// let m = Message::new("shop", "web-1", "db", Kind::Close);
/// let signed = key.sign(&m);
/// assert_eq!(key.verify(&signed)?, m);
/// assert!(key.verify(&m.encode()).is_err(), "unsigned");
/// assert!(FleetKey::new("another secret, 16+").unwrap().verify(&signed).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct FleetKey {
    mac: HmacSha256,
}

impl fmt::Debug for FleetKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FleetKey(..)")
    }
}

/// A fleet key shorter than [`MIN_KEY_BYTES`].
///
/// # Examples
///
/// ```
/// let err = fusebox::fleet::FleetKey::new("short").unwrap_err();
/// assert_eq!(err.to_string(), "fleet key: 5 bytes, at least 16 needed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyError {
    len: usize,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fleet key: {} bytes, at least {MIN_KEY_BYTES} needed",
            self.len
        )
    }
}

impl std::error::Error for KeyError {}

impl KeyError {
    /// The secret's length, in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::fleet::FleetKey::new("short").unwrap_err().len(), 5);
    /// ```
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }
}

impl FleetKey {
    /// A key from a shared secret of at least [`MIN_KEY_BYTES`] bytes
    /// (e.g. 32 random bytes, or a long passphrase, from a secret store or
    /// an environment variable).
    ///
    /// # Errors
    ///
    /// [`KeyError`] if the secret is shorter.
    ///
    /// # Examples
    ///
    /// ```
    /// let key = fusebox::fleet::FleetKey::new([7u8; 32])?;
    /// # Ok::<(), fusebox::fleet::KeyError>(())
    /// ```
    pub fn new(secret: impl AsRef<[u8]>) -> Result<FleetKey, KeyError> {
        use hmac::Mac;
        let secret = secret.as_ref();
        if secret.len() < MIN_KEY_BYTES {
            return Err(KeyError { len: secret.len() });
        }
        // HMAC takes a key of any length: never an error here.
        let mac = HmacSha256::new_from_slice(secret).map_err(|_| KeyError { len: 0 })?;
        Ok(FleetKey { mac })
    }

    fn tag(&self, body: &[u8]) -> HmacSha256 {
        use hmac::Mac;
        let mut mac = self.mac.clone();
        mac.update(body);
        mac
    }

    /// The message's bytes on the channel, signed.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::{FleetKey, Kind, Message};
    /// let key = FleetKey::new("a shared secret of 16+ bytes")?;
    /// let signed = key.sign(&Message::new("shop", "web-1", "db", Kind::Reset));
    /// assert!(signed.starts_with(b"fb1s|"));
    /// assert!(signed.ends_with(b"|reset|0|shop|web-1|db"));
    /// # Ok::<(), fusebox::fleet::KeyError>(())
    /// ```
    pub fn sign(&self, message: &Message) -> Vec<u8> {
        use hmac::Mac;
        let body = message.body();
        let tag = self.tag(body.as_bytes()).finalize().into_bytes();
        let mut out = String::with_capacity(SIGNED.len() + 2 + 2 * tag.len() + body.len());
        out.push_str(SIGNED);
        out.push('|');
        for b in tag {
            out.push_str(&format!("{b:02x}"));
        }
        out.push('|');
        out.push_str(&body);
        out.into_bytes()
    }

    /// Decodes a message signed with this key. Never panics, whatever the
    /// bytes; the signature is compared in constant time.
    ///
    /// # Errors
    ///
    /// A [`DecodeError`]: what [`decode`] refuses, or the message is not
    /// signed, or not with this key (or was altered).
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::fleet::{FleetKey, Kind, Message};
    /// let key = FleetKey::new("a shared secret of 16+ bytes")?;
    /// let forged = Message::new("shop", "web-1", "db", Kind::Trip { remaining: std::time::Duration::from_secs(60) });
    /// assert_eq!(key.verify(&forged.encode()).unwrap_err().problem(), "not signed");
    /// # Ok::<(), fusebox::fleet::KeyError>(())
    /// ```
    pub fn verify(&self, bytes: &[u8]) -> Result<Message, DecodeError> {
        use hmac::Mac;
        let message = decode(bytes)?;
        let text = std::str::from_utf8(bytes).map_err(|_| DecodeError::new("not UTF-8"))?;
        let Some(rest) = text.strip_prefix(SIGNED).and_then(|r| r.strip_prefix('|')) else {
            return Err(DecodeError::new("not signed"));
        };
        let (hex, body) = rest
            .split_once('|')
            .ok_or(DecodeError::new("no signature"))?;
        let tag = unhex(hex).ok_or(DecodeError::new("bad signature"))?;
        self.tag(body.as_bytes())
            .verify_slice(&tag)
            .map_err(|_| DecodeError::new("bad signature"))?;
        Ok(message)
    }
}

/// 64 lowercase hex digits as 32 bytes (lowercase only: one spelling per
/// signature).
fn unhex(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? * 16 + digit(pair[1])?;
    }
    Some(out)
}

/// What a message asks every node to do with one breaker.
///
/// # Examples
///
/// ```
/// use fusebox::fleet::Kind;
/// assert_eq!(Kind::ForceOpen.as_str(), "force_open");
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The fleet's breaker opened: open for `remaining`, from receipt.
    Trip {
        /// The rest of the open period.
        remaining: Duration,
    },
    /// A probe succeeded on the sending node: close.
    Close,
    /// `Fleet::force_open`: reject everything until a reset.
    ForceOpen,
    /// `Fleet::disable`: admit everything, count nothing, until a reset.
    Disable,
    /// `Fleet::reset`: closed with empty counters.
    Reset,
}

impl Kind {
    /// The kind's name on the wire.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::fleet::Kind::Reset.as_str(), "reset");
    /// ```
    pub const fn as_str(&self) -> &'static str {
        match self {
            Kind::Trip { .. } => "trip",
            Kind::Close => "close",
            Kind::ForceOpen => "force_open",
            Kind::Disable => "disable",
            Kind::Reset => "reset",
        }
    }
}

/// One message on a fleet's channel.
///
/// # Examples
///
/// ```
/// use fusebox::fleet::{decode, Kind, Message};
/// use std::time::Duration;
///
/// let m = Message::new("shop", "web-1", "payments", Kind::Trip { remaining: Duration::from_millis(2500) });
/// let bytes = m.encode();
/// assert_eq!(bytes, b"fb1|trip|2500|shop|web-1|payments");
/// assert_eq!(decode(&bytes)?, m);
/// # Ok::<(), fusebox::fleet::DecodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The fleet's namespace.
    pub namespace: String,
    /// The node that sent it.
    pub node: String,
    /// The breaker's name.
    pub breaker: String,
    /// What to do.
    pub kind: Kind,
}

impl Message {
    /// A message; see [`Message::encode`] for its bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let m = fusebox::fleet::Message::new("shop", "web-1", "db", fusebox::fleet::Kind::Close);
    /// assert_eq!(m.breaker, "db");
    /// ```
    pub fn new(
        namespace: impl Into<String>,
        node: impl Into<String>,
        breaker: impl Into<String>,
        kind: Kind,
    ) -> Message {
        Message {
            namespace: namespace.into(),
            node: node.into(),
            breaker: breaker.into(),
            kind,
        }
    }

    /// The message's bytes on the channel.
    ///
    /// # Examples
    ///
    /// ```
    /// let m = fusebox::fleet::Message::new("shop", "web-1", "db", fusebox::fleet::Kind::Reset);
    /// assert_eq!(m.encode(), b"fb1|reset|0|shop|web-1|db");
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        format!("{MAGIC}|{}", self.body()).into_bytes()
    }

    /// `KIND|MILLIS|NAMESPACE|NODE|BREAKER`: what follows the magic (and
    /// what a signature covers).
    fn body(&self) -> String {
        let millis = match self.kind {
            Kind::Trip { remaining } => millis(remaining),
            _ => 0,
        };
        format!(
            "{}|{millis}|{}|{}|{}",
            self.kind.as_str(),
            self.namespace,
            self.node,
            self.breaker
        )
    }

    /// The bytes on the channel: signed with `key` if the fleet has one.
    pub(crate) fn encode_with(&self, key: Option<&FleetKey>) -> Vec<u8> {
        key.map_or_else(|| self.encode(), |k| k.sign(self))
    }
}

/// A duration as whole milliseconds on the wire, rounded up (a trip of 0.4 ms
/// still opens), capped at a year.
pub(crate) fn millis(d: Duration) -> u64 {
    let ms = d.as_nanos().div_ceil(1_000_000);
    u64::try_from(ms).unwrap_or(u64::MAX).min(MAX_MILLIS)
}

/// Why bytes on the channel are not a fleet message. Such messages are
/// dropped and counted ([`FleetStatus::messages_dropped`](super::FleetStatus::messages_dropped)).
///
/// # Examples
///
/// ```
/// let err = fusebox::fleet::decode(b"hello").unwrap_err();
/// assert_eq!(err.to_string(), "fleet message: not a fusebox message (bad magic)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError {
    problem: &'static str,
}

impl DecodeError {
    fn new(problem: &'static str) -> DecodeError {
        DecodeError { problem }
    }

    /// What was wrong, in a few words.
    ///
    /// # Examples
    ///
    /// ```
    /// let err = fusebox::fleet::decode(&[b'x'; 4096]).unwrap_err();
    /// assert_eq!(err.problem(), "longer than 512 bytes");
    /// ```
    pub fn problem(&self) -> &'static str {
        self.problem
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fleet message: {}", self.problem)
    }
}

impl std::error::Error for DecodeError {}

/// Whether `id` is a valid namespace or node id: 1 to 64 bytes of
/// `A-Z a-z 0-9 . _ : -`.
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

/// Whether `name` may be shared: 1 to [`MAX_NAME_BYTES`] bytes, no control
/// characters.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME_BYTES && !name.chars().any(char::is_control)
}

/// Decodes one message from the channel. Never panics, whatever the bytes.
///
/// # Errors
///
/// A [`DecodeError`] saying what was wrong: too long, not UTF-8, wrong magic
/// or kind, a bad number, a bad namespace, node or breaker name.
///
/// # Examples
///
/// ```
/// use fusebox::fleet::{decode, Kind};
/// let m = decode(b"fb1|force_open|0|shop|web-2|payments")?;
/// assert_eq!((m.node.as_str(), m.kind), ("web-2", Kind::ForceOpen));
/// assert!(decode(b"fb1|trip|abc|shop|web-2|payments").is_err());
/// # Ok::<(), fusebox::fleet::DecodeError>(())
/// ```
pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(DecodeError::new("longer than 512 bytes"));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| DecodeError::new("not UTF-8"))?;
    let (magic, rest) = match text.split_once('|') {
        Some((magic, rest)) => (magic, Some(rest)),
        None => (text, None),
    };
    let body = match magic {
        MAGIC => rest,
        // Signed: the signature is checked by `FleetKey::verify`; a node
        // without a key takes the message as it is.
        SIGNED => Some(
            rest.and_then(|r| r.split_once('|'))
                .ok_or(DecodeError::new("no signature"))?
                .1,
        ),
        _ => return Err(DecodeError::new("not a fusebox message (bad magic)")),
    };
    let mut fields = body.into_iter().flat_map(|b| b.splitn(5, '|'));
    let mut next = |what| fields.next().ok_or(DecodeError::new(what));
    let kind = next("no kind")?;
    let number = next("no millis")?;
    let namespace = next("no namespace")?;
    let node = next("no node")?;
    let breaker = next("no breaker name")?;
    if number.is_empty() || number.len() > 20 || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(DecodeError::new("millis is not a number"));
    }
    let ms: u64 = number
        .parse()
        .map_err(|_| DecodeError::new("millis is not a number"))?;
    if ms > MAX_MILLIS {
        return Err(DecodeError::new("open period longer than a year"));
    }
    let kind = match kind {
        "trip" => Kind::Trip {
            remaining: Duration::from_millis(ms),
        },
        "close" => Kind::Close,
        "force_open" => Kind::ForceOpen,
        "disable" => Kind::Disable,
        "reset" => Kind::Reset,
        _ => return Err(DecodeError::new("unknown kind")),
    };
    if !valid_id(namespace) {
        return Err(DecodeError::new("bad namespace"));
    }
    if !valid_id(node) {
        return Err(DecodeError::new("bad node id"));
    }
    if !valid_name(breaker) {
        return Err(DecodeError::new("bad breaker name"));
    }
    Ok(Message::new(namespace, node, breaker, kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kinds() -> impl Strategy<Value = Kind> {
        prop_oneof![
            (0..MAX_MILLIS).prop_map(|ms| Kind::Trip {
                remaining: Duration::from_millis(ms)
            }),
            Just(Kind::Close),
            Just(Kind::ForceOpen),
            Just(Kind::Disable),
            Just(Kind::Reset),
        ]
    }

    proptest! {
        /// The decoder is total: arbitrary bytes give a message or an error.
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..700)) {
            if let Ok(m) = decode(&bytes) {
                // Whatever it accepts is a valid message that encodes back
                // to a message decoding to the same thing.
                prop_assert!(valid_id(&m.namespace) && valid_id(&m.node) && valid_name(&m.breaker));
                prop_assert_eq!(decode(&m.encode()), Ok(m));
            }
        }

        /// Near-misses of real messages (one byte changed, cut short) too.
        #[test]
        fn mutated_messages_never_panic(
            kind in kinds(),
            name in "[a-z|é ]{1,40}",
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut bytes = Message::new("ns", "node-1", name, kind).encode();
            let i = at.index(bytes.len());
            bytes[i] = byte;
            let _ = decode(&bytes);
            bytes.truncate(cut.index(bytes.len()));
            let _ = decode(&bytes);
        }

        #[test]
        fn round_trip(kind in kinds(), ns in "[a-z0-9._:-]{1,64}", node in "[A-Z0-9-]{1,64}", name in "\\PC{1,60}") {
            prop_assume!(valid_name(&name));
            let m = Message::new(ns, node, name, kind);
            prop_assert_eq!(decode(&m.encode()), Ok(m));
        }
    }

    proptest! {
        #[test]
        fn signed_messages_round_trip_and_any_change_is_refused(
            kind in kinds(),
            name in "[a-z|é ]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let key = FleetKey::new("fleet key for the proptest").unwrap();
            let m = Message::new("ns", "node-1", name, kind);
            let signed = key.sign(&m);
            prop_assert_eq!(key.verify(&signed), Ok(m.clone()));
            // A node without the key reads it as it is.
            prop_assert_eq!(decode(&signed), Ok(m));
            let mut bytes = signed;
            let i = at.index(bytes.len());
            bytes[i] ^= flip;
            prop_assert!(key.verify(&bytes).is_err());
        }
    }

    #[test]
    fn a_keyed_node_refuses_unsigned_and_foreign_messages() {
        let key = FleetKey::new("0123456789abcdef").unwrap();
        let other = FleetKey::new("0123456789abcdeF").unwrap();
        let trip = Message::new(
            "ns",
            "evil",
            "payments",
            Kind::Trip {
                remaining: Duration::from_secs(31_536_000),
            },
        );
        assert_eq!(
            key.verify(&trip.encode()).unwrap_err().problem(),
            "not signed"
        );
        assert_eq!(
            key.verify(&other.sign(&trip)).unwrap_err().problem(),
            "bad signature"
        );
        assert_eq!(
            key.verify(b"fb1s|00|trip|1|a|b|c").unwrap_err().problem(),
            "bad signature"
        );
        assert_eq!(key.verify(b"fb1s").unwrap_err().problem(), "no signature");
        // One spelling per signature: lowercase hex only.
        let signed = String::from_utf8(key.sign(&trip)).unwrap();
        let (mac, body) = signed["fb1s|".len()..].split_once('|').unwrap();
        let upper = format!("fb1s|{}|{body}", mac.to_uppercase());
        assert_eq!(
            key.verify(upper.as_bytes()).unwrap_err().problem(),
            "bad signature"
        );
        // The longest message still fits, signed.
        let long = Message::new(
            "n".repeat(MAX_ID_BYTES),
            "d".repeat(MAX_ID_BYTES),
            "b".repeat(MAX_NAME_BYTES),
            Kind::ForceOpen,
        );
        assert_eq!(key.verify(&key.sign(&long)), Ok(long));
        assert_eq!(format!("{key:?}"), "FleetKey(..)");
        // Standard HMAC-SHA256 (the same as Python's `hmac.new(key, body,
        // hashlib.sha256).hexdigest()`), so other tools can sign and check.
        let known = FleetKey::new("the fuzzer's fleet key").unwrap();
        let trip = Message::new(
            "shop",
            "web-1",
            "payments",
            Kind::Trip {
                remaining: Duration::from_secs(5),
            },
        );
        assert_eq!(
            String::from_utf8(known.sign(&trip)).unwrap(),
            "fb1s|074ac37ad03cce20e5a68d87128cc962d641abae163fefb25aa4ad93c242fabf|trip|5000|shop|web-1|payments"
        );
        assert_eq!(
            FleetKey::new([0u8; 15]).unwrap_err().to_string(),
            "fleet key: 15 bytes, at least 16 needed"
        );
    }

    #[test]
    fn malformed_messages_say_why() {
        let cases: [(&[u8], &str); 9] = [
            (b"", "not a fusebox message (bad magic)"),
            (b"fb1|trip", "no millis"),
            (b"fb2|trip|1|a|b|c", "not a fusebox message (bad magic)"),
            (b"fb1|boom|1|a|b|c", "unknown kind"),
            (b"fb1|trip|-1|a|b|c", "millis is not a number"),
            (
                b"fb1|trip|99999999999999999999|a|b|c",
                "millis is not a number",
            ),
            (b"fb1|trip|1|a b|b|c", "bad namespace"),
            (b"fb1|trip|1|a||c", "bad node id"),
            (b"fb1|trip|1|a|b|c\n", "bad breaker name"),
        ];
        for (bytes, problem) in cases {
            assert_eq!(decode(bytes).unwrap_err().problem(), problem, "{bytes:?}");
        }
        assert_eq!(
            decode(b"fb1|trip|31536000001|a|b|c").unwrap_err().problem(),
            "open period longer than a year"
        );
        assert_eq!(decode(&[0xff, 0xfe]).unwrap_err().problem(), "not UTF-8");
    }

    #[test]
    fn millis_round_up_and_cap() {
        assert_eq!(millis(Duration::from_micros(400)), 1);
        assert_eq!(millis(Duration::from_millis(7)), 7);
        assert_eq!(millis(Duration::MAX), MAX_MILLIS);
    }

    #[test]
    fn breaker_names_may_contain_bars() {
        let m = Message::new("ns", "n", "a|b", Kind::Close);
        assert_eq!(decode(&m.encode()).unwrap().breaker, "a|b");
    }
}
