//! The App's bot user as the commits' author: `{slug}[bot]` with GitHub's no-reply address for
//! it, `{id}+{slug}[bot]@users.noreply.github.com`, so that GitHub shows the App's avatar on the
//! commits it pushes. Used only when the job names no author of its own.

use crate::spec::Job;

/// The author and committer the spec gives when it names none (`spec::Job`'s defaults).
pub const DEFAULT_NAME: &str = "hone";
pub const DEFAULT_EMAIL: &str = "hone@users.noreply.github.com";

/// A commit identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub email: String,
}

impl Identity {
    /// The bot user of the App `slug` (a name `github::is_name` accepts), whose user id is `id`.
    pub fn bot(slug: &str, id: u64) -> Identity {
        Identity { name: format!("{slug}[bot]"), email: format!("{id}+{slug}[bot]@users.noreply.github.com") }
    }

    /// The bot user's login, `{slug}[bot]`.
    pub fn login(slug: &str) -> String {
        format!("{slug}[bot]")
    }
}

/// Whether the job leaves the author to hone: both `git.author_name` and `git.author_email` are
/// the defaults. (A spec that writes the defaults out is taken as naming none.)
pub fn unnamed(job: &Job) -> bool {
    job.git.author_name == DEFAULT_NAME && job.git.author_email == DEFAULT_EMAIL
}

/// Make `who` the job's author and committer, unless the job names its own; whether it did.
pub fn adopt(job: &mut Job, who: &Identity) -> bool {
    if !unnamed(job) {
        return false;
    }
    job.git.author_name = who.name.clone();
    job.git.author_email = who.email.clone();
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_job as job;

    #[test]
    fn the_bot_authors_unless_the_job_names_someone() {
        let bot = Identity::bot("hone-bot", 41898282);
        assert_eq!(bot.name, "hone-bot[bot]");
        assert_eq!(bot.email, "41898282+hone-bot[bot]@users.noreply.github.com");
        let mut j = job("");
        assert!(unnamed(&j), "the spec's defaults are these constants");
        assert!(adopt(&mut j, &bot));
        assert_eq!((j.git.author_name.as_str(), j.git.author_email.as_str()), (bot.name.as_str(), bot.email.as_str()));
        for yaml in ["git: { author_name: Ann }\n", "git: { author_email: ann@example.com }\n"] {
            let mut j = job(yaml);
            assert!(!adopt(&mut j, &bot), "{yaml}");
            assert_ne!(j.git.author_name, bot.name, "{yaml}");
        }
    }
}
