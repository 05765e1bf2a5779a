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
//! Redis's own Lua scripts append `MILLIS` to trip messages, so the format
//! stays one a script can write.

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
        let millis = match self.kind {
            Kind::Trip { remaining } => millis(remaining),
            _ => 0,
        };
        format!(
            "{MAGIC}|{}|{millis}|{}",
            self.kind.as_str(),
            tail(&self.namespace, &self.node, &self.breaker)
        )
        .into_bytes()
    }
}

/// `NAMESPACE|NODE|BREAKER`: what follows the millis, which a script that
/// computes the millis itself puts in front of it.
pub(crate) fn tail(namespace: &str, node: &str, breaker: &str) -> String {
    format!("{namespace}|{node}|{breaker}")
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
    let mut fields = text.splitn(6, '|');
    let mut next = |what| fields.next().ok_or(DecodeError::new(what));
    if next("empty")? != MAGIC {
        return Err(DecodeError::new("not a fusebox message (bad magic)"));
    }
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
