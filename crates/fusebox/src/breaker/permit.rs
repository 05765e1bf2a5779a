//! Admission tickets and the verdicts they carry back.

use super::fast::Inner;
use super::protocol::Ticket;
use super::types::Outcome;
use std::fmt;
use std::sync::Arc;

/// An admission ticket: the breaker let one call through and waits for its
/// verdict.
///
/// Give the verdict with [`success`](Permit::success),
/// [`failure`](Permit::failure), [`ignore`](Permit::ignore) or
/// [`record`](Permit::record). A permit dropped without a verdict (a panic, a
/// cancelled future, an early return) is released: it changes no counter and
/// frees its half-open probe slot, so a breaker can never wait forever for a
/// probe that will not come.
///
/// A permit owns a reference to its breaker: it is `Send + 'static` and may
/// be moved to another thread or task.
///
/// # Examples
///
/// ```
/// use fusebox::CircuitBreaker;
///
/// let breaker = CircuitBreaker::builder().build()?;
/// match breaker.try_acquire() {
///     Ok(permit) => {
///         let reply: Result<&str, &str> = Ok("200 OK"); // the real call goes here
///         match reply {
///             Ok(_) => permit.success(),
///             Err(_) => permit.failure(),
///         }
///     }
///     Err(rejected) => println!("not calling: {rejected}"),
/// }
/// # Ok::<(), fusebox::ConfigError>(())
/// ```
#[must_use = "a permit records nothing until given a verdict; dropping it releases it"]
pub struct Permit {
    inner: Arc<Inner>,
    // Two words: with `done` the permit is 32 bytes (it travels inside
    // every tower response future).
    ticket: Ticket,
    done: bool,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Permit>() == 32);

impl Permit {
    pub(crate) fn new(inner: Arc<Inner>, ticket: Ticket) -> Self {
        Permit {
            inner,
            ticket,
            done: false,
        }
    }

    /// The call succeeded.
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// breaker.try_acquire().unwrap().success();
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[inline]
    pub fn success(self) {
        self.record(Outcome::Success)
    }

    /// The call failed.
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().consecutive_failures(1).build()?;
    /// breaker.try_acquire().unwrap().failure();
    /// assert_eq!(breaker.state(), fusebox::State::Open);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[inline]
    pub fn failure(self) {
        self.record(Outcome::Failure)
    }

    /// The call counts for nothing (but its probe slot, if any, is freed).
    ///
    /// # Examples
    ///
    /// ```
    /// let breaker = fusebox::CircuitBreaker::builder().consecutive_failures(1).build()?;
    /// breaker.try_acquire().unwrap().ignore();
    /// assert_eq!(breaker.state(), fusebox::State::Closed);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[inline]
    pub fn ignore(self) {
        self.record(Outcome::Ignore)
    }

    /// Records `outcome`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::Outcome;
    /// let breaker = fusebox::CircuitBreaker::builder().build()?;
    /// breaker.try_acquire().unwrap().record(Outcome::Success);
    /// # Ok::<(), fusebox::ConfigError>(())
    /// ```
    #[inline]
    pub fn record(mut self, outcome: Outcome) {
        self.done = true;
        self.inner.finish(self.ticket, outcome);
    }
}

impl Drop for Permit {
    #[inline]
    fn drop(&mut self) {
        if !self.done {
            self.release();
        }
    }
}

impl Permit {
    #[inline(never)]
    fn release(&self) {
        self.inner.release(self.ticket);
    }
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("generation", &self.ticket.generation())
            .field("kind", &self.ticket.kind())
            .finish()
    }
}

/// The borrowed twin of [`Permit`] used inside `call*`: no reference count to
/// touch. While `running` is set the user's code is on the stack, so a drop
/// then is a panic out of it and counts as a failure; any other drop (a
/// cancelled future) releases the permit.
pub(crate) struct CallGuard<'a> {
    pub(crate) inner: &'a Inner,
    pub(crate) ticket: Ticket,
    pub(crate) running: bool,
    pub(crate) done: bool,
}

impl<'a> CallGuard<'a> {
    pub(crate) fn new(inner: &'a Inner, ticket: Ticket) -> Self {
        CallGuard {
            inner,
            ticket,
            running: false,
            done: false,
        }
    }

    /// The verdict, once the caller found it does not settle silently
    /// ([`Inner::settles_silently`]): straight to the out-of-line verdict.
    #[inline]
    pub(crate) fn finish(mut self, outcome: Outcome) {
        self.done = true;
        self.inner.finish_slow(self.ticket, outcome);
    }
}

impl Drop for CallGuard<'_> {
    /// Inlined so that a guard dropped after its verdict (`done`, known at
    /// the drop site) costs nothing; the rest is out of line.
    #[inline]
    fn drop(&mut self) {
        if !self.done {
            self.abandon();
        }
    }
}

impl CallGuard<'_> {
    /// A guard dropped without a verdict: a panic out of the user's code
    /// (`running`) or a cancelled future.
    #[cold]
    #[inline(never)]
    fn abandon(&mut self) {
        if self.running {
            self.inner.finish(self.ticket, Outcome::Failure);
        } else {
            self.inner.release(self.ticket);
        }
    }
}
