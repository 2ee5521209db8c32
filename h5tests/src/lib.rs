//! Integration tests of the karoo plugin live in `tests/`.
