//! The registry chapter's config example (`docs/registry.md`, inside the
//! package, so the published crate's tests build too) parses, validates and
//! means what the chapter says it means.
#![cfg(feature = "config")]

use fusebox::registry::{Fusebox, FuseboxConfig};
use std::time::Duration;

fn readme_toml() -> String {
    let readme = include_str!("../docs/registry.md");
    let start = readme
        .find("# fusebox.toml")
        .expect("the chapter's example");
    let rest = &readme[start..];
    rest[..rest.find("```").expect("end of the block")].to_owned()
}

#[test]
fn the_guide_registry_example_means_what_it_says() {
    let config = FuseboxConfig::from_toml(&readme_toml()).unwrap();
    let fusebox = Fusebox::from_config(config).unwrap();
    assert_eq!(
        fusebox.names(),
        ["inventory", "orders", "payments", "search"]
    );
    let payments = fusebox.breaker("payments").config();
    assert_eq!(payments.failure_rate, Some(0.3));
    assert_eq!(payments.time_window, Some(Duration::from_secs(60)));
    assert_eq!(payments.min_calls, Some(20));
    assert_eq!(payments.open_for, Some(Duration::from_secs(30)));
    let orders = fusebox.breaker("orders").config();
    assert_eq!((orders.count_window, orders.time_window), (Some(50), None));
    assert_eq!(
        (orders.failure_rate, orders.min_calls),
        (Some(0.5), Some(20))
    );
    assert_eq!(fusebox.bulkhead("inventory").limit(), 10);
    assert_eq!(fusebox.tags("payments")["service"], "payments");
}
