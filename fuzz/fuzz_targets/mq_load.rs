#![no_main]
//! `mq_load`: `.mq` reader + `Interpreter::new` + one invoke; see `microquant_fuzz::mq_load`.
use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;

thread_local! {
    static ARENA: RefCell<Vec<u128>> = RefCell::new(vec![0u128; microquant_fuzz::MQ_ARENA_BYTES / 16]);
}

fuzz_target!(|data: &[u8]| ARENA.with(|a| microquant_fuzz::mq_load(data, &mut a.borrow_mut())));
