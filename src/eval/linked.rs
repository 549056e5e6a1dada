//! The issues a commit or pull request says it closes, read from its message by the words the
//! forges act on (GitHub's `close`, `closes`, `closed`, `fix`, `fixes`, `fixed`, `resolve`,
//! `resolves`, `resolved`; GitLab's and Forgejo's are the same words): `Fixes #12`,
//! `closes: #3`, `Resolves acme/calc#7` (another repository's, kept with its path). Pure: which
//! issue text to fetch is decided here, fetching is the forge's.

/// An issue a message says it closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linked {
    /// `owner/name` (or a GitLab group path) when the message names another repository.
    pub repo: Option<String>,
    pub number: u64,
}

const WORDS: [&str; 9] = ["close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved"];

/// The most issues taken from one message.
pub const MAX_LINKED: usize = 5;

/// The issues `message` says it closes, in order, once each, at most [`MAX_LINKED`].
pub fn closed_by(message: &str) -> Vec<Linked> {
    let mut out: Vec<Linked> = Vec::new();
    let tokens: Vec<&str> = message.split(|c: char| c.is_whitespace() || c == ',').filter(|t| !t.is_empty()).collect();
    for pair in tokens.windows(2) {
        let word = pair[0].trim_end_matches(':').to_ascii_lowercase();
        if !WORDS.contains(&word.as_str()) {
            continue;
        }
        if let Some(l) = reference(pair[1].trim_end_matches(['.', ')', ';', ':']))
            && !out.contains(&l)
            && out.len() < MAX_LINKED
        {
            out.push(l);
        }
    }
    out
}

/// `#12` or `path/to/repo#12`.
fn reference(t: &str) -> Option<Linked> {
    let (repo, number) = t.split_once('#')?;
    let number: u64 = number.parse().ok().filter(|n| *n > 0)?;
    if repo.is_empty() {
        return Some(Linked { repo: None, number });
    }
    let plain = |p: &str| {
        !p.is_empty() && p != "." && p != ".." && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    (repo.contains('/') && repo.split('/').all(plain)).then(|| Linked { repo: Some(repo.to_string()), number })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here(n: u64) -> Linked {
        Linked { repo: None, number: n }
    }

    #[test]
    fn the_closing_words_name_the_issues() {
        assert_eq!(closed_by("Fix add\n\nFixes #12."), [here(12)]);
        assert_eq!(closed_by("closes: #3, resolves #4 and fixes #3"), [here(3), here(4)]);
        assert_eq!(closed_by("Resolves acme/calc#7"), [Linked { repo: Some("acme/calc".into()), number: 7 }]);
        assert_eq!(closed_by("See #12; fixing #13 later"), [], "not a closing word");
        assert_eq!(closed_by("fixes #0 fixes #x fixes ../x#1 fixes a#2 fixes #99999999999999999999"), []);
        let many: String = (1..20).map(|n| format!("fixes #{n} ")).collect();
        assert_eq!(closed_by(&many).len(), MAX_LINKED);
    }
}
