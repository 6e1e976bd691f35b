//! Pagination shared by every list.
use serde::{Deserialize, Serialize};

/// Sort direction on `created_at` (ties broken by id in the same direction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// Oldest first.
    Asc,
    /// Newest first (the default).
    #[default]
    Desc,
}

impl SortOrder {
    /// Parses `asc` / `desc` (case-insensitive).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.to_ascii_lowercase().as_str() {
            "asc" => Some(Self::Asc),
            "desc" => Some(Self::Desc),
            _ => None,
        }
    }
}

/// A validated page request: `page >= 1`, `1 <= limit <= max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    page: u32,
    limit: u32,
    /// Sort direction.
    pub sort: SortOrder,
}

/// Why a page request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// `page` below 1.
    #[error("page must be >= 1")]
    InvalidPage,
    /// `limit` outside `1..=max`.
    #[error("limit must be between 1 and {max}")]
    LimitOutOfRange {
        /// The configured maximum.
        max: u32,
    },
}

impl PageRequest {
    /// Default page size when the client sends none.
    pub const DEFAULT_LIMIT: u32 = 10;

    /// Validates a page request against the configured maximum limit.
    pub fn new(page: u32, limit: u32, sort: SortOrder, max_limit: u32) -> Result<Self, PageError> {
        if page == 0 {
            return Err(PageError::InvalidPage);
        }
        if limit == 0 || limit > max_limit {
            return Err(PageError::LimitOutOfRange { max: max_limit });
        }
        Ok(Self { page, limit, sort })
    }

    /// 1-based page number.
    pub fn page(&self) -> u32 {
        self.page
    }
    /// Page size.
    pub fn limit(&self) -> u32 {
        self.limit
    }
    /// Number of items to skip.
    pub fn offset(&self) -> u64 {
        u64::from(self.page - 1) * u64::from(self.limit)
    }
}

/// One page of results. `total` is the real number of matching items, not the page length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items of this page, in the requested order.
    pub items: Vec<T>,
    /// 1-based page number.
    pub page: u32,
    /// Requested page size.
    pub limit: u32,
    /// Number of items matching the query across all pages.
    pub total: u64,
}

impl<T> Page<T> {
    /// Slices an already filtered and sorted collection into a page (used by in-memory adapters).
    pub fn from_sorted(all: Vec<T>, req: PageRequest) -> Self {
        let total = all.len() as u64;
        let items = all
            .into_iter()
            .skip(usize::try_from(req.offset()).unwrap_or(usize::MAX))
            .take(req.limit as usize)
            .collect();
        Self {
            items,
            page: req.page,
            limit: req.limit,
            total,
        }
    }

    /// Maps the items, keeping the paging numbers.
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            page: self.page,
            limit: self.limit,
            total: self.total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn pages_partition_the_collection(n in 0usize..300, limit in 1u32..=100) {
            let all: Vec<usize> = (0..n).collect();
            let mut seen = Vec::new();
            let mut page = 1;
            loop {
                let req = PageRequest::new(page, limit, SortOrder::Asc, 100).unwrap();
                let p = Page::from_sorted(all.clone(), req);
                prop_assert_eq!(p.total, n as u64);
                prop_assert!(p.items.len() <= limit as usize);
                if p.items.is_empty() { break; }
                seen.extend(p.items);
                page += 1;
            }
            prop_assert_eq!(seen, all);
        }

        #[test]
        fn limit_bounds(limit in 0u32..1000, max in 1u32..200) {
            let r = PageRequest::new(1, limit, SortOrder::Desc, max);
            prop_assert_eq!(r.is_ok(), limit >= 1 && limit <= max);
        }
    }

    #[test]
    fn page_zero_refused() {
        assert_eq!(
            PageRequest::new(0, 10, SortOrder::Asc, 100),
            Err(PageError::InvalidPage)
        );
    }
}
