//! A slab: records with stable `u32` indices whose freed slots are reused, so a warmed-up
//! simulation allocates nothing per packet, message or request.

use std::ops::{Index, IndexMut};

#[derive(Debug, Clone)]
pub struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Slab<T> {
    pub fn new() -> Self {
        Self {
            items: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Stores `t` in a free slot (or a new one) and returns its index.
    pub fn insert(&mut self, t: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = t;
                i
            }
            None => {
                self.items.push(t);
                (self.items.len() - 1) as u32
            }
        }
    }

    /// Frees slot `i` for reuse. Its value stays in place (and is dropped) only when the slot is
    /// reused, so callers must not read it after this.
    pub fn remove(&mut self, i: u32) {
        debug_assert!((i as usize) < self.items.len());
        self.free.push(i);
    }

    /// Slots in use.
    pub fn live(&self) -> usize {
        self.items.len() - self.free.len()
    }

    /// Slots ever allocated, in use or free: valid indices are `0..capacity()`.
    pub fn capacity(&self) -> usize {
        self.items.len()
    }
}

impl<T> Index<u32> for Slab<T> {
    type Output = T;
    fn index(&self, i: u32) -> &T {
        &self.items[i as usize]
    }
}

impl<T> IndexMut<u32> for Slab<T> {
    fn index_mut(&mut self, i: u32) -> &mut T {
        &mut self.items[i as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_slots_and_keeps_indices_stable() {
        let mut s = Slab::new();
        let a = s.insert(10);
        let b = s.insert(20);
        assert_eq!((a, b, s.live()), (0, 1, 2));
        s.remove(a);
        assert_eq!(s.live(), 1);
        let c = s.insert(30);
        assert_eq!(c, a, "the freed slot is reused");
        assert_eq!((s[b], s[c]), (20, 30));
        s[b] += 1;
        assert_eq!(s[b], 21);
    }
}
