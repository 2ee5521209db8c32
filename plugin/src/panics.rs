//! Panics inside the plugin stay inside it: every entry point runs its body through
//! [`caught`], which turns a panic into an error message, and the library's panic hook
//! prints nothing (the message reaches the caller as that error, not stderr). The hook
//! is this library's own: a `cdylib` carries its own copy of Rust's standard library, so
//! the host process and other Rust libraries in it keep theirs.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

/// Installs the silent panic hook, once per process.
fn silence_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| std::panic::set_hook(Box::new(|_| {})));
}

/// Runs `body`; a panic in it (or in a worker thread it waits on) becomes
/// `Err("internal error: <the panic's message>")`, with nothing printed.
pub fn caught<T>(body: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    silence_panics();
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        let what = (panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(format!("internal error: {what}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_with_its_message() {
        let result: Result<(), String> = caught(|| panic!("index {} out of range", 3));
        assert_eq!(result.unwrap_err(), "internal error: index 3 out of range");
        assert_eq!(caught(|| Ok::<_, String>(7)), Ok(7));
        assert_eq!(
            caught(|| Err::<(), _>("refused".to_string())),
            Err("refused".to_string())
        );
    }
}
