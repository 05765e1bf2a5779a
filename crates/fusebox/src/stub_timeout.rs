//! TEMP stub until policies lands.
#![allow(missing_docs)]
use std::fmt;
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed {
    pub(crate) after: std::time::Duration,
}
impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timed out after {:?}", self.after)
    }
}
impl std::error::Error for Elapsed {}
impl Elapsed {
    pub(crate) fn new(after: std::time::Duration) -> Self {
        Elapsed { after }
    }
}
