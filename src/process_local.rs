//! Process-wide state that a forked child does not inherit.
//!
//! `fork()` copies a process's memory but only the thread that called it. State that
//! belongs to other threads (a thread pool's workers) or that another thread may have
//! been holding at that instant (a mutex) is unusable in the child: a pool whose workers
//! do not exist never runs its jobs, a mutex locked by a vanished thread is never
//! unlocked. A [`ProcessLocal`] value is tagged with the id of the process that made it;
//! the first use in a process with another id makes a fresh value and leaks the old one
//! on purpose: dropping it could wait for threads or take locks that are gone.

use std::marker::PhantomData;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

/// A `T` per process, made on first use: a forked child makes its own on its first use,
/// never touching the parent's.
pub struct ProcessLocal<T> {
    current: AtomicPtr<Owned<T>>,
    make: fn() -> T,
    /// Shares `&T` between threads: `Sync` only when `T` is.
    _value: PhantomData<T>,
}

/// A value and the process that made it.
struct Owned<T> {
    pid: u32,
    value: T,
}

impl<T> ProcessLocal<T> {
    /// An empty slot; `make` makes each process's value on its first use.
    pub const fn new(make: fn() -> T) -> Self {
        ProcessLocal {
            current: AtomicPtr::new(ptr::null_mut()),
            make,
            _value: PhantomData,
        }
    }

    /// This process's value, made now if this process has none yet.
    pub fn get(&'static self) -> &'static T {
        self.get_for(std::process::id())
    }

    /// The value of process `pid` (a parameter so that tests can play a forked child).
    fn get_for(&'static self, pid: u32) -> &'static T {
        loop {
            let seen = self.current.load(Ordering::Acquire);
            // SAFETY: a published pointer comes from `Box::into_raw` and is never freed.
            if let Some(owned) = unsafe { seen.as_ref() } {
                if owned.pid == pid {
                    return &owned.value;
                }
            }
            if let Some(value) = self.replace(seen, pid) {
                return value;
            }
        }
    }

    /// Publishes a fresh value for `pid` in place of `seen` (null, or another process's
    /// value, which is leaked). `None` when another thread published first.
    #[cold]
    fn replace(&'static self, seen: *mut Owned<T>, pid: u32) -> Option<&'static T> {
        let fresh = Box::into_raw(Box::new(Owned {
            pid,
            value: (self.make)(),
        }));
        match self
            .current
            .compare_exchange(seen, fresh, Ordering::AcqRel, Ordering::Acquire)
        {
            // SAFETY: `fresh` is published and never freed.
            Ok(_) => Some(unsafe { &(*fresh).value }),
            Err(_) => {
                // SAFETY: `fresh` was never published; this thread still owns it.
                drop(unsafe { Box::from_raw(fresh) });
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn one_value_per_process_and_a_child_never_touches_the_parents() {
        static SLOT: ProcessLocal<Mutex<Vec<u32>>> = ProcessLocal::new(Default::default);
        let me = std::process::id();
        SLOT.get().lock().unwrap().push(1);
        assert!(ptr::eq(SLOT.get(), SLOT.get()));
        // The parent's mutex stays locked, as if a thread held it at fork time.
        let held = SLOT.get().lock().unwrap();
        let child = SLOT.get_for(me.wrapping_add(1));
        child.lock().unwrap().push(2);
        assert_eq!(*child.lock().unwrap(), vec![2]);
        assert_eq!(*held, vec![1]);
    }

    #[test]
    fn racing_first_uses_agree_on_one_value() {
        static SLOT: ProcessLocal<Mutex<u32>> = ProcessLocal::new(Default::default);
        let seen: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| SLOT.get() as *const _ as usize))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(seen.iter().all(|&p| p == seen[0]));
    }
}
