//! Models in flash and the static arenas they run in.
//!
//! A `.mq` model is placed in flash 16-byte aligned with [`include_model!`](crate::include_model)
//! and runs in an [`Arena`] whose size, read from the model's header at compile time with
//! [`arena_len`], is exactly what its plan needs:
//!
//! ```ignore
//! static MODEL: &[u8] = microquant_app::include_model!("kws.mq");
//! const ARENA_LEN: usize = microquant_app::model::arena_len(include_bytes!("kws.mq"));
//! static mut ARENA: Arena<ARENA_LEN> = Arena::new(); // inside #[entry]: a safe &'static mut
//! ```

/// Embeds a `.mq` file in flash, 16-byte aligned (the model format needs 4-byte alignment for
/// its tables and 16 for in-place constant data), as a `&'static [u8]`.
///
/// ```ignore
/// static MODEL: &[u8] = microquant_firmware::include_model!("../models/kws.mq");
/// ```
#[macro_export]
macro_rules! include_model {
    ($path:expr) => {{
        #[repr(C, align(16))]
        struct Aligned<T: ?Sized>(T);
        static ALIGNED: &Aligned<[u8]> = &Aligned(*include_bytes!($path));
        &ALIGNED.0
    }};
}

/// A 16-byte aligned byte buffer for a model's activations and scratch: with this alignment the
/// interpreter uses every byte, so `Arena<{ APP_ARENA_LEN }>` is exactly what the model needs.
#[repr(C, align(16))]
pub struct Arena<const N: usize>(pub [u8; N]);

impl<const N: usize> Arena<N> {
    /// A zeroed arena (lives in `.bss` as a static).
    pub const fn new() -> Self {
        Self([0; N])
    }
}

impl<const N: usize> Default for Arena<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// The arena length stored in a `.mq` model's header (bytes 24..28, little-endian; see
/// `docs/FORMAT.md`), usable in a `const`: a model too short to have a header fails the build.
/// The interpreter checks the whole model when it loads it.
pub const fn arena_len(model: &[u8]) -> usize {
    u32::from_le_bytes([model[24], model[25], model[26], model[27]]) as usize
}
