//! A bounded least-recently-used map from host to minted leaf.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Host -> value, evicting the least recently used entry past `capacity`.
#[derive(Debug)]
pub(crate) struct Lru<V> {
    capacity: usize,
    tick: u64,
    entries: HashMap<String, (Arc<V>, u64)>,
    order: BTreeMap<u64, String>,
}

impl<V> Lru<V> {
    pub(crate) fn new(capacity: usize) -> Lru<V> {
        Lru {
            capacity: capacity.max(1),
            tick: 0,
            entries: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The value for `key`, marked as just used.
    pub(crate) fn get(&mut self, key: &str) -> Option<Arc<V>> {
        self.tick += 1;
        let tick = self.tick;
        let (value, used) = self.entries.get_mut(key)?;
        self.order.remove(used);
        *used = tick;
        self.order.insert(tick, key.to_owned());
        Some(Arc::clone(value))
    }

    /// Inserts or replaces `key`, evicting the least recently used entry
    /// when full.
    pub(crate) fn insert(&mut self, key: &str, value: Arc<V>) {
        self.tick += 1;
        if let Some((_, used)) = self.entries.remove(key) {
            self.order.remove(&used);
        }
        while self.entries.len() >= self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
        self.entries.insert(key.to_owned(), (value, self.tick));
        self.order.insert(self.tick, key.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a plain list model: same contents, never over capacity.
        #[test]
        fn behaves_like_a_list(cap in 1usize..5, ops in prop::collection::vec((any::<bool>(), 0u8..8), 0..60)) {
            let mut lru = Lru::new(cap);
            let mut model: Vec<(String, u8)> = Vec::new();
            for (is_get, k) in ops {
                let key = k.to_string();
                if is_get {
                    let got = lru.get(&key).map(|v| *v);
                    let pos = model.iter().position(|(m, _)| *m == key);
                    let want = pos.map(|p| model.remove(p));
                    prop_assert_eq!(got, want.as_ref().map(|(_, v)| *v));
                    if let Some(entry) = want {
                        model.push(entry);
                    }
                } else {
                    lru.insert(&key, Arc::new(k));
                    model.retain(|(m, _)| *m != key);
                    if model.len() >= cap {
                        model.remove(0);
                    }
                    model.push((key, k));
                }
                prop_assert!(lru.len() <= cap);
                prop_assert_eq!(lru.len(), model.len());
            }
        }
    }
}
