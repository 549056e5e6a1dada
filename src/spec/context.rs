//! `context:`: the repo map's budget and the repository's instruction files (which, how much),
//! each entry checked to be a plain path inside the repository.

use super::Checker;
use super::job::InstructionsSpec;
use super::raw::RawContext;

/// The instruction files read by default: the files Codex, Claude Code, Copilot, Goose and
/// OpenHands read. The plain names are also looked for in the directories the model works in.
pub const DEFAULT_INSTRUCTIONS: [&str; 5] =
    ["AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md", ".goosehints", ".openhands/microagents/repo.md"];

const MAX_FILE_BYTES: usize = 1 << 20;

impl Checker<'_> {
    /// The repo map's token budget and the instruction files' settings, checked.
    pub(super) fn context(&mut self, c: RawContext) -> (usize, InstructionsSpec) {
        let mut files: Vec<String> = Vec::new();
        let raw = c.instructions.unwrap_or_else(|| DEFAULT_INSTRUCTIONS.map(String::from).to_vec());
        for (i, f) in raw.into_iter().enumerate() {
            if let Err(why) = plain_path(&f) {
                let key = format!("context.instructions[{i}]");
                self.err(
                    &key,
                    format!("`{f}` {why}"),
                    "name a file by its path from the repository root, like `AGENTS.md` or `docs/agents.md`",
                );
            } else if !files.contains(&f) {
                files.push(f);
            }
        }
        let max_bytes = c.instructions_max_bytes.unwrap_or(16 * 1024);
        if max_bytes == 0 || max_bytes > MAX_FILE_BYTES {
            self.err(
                "context.instructions_max_bytes",
                format!("{max_bytes} is out of range"),
                "use 1 to 1048576 bytes; the default is 16384",
            );
        }
        let spec = InstructionsSpec { files, max_bytes, tokens: c.instructions_tokens.unwrap_or(4000) };
        (c.repo_map_tokens.unwrap_or(1500), spec)
    }
}

/// Whether `p` is a path of plain components inside the repository: relative, no `.` or `..`,
/// no empty component, no backslash or control character.
pub(super) fn plain_path(p: &str) -> Result<(), &'static str> {
    if p.is_empty() {
        return Err("is empty");
    }
    if p.starts_with('/') {
        return Err("is an absolute path");
    }
    if p.chars().any(|c| c.is_control() || c == '\\') {
        return Err("holds a backslash or a control character");
    }
    if p.split('/').any(|c| c == "..") {
        return Err("leads out of the repository (`..`)");
    }
    if p.split('/').any(|c| c.is_empty() || c == ".") {
        return Err("has an empty or `.` component");
    }
    if p.split('/').next() == Some(".git") {
        return Err("is inside `.git`");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{SpecError, parse};
    use std::path::Path;

    const SPEC: &str = "version: 1\ntask: t\nmodel: { provider: openai, name: gpt-4.1 }\n";

    #[test]
    fn instructions_default_to_the_peers_files() {
        let job = parse(Path::new("job.yaml"), SPEC).unwrap();
        assert_eq!(job.instructions.files, DEFAULT_INSTRUCTIONS);
        assert_eq!((job.instructions.max_bytes, job.instructions.tokens), (16384, 4000));
        let off = parse(Path::new("job.yaml"), &format!("{SPEC}context: {{ instructions: [] }}\n")).unwrap();
        assert!(off.instructions.files.is_empty());
    }

    #[test]
    fn instructions_outside_the_repository_are_errors_at_their_place() {
        let text = format!(
            "{SPEC}context:\n  instructions:\n    - AGENTS.md\n    - /etc/passwd\n    - ../x.md\n    - docs/../../y\n    - a//b\n    - AGENTS.md\n  instructions_max_bytes: 0\n"
        );
        let Err(SpecError::Invalid(d)) = parse(Path::new("job.yaml"), &text) else { panic!("accepted") };
        let at: Vec<(&str, u64, u64)> = d.iter().map(|d| (d.path.as_str(), d.line, d.col)).collect();
        assert_eq!(
            at,
            [
                ("context.instructions[1]", 7, 7),
                ("context.instructions[2]", 8, 7),
                ("context.instructions[3]", 9, 7),
                ("context.instructions[4]", 10, 7),
                ("context.instructions_max_bytes", 12, 27),
            ],
            "{d:?}"
        );
        assert!(d[0].message.contains("absolute"), "{}", d[0].message);
        assert!(d[1].message.contains(".."), "{}", d[1].message);
    }

    #[test]
    fn instructions_are_plain_paths() {
        for ok in ["AGENTS.md", ".github/copilot-instructions.md", "a/b.md"] {
            assert_eq!(plain_path(ok), Ok(()), "{ok}");
        }
        for bad in ["", "/x", "..", "a/../b", "./a", "a/", "a\\b", "a\nb", ".git/config"] {
            assert!(plain_path(bad).is_err(), "{bad:?}");
        }
    }
}
