//! A small open-addressing hash map (linear probing, backward-shift deletion) whose keys and
//! values sit together in one array of buckets.
//!
//! Why not `HashMap`: the engine keeps one small map per rank (outstanding requests, MPI
//! matching), and at thousands of ranks a message's look-up in its receiver's map is a cache
//! miss. A `HashMap` (SwissTable) reads a control-byte group and then the bucket, two lines; here
//! a look-up usually reads one. Its iteration order is its hashing's: whoever iterates it sorts
//! what it finds before a result can see it.

/// A key of a [`FlatMap`]: cheap to copy and compare, with a hash whose high 32 bits are well
/// mixed (the map takes its bucket from them).
pub trait FlatKey: Copy + Eq {
    fn hash(&self) -> u64;
}

/// Fibonacci hashing: a multiply spreads small consecutive numbers over the high bits.
pub const FIB: u64 = 0x9E37_79B9_7F4A_7C15;

impl FlatKey for u32 {
    #[inline]
    fn hash(&self) -> u64 {
        (*self as u64).wrapping_mul(FIB)
    }
}

/// Open-addressing map from `K` to `V`.
#[derive(Debug, Clone)]
pub struct FlatMap<K, V> {
    /// Length 0 or a power of two; at most three quarters full.
    buckets: Vec<Option<(K, V)>>,
    len: usize,
}

impl<K, V> Default for FlatMap<K, V> {
    fn default() -> Self {
        Self {
            buckets: Vec::new(),
            len: 0,
        }
    }
}

/// Where a key is, or where it would go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The key's bucket.
    Found(usize),
    /// The free bucket the key would take.
    Vacant(usize),
}

impl<K: FlatKey, V: Copy> FlatMap<K, V> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn home(&self, k: &K) -> usize {
        (k.hash() >> 32) as usize & (self.buckets.len() - 1)
    }

    /// Finds `k`, or the bucket it would take. Makes room first, so a `Vacant` bucket may be
    /// filled with [`Self::insert_at`] at once.
    #[inline]
    pub fn probe(&mut self, k: &K) -> Probe {
        if (self.len + 1) * 4 > self.buckets.len() * 3 {
            self.grow();
        }
        let mask = self.buckets.len() - 1;
        let mut i = self.home(k);
        loop {
            match &self.buckets[i] {
                None => return Probe::Vacant(i),
                Some((key, _)) if key == k => return Probe::Found(i),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    #[cold]
    fn grow(&mut self) {
        let n = (self.buckets.len() * 2).max(8);
        let old = std::mem::replace(&mut self.buckets, vec![None; n]);
        let mask = n - 1;
        for (k, v) in old.into_iter().flatten() {
            let mut i = self.home(&k);
            while self.buckets[i].is_some() {
                i = (i + 1) & mask;
            }
            self.buckets[i] = Some((k, v));
        }
    }

    /// The bucket of `k`, if present.
    #[inline]
    pub fn find(&self, k: &K) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let mask = self.buckets.len() - 1;
        let mut i = self.home(k);
        loop {
            match &self.buckets[i] {
                None => return None,
                Some((key, _)) if key == k => return Some(i),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    pub fn get(&self, k: &K) -> Option<&V> {
        self.find(k).map(|i| self.value_at(i))
    }

    /// The value in an occupied bucket.
    #[inline]
    pub fn value_at(&self, i: usize) -> &V {
        &self.buckets[i].as_ref().expect("an occupied bucket").1
    }

    #[inline]
    pub fn value_at_mut(&mut self, i: usize) -> &mut V {
        &mut self.buckets[i].as_mut().expect("an occupied bucket").1
    }

    /// Fills the bucket a [`Probe::Vacant`] named (no other change since).
    #[inline]
    pub fn insert_at(&mut self, i: usize, k: K, v: V) {
        debug_assert!(self.buckets[i].is_none());
        self.buckets[i] = Some((k, v));
        self.len += 1;
    }

    /// Inserts `k`; returns false (and changes nothing) if it is already present.
    pub fn insert(&mut self, k: K, v: V) -> bool {
        match self.probe(&k) {
            Probe::Found(_) => false,
            Probe::Vacant(i) => {
                self.insert_at(i, k, v);
                true
            }
        }
    }

    pub fn remove(&mut self, k: &K) -> Option<V> {
        self.find(k).map(|i| self.remove_at(i))
    }

    /// The entries, in bucket order (an order of the hashing's: sort before results see it).
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.buckets.iter().flatten().map(|(k, v)| (k, v))
    }

    /// Empties an occupied bucket and returns its value.
    pub fn remove_at(&mut self, i: usize) -> V {
        let (_, found) = self.buckets[i].take().expect("an occupied bucket");
        self.len -= 1;
        // Shift later members of the probe run back so no look-up stops early at the hole.
        let mask = self.buckets.len() - 1;
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let Some((k, _)) = &self.buckets[j] else {
                break;
            };
            let h = self.home(k);
            // Movable if its home is not cyclically within (hole, j].
            if (j.wrapping_sub(h) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.buckets[hole] = self.buckets[j].take();
                hole = j;
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn behaves_like_a_map(ops in proptest::collection::vec((0u8..3, 0u32..64), 0..600)) {
            let mut t: FlatMap<u32, u32> = FlatMap::default();
            let mut m = std::collections::BTreeMap::new();
            for (i, (op, id)) in ops.into_iter().enumerate() {
                // Spread keys so they collide in small tables and also use the top of the range.
                let id = if id % 7 == 0 { u32::MAX - id } else { id * 1024 };
                match op {
                    0 => {
                        let fresh = !m.contains_key(&id);
                        if fresh {
                            m.insert(id, i as u32);
                        }
                        prop_assert_eq!(t.insert(id, i as u32), fresh);
                    }
                    1 => prop_assert_eq!(t.remove(&id), m.remove(&id)),
                    _ => {
                        // Update in place through a probe.
                        match t.probe(&id) {
                            Probe::Found(b) => *t.value_at_mut(b) = i as u32,
                            Probe::Vacant(b) => t.insert_at(b, id, i as u32),
                        }
                        m.insert(id, i as u32);
                    }
                }
                prop_assert_eq!(t.len(), m.len());
            }
            for (id, v) in m {
                prop_assert_eq!(t.get(&id), Some(&v));
            }
        }
    }

    #[test]
    fn removal_keeps_colliding_keys_reachable() {
        // Keys with one home bucket in an 8-bucket table: removing the first must shift the
        // others back, or a look-up would stop at the hole.
        let mut t: FlatMap<u32, u32> = FlatMap::default();
        t.insert(0, 0);
        let home = |k: u32| (k.hash() >> 32) as usize & 7;
        let same: Vec<u32> = (1..10_000)
            .filter(|k| home(*k) == home(0))
            .take(3)
            .collect();
        for &k in &same {
            assert!(t.insert(k, k));
        }
        assert_eq!(t.remove(&0), Some(0));
        for &k in &same {
            assert_eq!(t.get(&k), Some(&k), "key {k}");
        }
    }
}
