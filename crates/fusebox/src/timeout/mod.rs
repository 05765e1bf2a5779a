//! Timeout: a deadline around an async call (feature `tokio`).
//!
//! A timeout bounds how long one call may take. With the `tokio` feature,
//! `timeout()` and `Timeout` wrap a future: when the deadline passes first,
//! the future is dropped (cancelled) and the caller gets [`Elapsed`], an error
//! of its own type, never confused with the call's own error. Inside a
//! breaker, a timed-out call is a failure like any other:
//!
//! ```
//! # #[cfg(feature = "tokio")]
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), fusebox::ConfigError> {
//! use fusebox::{CircuitBreaker, State, Timeout};
//! use std::time::Duration;
//!
//! let breaker = CircuitBreaker::builder().consecutive_failures(1).build()?;
//! let deadline = Timeout::new(Duration::from_millis(100));
//! let slow = || async {
//!     tokio::time::sleep(Duration::from_secs(5)).await;
//!     Ok::<_, std::io::Error>("too late")
//! };
//! let r = breaker.call_async(|| deadline.call(slow())).await;
//! assert!(r.unwrap_err().into_inner().unwrap().is_elapsed());
//! assert_eq!(breaker.state(), State::Open);
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "tokio"))]
//! # fn main() {}
//! ```
//!
//! # Why there is no timeout for blocking calls
//!
//! An async call can be stopped at its next `.await`: dropping the future
//! cancels it. A blocking call cannot be stopped from outside: Rust has no
//! safe way to kill a thread, and a thread blocked in `read()` does not look up
//! until the read returns. A "sync timeout" could only stop *waiting* (run the
//! call on another thread and give up on it), which leaves that thread, its
//! socket and the downstream's work busy anyway; under load those abandoned
//! calls pile up, which is the very failure seed 001 describes. So instead:
//!
//! 1. Put the deadline where the blocking happens: the client's own connect
//!    and read timeouts (`TcpStream::set_read_timeout`, your HTTP client's
//!    `timeout`, your database pool's statement timeout). Only the code that
//!    blocks can stop blocking.
//! 2. Put a [`Bulkhead`](crate::Bulkhead) around the dependency, so however
//!    long its calls hang, they can hold at most `limit` threads.
//! 3. Put a [`CircuitBreaker`](crate::CircuitBreaker) with a slow-call policy
//!    (`.slow_calls(threshold, rate)`) around it, so when calls start to hang
//!    the breaker opens and callers fail fast instead of joining the queue.
//!
//! The sync [`Pipeline`](crate::Pipeline) path follows this: its timeout
//! cannot interrupt a blocking call, but a call that returns after its
//! deadline is reported as timed out (and counted as a failure by the breaker).

use std::fmt;
use std::time::Duration;

/// The deadline passed before the call finished.
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "tokio")]
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use std::time::Duration;
/// let never = std::future::pending::<()>();
/// let e = fusebox::timeout(Duration::from_secs(1), never).await.unwrap_err();
/// assert_eq!(e.after(), Duration::from_secs(1));
/// assert_eq!(e.to_string(), "call timed out after 1s");
/// # }
/// # #[cfg(not(feature = "tokio"))]
/// # fn main() {}
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed {
    after: Duration,
}

impl Elapsed {
    /// An `Elapsed` for a deadline of `after` (for code that enforces its own
    /// deadlines and wants to report them the fusebox way).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = fusebox::Elapsed::new(Duration::from_millis(250));
    /// assert_eq!(e.after(), Duration::from_millis(250));
    /// ```
    pub fn new(after: Duration) -> Self {
        Elapsed { after }
    }

    /// The deadline that passed.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(fusebox::Elapsed::new(Duration::from_secs(2)).after(), Duration::from_secs(2));
    /// ```
    pub fn after(&self) -> Duration {
        self.after
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call timed out after {:?}", self.after)
    }
}

impl std::error::Error for Elapsed {}

/// The error of `Timeout::call` (feature `tokio`): the deadline passed, or the call failed.
///
/// # Examples
///
/// ```
/// use fusebox::{Elapsed, TimeoutError};
/// use std::time::Duration;
///
/// let e: TimeoutError<&str> = TimeoutError::Elapsed(Elapsed::new(Duration::from_secs(1)));
/// assert!(e.is_elapsed());
/// assert_eq!(e.to_string(), "call timed out after 1s");
/// let e: TimeoutError<&str> = TimeoutError::Inner("refused");
/// assert_eq!(e.into_inner(), Some("refused"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutError<E> {
    /// The deadline passed; the call was dropped (cancelled).
    Elapsed(Elapsed),
    /// The call finished in time with this error.
    Inner(E),
}

impl<E> TimeoutError<E> {
    /// Whether the deadline passed.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!fusebox::TimeoutError::Inner(()).is_elapsed());
    /// ```
    pub fn is_elapsed(&self) -> bool {
        matches!(self, TimeoutError::Elapsed(_))
    }

    /// The call's own error, if it finished in time.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(fusebox::TimeoutError::Inner(3).into_inner(), Some(3));
    /// ```
    pub fn into_inner(self) -> Option<E> {
        match self {
            TimeoutError::Inner(e) => Some(e),
            TimeoutError::Elapsed(_) => None,
        }
    }
}

impl<E: fmt::Display> fmt::Display for TimeoutError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeoutError::Elapsed(e) => fmt::Display::fmt(e, f),
            TimeoutError::Inner(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for TimeoutError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TimeoutError::Elapsed(_) => None,
            TimeoutError::Inner(e) => Some(e),
        }
    }
}

#[cfg(all(feature = "tokio", feature = "tower"))]
pub(crate) use with_tokio::Deadline;
#[cfg(feature = "tokio")]
pub use with_tokio::{timeout, Timeout};

#[cfg(feature = "tokio")]
mod with_tokio {
    use super::{Elapsed, TimeoutError};
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    pin_project_lite::pin_project! {
        /// `future` with a deadline `after` from its creation. The timer is
        /// armed only when the future first waits: one that is ready at its
        /// first poll (the closed path of a healthy, in-process service)
        /// reads the clock once and never touches the runtime's timer. An
        /// answer ready at the deadline wins the tie. A deadline past what
        /// an `Instant` holds is none (as with `tokio::time::timeout`).
        pub(crate) struct Deadline<F> {
            #[pin]
            future: F,
            #[pin]
            sleep: Option<tokio::time::Sleep>,
            // The start, not the deadline: the sum is left to the slow path.
            start: tokio::time::Instant,
            after: Duration,
        }
    }

    impl<F> Deadline<F> {
        /// `future` bounded by `after` from now (tokio's clock: paused time
        /// in tests is followed).
        pub(crate) fn new(after: Duration, future: F) -> Self {
            Deadline {
                future,
                sleep: None,
                start: tokio::time::Instant::now(),
                after,
            }
        }

        /// When it times out (`None`: never, `after` being past what an
        /// `Instant` holds).
        #[cfg(feature = "tower")]
        pub(crate) fn deadline(&self) -> Option<tokio::time::Instant> {
            self.start.checked_add(self.after)
        }

        /// The timeout it was given.
        #[cfg(feature = "tower")]
        pub(crate) fn after(&self) -> Duration {
            self.after
        }
    }

    impl<F: Future> Future for Deadline<F> {
        type Output = Result<F::Output, Elapsed>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let mut this = self.project();
            if let Poll::Ready(v) = this.future.poll(cx) {
                return Poll::Ready(Ok(v));
            }
            if this.sleep.is_none() {
                // Armed once; a deadline past what an Instant holds is none.
                let Some(deadline) = this.start.checked_add(*this.after) else {
                    return Poll::Pending;
                };
                this.sleep.set(Some(tokio::time::sleep_until(deadline)));
            }
            let Some(mut sleep) = this.sleep.as_pin_mut() else {
                return Poll::Pending;
            };
            let fired = sleep.as_mut().poll(cx).is_ready();
            // The timer is polled under the task's budget (tokio's coop): a
            // future that used the budget up leaves it unpolled, so the
            // clock decides then (the future is polled again: the timer's
            // refusal wakes the task).
            if fired || tokio::time::Instant::now() >= sleep.deadline() {
                Poll::Ready(Err(Elapsed::new(*this.after)))
            } else {
                Poll::Pending
            }
        }
    }

    /// Runs `fut` with a deadline of `after`; on timeout the future is dropped.
    ///
    /// Uses tokio's timer (needs a tokio runtime with time enabled once
    /// `fut` waits: a future that is ready at its first poll arms no timer;
    /// follows paused time in tests).
    ///
    /// # Errors
    ///
    /// [`Elapsed`] if `after` passed before `fut` finished.
    ///
    /// # Cancel safety
    ///
    /// Dropping the returned future drops `fut`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// let quick = async { 42 };
    /// assert_eq!(fusebox::timeout(Duration::from_millis(10), quick).await, Ok(42));
    /// # }
    /// ```
    pub async fn timeout<F: Future>(after: Duration, fut: F) -> Result<F::Output, Elapsed> {
        Deadline::new(after, fut).await
    }

    /// A timeout policy: a fixed deadline for every call it wraps.
    ///
    /// `Copy`, so it can be captured by any number of closures.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use fusebox::{Timeout, TimeoutError};
    /// use std::time::Duration;
    ///
    /// let t = Timeout::new(Duration::from_millis(200));
    /// let ok = t.call(async { Ok::<_, &str>("fast") }).await;
    /// assert_eq!(ok, Ok("fast"));
    /// let failed = t.call(async { Err::<(), _>("refused") }).await;
    /// assert_eq!(failed, Err(TimeoutError::Inner("refused")));
    /// let slow = t.call(async {
    ///     tokio::time::sleep(Duration::from_secs(1)).await;
    ///     Ok::<_, &str>("slow")
    /// });
    /// assert!(slow.await.unwrap_err().is_elapsed());
    /// # }
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Timeout {
        after: Duration,
    }

    impl Timeout {
        /// A policy giving every call `after` to finish.
        ///
        /// # Examples
        ///
        /// ```
        /// use std::time::Duration;
        /// let t = fusebox::Timeout::new(Duration::from_secs(2));
        /// assert_eq!(t.after(), Duration::from_secs(2));
        /// ```
        pub const fn new(after: Duration) -> Self {
            Timeout { after }
        }

        /// The deadline.
        ///
        /// # Examples
        ///
        /// ```
        /// let t = fusebox::Timeout::new(std::time::Duration::ZERO);
        /// assert!(t.after().is_zero());
        /// ```
        pub const fn after(&self) -> Duration {
            self.after
        }

        /// Runs a fallible call with the deadline, flattening the two errors
        /// into one [`TimeoutError`].
        ///
        /// # Errors
        ///
        /// [`TimeoutError::Elapsed`] if the deadline passed (the call was
        /// dropped); [`TimeoutError::Inner`] with the call's error.
        ///
        /// # Cancel safety
        ///
        /// Dropping the returned future drops the call.
        ///
        /// # Examples
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// # async fn main() {
        /// let t = fusebox::Timeout::new(std::time::Duration::from_millis(5));
        /// let r = t.call(std::future::pending::<Result<(), ()>>()).await;
        /// assert!(r.unwrap_err().is_elapsed());
        /// # }
        /// ```
        pub async fn call<T, E, F>(&self, fut: F) -> Result<T, TimeoutError<E>>
        where
            F: Future<Output = Result<T, E>>,
        {
            match timeout(self.after, fut).await {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(TimeoutError::Inner(e)),
                Err(elapsed) => Err(TimeoutError::Elapsed(elapsed)),
            }
        }

        /// Runs any future with the deadline, as [`timeout`].
        ///
        /// # Errors
        ///
        /// [`Elapsed`] if the deadline passed.
        ///
        /// # Cancel safety
        ///
        /// Dropping the returned future drops `fut`.
        ///
        /// # Examples
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
        /// # async fn main() {
        /// let t = fusebox::Timeout::new(std::time::Duration::from_millis(5));
        /// assert_eq!(t.run(async { "in time" }).await, Ok("in time"));
        /// # }
        /// ```
        pub async fn run<F: Future>(&self, fut: F) -> Result<F::Output, Elapsed> {
            timeout(self.after, fut).await
        }
    }
}
