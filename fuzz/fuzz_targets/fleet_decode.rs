//! The fleet's message decoder: `fusebox::fleet::decode` and a keyed
//! node's `FleetKey::verify` on whatever bytes arrive on a fleet's Redis
//! channel. Never panics; whatever either accepts encodes back to bytes
//! that decode to the same message, and what a key verifies it signed.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let key = fusebox::fleet::FleetKey::new("the fuzzer's fleet key").unwrap();
    if let Ok(message) = fusebox::fleet::decode(data) {
        assert_eq!(fusebox::fleet::decode(&message.encode()), Ok(message.clone()));
        assert_eq!(key.verify(&key.sign(&message)), Ok(message));
    }
    if let Ok(message) = key.verify(data) {
        assert!(data.starts_with(b"fb1s|"));
        assert_eq!(fusebox::fleet::decode(data), Ok(message));
    }
});
