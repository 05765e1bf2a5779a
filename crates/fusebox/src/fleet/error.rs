//! What can go wrong when joining a fleet, sharing a breaker or sending a
//! control message.

use std::fmt;

/// Why a fleet call failed.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use fusebox::fleet::{Fleet, FleetError};
/// let err = Fleet::builder().redis_url("redis://127.0.0.1:1").namespace("a b").connect().await.unwrap_err();
/// assert!(matches!(err, FleetError::Config { field: "namespace", .. }));
/// assert_eq!(err.to_string(), "fleet: namespace = \"a b\": use 1 to 64 of A-Z a-z 0-9 . _ : -");
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetError {
    /// A builder setting is missing or invalid.
    Config {
        /// The builder method (`redis_url`, `namespace`, `node`, `sync_every`, ...).
        field: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// [`Fleet::share`](super::Fleet::share) was given a breaker built
    /// without a name: the fleet shares breakers by name.
    Unnamed,
    /// The breaker's name cannot be shared (empty, control characters, or
    /// longer than [`MAX_NAME_BYTES`](super::MAX_NAME_BYTES)).
    BadName {
        /// The name.
        name: String,
    },
    /// Another breaker of this name is already shared by this node.
    AlreadyShared {
        /// The name.
        name: String,
    },
    /// Redis did not answer within the fleet's timeout (it is down, stopped,
    /// or unreachable): the control message was not sent.
    Timeout,
    /// Redis answered with an error, or the connection failed.
    Redis(String),
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::Config {
                field,
                value,
                problem,
            } => write!(f, "fleet: {field} = {value:?}: {problem}"),
            FleetError::Unnamed => f.write_str(
                "fleet: the breaker has no name (give one with CircuitBreaker::builder().name(..))",
            ),
            FleetError::BadName { name } => write!(
                f,
                "fleet: breaker name {name:?} cannot be shared (1 to 256 bytes, no control characters)"
            ),
            FleetError::AlreadyShared { name } => {
                write!(f, "fleet: another breaker named {name:?} is already shared by this node")
            }
            FleetError::Timeout => f.write_str("fleet: Redis did not answer in time"),
            FleetError::Redis(e) => write!(f, "fleet: Redis: {e}"),
        }
    }
}

impl std::error::Error for FleetError {}

impl From<redis::RedisError> for FleetError {
    fn from(e: redis::RedisError) -> Self {
        FleetError::Redis(e.to_string())
    }
}
