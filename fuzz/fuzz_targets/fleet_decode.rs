//! The fleet's message decoder: `fusebox::fleet::decode` on whatever bytes
//! arrive on a fleet's Redis channel. Never panics; whatever it accepts
//! encodes back to bytes that decode to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = fusebox::fleet::decode(data) {
        assert_eq!(fusebox::fleet::decode(&message.encode()), Ok(message));
    }
});
