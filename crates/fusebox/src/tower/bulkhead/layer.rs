use super::Bulkhead;
use tower::Layer;

/// Limits the requests in flight to the inner service with a
/// [bulkhead](crate::Bulkhead); see the [module docs](super).
///
/// # Examples
///
/// ```
/// use fusebox::tower::BulkheadLayer;
/// use tower::ServiceBuilder;
///
/// let reviews = fusebox::Bulkhead::builder(10).name("reviews").build();
/// let stack = ServiceBuilder::new().layer(BulkheadLayer::new(reviews));
/// # let _ = stack;
/// ```
#[derive(Debug, Clone)]
pub struct BulkheadLayer {
    bulkhead: crate::Bulkhead,
}

impl BulkheadLayer {
    /// Creates a layer that takes its slots from `bulkhead`.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::BulkheadLayer;
    ///
    /// let layer = BulkheadLayer::new(fusebox::Bulkhead::new(4));
    /// assert_eq!(layer.bulkhead().limit(), 4);
    /// ```
    pub const fn new(bulkhead: crate::Bulkhead) -> Self {
        BulkheadLayer { bulkhead }
    }

    /// The bulkhead this layer applies.
    ///
    /// # Examples
    ///
    /// ```
    /// use fusebox::tower::BulkheadLayer;
    ///
    /// let layer = BulkheadLayer::new(fusebox::Bulkhead::new(4));
    /// assert_eq!(layer.bulkhead().snapshot().in_use, 0);
    /// ```
    pub fn bulkhead(&self) -> &crate::Bulkhead {
        &self.bulkhead
    }
}

impl<S> Layer<S> for BulkheadLayer {
    type Service = Bulkhead<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Bulkhead::new(inner, self.bulkhead.clone())
    }
}
