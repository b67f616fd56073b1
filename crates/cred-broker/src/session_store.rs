//! The server side's TLS session store, shared by every client connection.
//!
//! rustls's own memory cache finds the entry to drop by a linear scan of
//! its keys on every `take`, which a resumed handshake makes: with the
//! store full (4096 sessions), that scan was 5% of the broker's CPU time
//! under a new connection per request. Here every call is a hash probe and
//! the oldest session is dropped first.

use rustls::server::StoresServerSessions;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

/// At most `max` sessions; the oldest put is dropped first.
#[derive(Debug)]
pub(crate) struct SessionStore {
    max: usize,
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    /// Key -> (the order it was put in, the session).
    sessions: HashMap<Vec<u8>, (u64, Vec<u8>)>,
    /// Put order -> key, oldest first.
    order: BTreeMap<u64, Vec<u8>>,
    next: u64,
}

impl SessionStore {
    pub(crate) fn new(max: usize) -> SessionStore {
        SessionStore {
            max,
            inner: Mutex::new(Kept::default()),
        }
    }

    fn kept(&self) -> MutexGuard<'_, Kept> {
        // The map is consistent between calls: a panic elsewhere while it
        // was held leaves nothing half-done here.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl StoresServerSessions for SessionStore {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        if self.max == 0 {
            return false;
        }
        let mut kept = self.kept();
        let Kept {
            sessions,
            order,
            next,
        } = &mut *kept;
        if let Some((old, _)) = sessions.remove(&key) {
            order.remove(&old);
        }
        while sessions.len() >= self.max {
            let Some((_, oldest)) = order.pop_first() else {
                break;
            };
            sessions.remove(&oldest);
        }
        let seq = *next;
        *next += 1;
        order.insert(seq, key.clone());
        sessions.insert(key, (seq, value));
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.kept().sessions.get(key).map(|(_, v)| v.clone())
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut kept = self.kept();
        let (seq, value) = kept.sessions.remove(key)?;
        kept.order.remove(&seq);
        Some(value)
    }

    fn can_cache(&self) -> bool {
        self.max > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(i: u32) -> Vec<u8> {
        i.to_be_bytes().to_vec()
    }

    #[test]
    fn a_session_is_taken_once() {
        let s = SessionStore::new(4);
        assert!(s.put(k(1), b"one".to_vec()));
        assert_eq!(s.get(&k(1)), Some(b"one".to_vec()));
        assert_eq!(s.take(&k(1)), Some(b"one".to_vec()));
        assert_eq!(s.take(&k(1)), None);
        assert_eq!(s.get(&k(1)), None);
    }

    #[test]
    fn the_oldest_session_goes_first_and_a_put_again_is_new() {
        let s = SessionStore::new(3);
        for i in 1..=3 {
            s.put(k(i), vec![u8::try_from(i).unwrap()]);
        }
        // Put again: 1 is now the newest.
        s.put(k(1), vec![10]);
        s.put(k(4), vec![4]);
        assert_eq!(s.get(&k(2)), None, "the oldest was dropped");
        assert_eq!(s.get(&k(1)), Some(vec![10]));
        assert_eq!(s.get(&k(3)), Some(vec![3]));
        assert_eq!(s.get(&k(4)), Some(vec![4]));
        let kept = s.kept();
        assert_eq!(kept.sessions.len(), 3);
        assert_eq!(kept.order.len(), 3);
    }

    #[test]
    fn a_store_of_none_keeps_none() {
        let s = SessionStore::new(0);
        assert!(!s.can_cache());
        assert!(!s.put(k(1), vec![1]));
        assert_eq!(s.get(&k(1)), None);
    }

    proptest::proptest! {
        /// Whatever the calls, the store never holds more than its bound,
        /// its two indexes agree, and it answers as a plain map bounded the
        /// same way would.
        #[test]
        fn the_store_is_a_bounded_map(ops in proptest::collection::vec((0u8..3, 0u32..12), 0..200)) {
            let max = 5;
            let s = SessionStore::new(max);
            let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for (n, (op, key)) in ops.into_iter().enumerate() {
                let key = k(key);
                let value = n.to_be_bytes().to_vec();
                match op {
                    0 => {
                        s.put(key.clone(), value.clone());
                        model.retain(|(mk, _)| *mk != key);
                        if model.len() >= max {
                            model.remove(0);
                        }
                        model.push((key, value));
                    }
                    1 => {
                        let want = model.iter().find(|(mk, _)| *mk == key).map(|(_, v)| v.clone());
                        proptest::prop_assert_eq!(s.get(&key), want);
                    }
                    _ => {
                        let want = model.iter().position(|(mk, _)| *mk == key).map(|i| model.remove(i).1);
                        proptest::prop_assert_eq!(s.take(&key), want);
                    }
                }
                let kept = s.kept();
                proptest::prop_assert!(kept.sessions.len() <= max);
                proptest::prop_assert_eq!(kept.sessions.len(), kept.order.len());
            }
        }
    }
}
