//! The lines of a pull request's diff a review comment may be anchored to: each hunk's range on
//! the new side, read from the hunk headers of the forge's per-file patch text.

use std::collections::BTreeMap;

/// Per path, the new-side line ranges (1-based, inclusive) of the PR diff's hunks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Commentable {
    hunks: BTreeMap<String, Vec<(u32, u32)>>,
}

impl Commentable {
    /// Add the hunks of `patch` (a file's patch as a forge gives it: hunks, no file headers) for
    /// `path`. Hunk headers that do not parse are skipped: their lines are not commentable.
    pub fn add(&mut self, path: &str, patch: &str) {
        let ranges = self.hunks.entry(path.to_string()).or_default();
        ranges.extend(patch.lines().filter_map(new_side));
    }

    /// Whether a comment may span lines `start..=end` of `path`: all inside one hunk.
    pub fn allows(&self, path: &str, start: u32, end: u32) -> bool {
        start >= 1
            && start <= end
            && self.hunks.get(path).is_some_and(|r| r.iter().any(|&(a, b)| a <= start && end <= b))
    }
}

/// The new-side range of a hunk header `@@ -a[,b] +c[,d] @@…`; `None` for other lines and for an
/// empty new side.
fn new_side(line: &str) -> Option<(u32, u32)> {
    let rest = line.strip_prefix("@@ -")?;
    let (_, rest) = rest.split_once(" +")?;
    let (range, _) = rest.split_once(" @@")?;
    let (start, len) = match range.split_once(',') {
        Some((s, l)) => (s.parse::<u32>().ok()?, l.parse::<u32>().ok()?),
        None => (range.parse::<u32>().ok()?, 1),
    };
    if len == 0 || start == 0 {
        return None;
    }
    Some((start, start.checked_add(len - 1)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers_give_the_new_side_ranges() {
        assert_eq!(new_side("@@ -1,3 +1,4 @@ fn main() {"), Some((1, 4)));
        assert_eq!(new_side("@@ -10 +12 @@"), Some((12, 12)));
        assert_eq!(new_side("@@ -5,2 +4,0 @@"), None, "nothing left on the new side");
        assert_eq!(new_side("+@@ -1,3 +1,4 @@"), None, "an added line that looks like a header");
        assert_eq!(new_side("@@ -1,3 +x,4 @@"), None);
        assert_eq!(new_side("@@ -1,3 +4294967295,2 @@"), None, "no overflow");
    }

    #[test]
    fn a_comment_must_sit_inside_one_hunk() {
        let mut c = Commentable::default();
        c.add("src/a.rs", "@@ -1,3 +1,4 @@\n a\n+b\n c\n d\n@@ -20,2 +21,3 @@ x\n y\n+z\n w\n");
        assert!(c.allows("src/a.rs", 1, 4));
        assert!(c.allows("src/a.rs", 22, 22));
        assert!(!c.allows("src/a.rs", 4, 21), "across two hunks");
        assert!(!c.allows("src/a.rs", 5, 5), "between hunks");
        assert!(!c.allows("src/a.rs", 0, 1));
        assert!(!c.allows("src/b.rs", 1, 1));
    }
}
