//! A small process-wide pool of large byte buffers, reused from one chunk to the next.
//!
//! Compressing a chunk builds a payload per tile and then the chunk; allocating those
//! afresh for every chunk makes each one fresh memory from the system whenever the host
//! process's allocator has just returned the previous one (glibc trims the top of its
//! heap, or maps big blocks separately): page faults on every byte written, which halved
//! the write throughput through h5py in measurements that depended only on the host's
//! earlier allocations. Buffers taken from here and given back keep their pages.
//!
//! The pool is per process: a forked child starts with an empty one (another thread may
//! have held the parent's lock at fork time, and then no thread of the child ever
//! releases it).

use std::sync::Mutex;

use crate::process_local::ProcessLocal;

/// Buffers smaller than this are not worth pooling.
const MIN_POOLED_CAPACITY: usize = 64 << 10;
/// Most buffers the pool holds.
const MAX_POOLED: usize = 64;
/// Most bytes of capacity the pool holds.
const MAX_POOLED_BYTES: usize = 64 << 20;

/// Pooled buffers, each of at least [`MIN_POOLED_CAPACITY`] bytes, holding the bytes
/// they were given back with (so that [`take_filled`] need not zero them again).
struct Pool(Mutex<Vec<Vec<u8>>>);

impl Pool {
    const fn new() -> Self {
        Pool(Mutex::new(Vec::new()))
    }

    fn buffers(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        // A panic elsewhere while holding the lock leaves a valid list of buffers.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A pooled buffer of at least `capacity` bytes, if one is held.
    fn pooled(&self, capacity: usize) -> Option<Vec<u8>> {
        if capacity < MIN_POOLED_CAPACITY {
            return None;
        }
        let mut pool = self.buffers();
        let i = pool.iter().position(|b| b.capacity() >= capacity)?;
        Some(pool.swap_remove(i))
    }

    fn take(&self, capacity: usize) -> Vec<u8> {
        match self.pooled(capacity) {
            Some(mut buffer) => {
                buffer.clear();
                buffer
            }
            None => Vec::with_capacity(capacity),
        }
    }

    fn take_filled(&self, len: usize) -> Vec<u8> {
        let mut buffer = self.pooled(len).unwrap_or_default();
        if buffer.len() >= len {
            buffer.truncate(len);
        } else {
            buffer.resize(len, 0);
        }
        buffer
    }

    fn give(&self, buffer: Vec<u8>) {
        if buffer.capacity() < MIN_POOLED_CAPACITY {
            return;
        }
        let mut pool = self.buffers();
        let held: usize = pool.iter().map(Vec::capacity).sum();
        if pool.len() < MAX_POOLED && held + buffer.capacity() <= MAX_POOLED_BYTES {
            pool.push(buffer);
        }
    }
}

static POOL: ProcessLocal<Pool> = ProcessLocal::new(Pool::new);

/// An empty buffer with room for at least `capacity` bytes: a pooled one when one is
/// large enough, else a new one.
pub fn take(capacity: usize) -> Vec<u8> {
    POOL.get().take(capacity)
}

/// A buffer of `len` bytes whose values are unspecified: a pooled one keeps the bytes it
/// was given back with (zeros past them), for a caller that writes every byte before
/// reading it.
pub fn take_filled(len: usize) -> Vec<u8> {
    POOL.get().take_filled(len)
}

/// Hands `buffer` back for reuse (dropped when it is small or the pool is full).
pub fn give(buffer: Vec<u8>) {
    POOL.get().give(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_buffer_comes_back_empty_with_its_memory() {
        let pool = Pool::new();
        let mut buffer = pool.take(1 << 20);
        buffer.extend_from_slice(&[7; 100]);
        let (at, capacity) = (buffer.as_ptr(), buffer.capacity());
        pool.give(buffer);
        let again = pool.take(1 << 19);
        assert!(again.is_empty());
        assert_eq!((again.as_ptr(), again.capacity()), (at, capacity));
        // None left: a larger request gets a new buffer.
        let fresh = pool.take(1 << 20);
        assert_ne!(fresh.as_ptr(), at);
    }

    #[test]
    fn a_filled_buffer_keeps_the_bytes_it_came_back_with() {
        let pool = Pool::new();
        let mut buffer = pool.take_filled(1 << 17);
        assert_eq!(buffer, vec![0; 1 << 17]);
        buffer[..4].copy_from_slice(&[1, 2, 3, 4]);
        let at = buffer.as_ptr();
        pool.give(buffer);
        let again = pool.take_filled(3);
        assert_eq!(again, vec![0; 3], "small requests get new buffers");
        let mut again = pool.take_filled(1 << 16);
        assert_eq!((again.as_ptr(), again.len()), (at, 1 << 16));
        assert_eq!(again[..5], [1, 2, 3, 4, 0]);
        again.truncate(2);
        pool.give(again);
        // Grown past the bytes it came back with: zeros after them.
        let grown = pool.take_filled(1 << 17);
        assert_eq!(grown.as_ptr(), at);
        assert_eq!(grown[..4], [1, 2, 0, 0]);
        assert!(grown[2..].iter().all(|&b| b == 0));
    }

    #[test]
    fn small_buffers_are_not_pooled_and_the_pool_is_bounded() {
        let pool = Pool::new();
        pool.give(Vec::with_capacity(MIN_POOLED_CAPACITY - 1));
        assert!(pool.buffers().is_empty());
        for _ in 0..2 * MAX_POOLED {
            pool.give(Vec::with_capacity(4 << 20));
        }
        assert_eq!(pool.buffers().len(), MAX_POOLED_BYTES / (4 << 20));
        let pool = Pool::new();
        for _ in 0..2 * MAX_POOLED {
            pool.give(Vec::with_capacity(MIN_POOLED_CAPACITY));
        }
        assert_eq!(pool.buffers().len(), MAX_POOLED);
    }
}
