//! Column tables: what every part of a run (statistics, each power model) reports, and what the
//! bindings hand to Python as DataFrames. Column names carry their units.

/// One column of a table. Equality is bitwise (NaN equals NaN): two runs are the same when their
/// outputs are the same bytes.
#[derive(Debug, Clone)]
pub enum Column {
    U64(Vec<u64>),
    /// Integers that may be missing (e.g. the node of a switch's component).
    OptU64(Vec<Option<u64>>),
    F64(Vec<f64>),
    Str(Vec<String>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::U64(v) => v.len(),
            Column::OptU64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl PartialEq for Column {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Column::U64(a), Column::U64(b)) => a == b,
            (Column::OptU64(a), Column::OptU64(b)) => a == b,
            (Column::F64(a), Column::F64(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (Column::Str(a), Column::Str(b)) => a == b,
            _ => false,
        }
    }
}

/// A named table of equal-length columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: &'static str,
    pub columns: Vec<(&'static str, Column)>,
}
