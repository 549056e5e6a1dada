//! The AWS shared configuration files, as the SDKs read them: the profile named by
//! `AWS_PROFILE` (else `default`) from the credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else
//! `~/.aws/credentials`, sections `[name]`) and the config file (`AWS_CONFIG_FILE`, else
//! `~/.aws/config`, sections `[profile name]` or `[default]`); a key in the credentials file
//! wins over the same key in the config file. `~` is `HOME` from the run's environment.

use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A larger file is not a configuration file.
const MAX_FILE: u64 = 1 << 20;

/// The profile's settings (keys in lower case), and where they were looked for.
#[derive(Debug, Default, Clone)]
pub struct Profile {
    pub name: String,
    /// Named by `AWS_PROFILE` rather than the default.
    pub explicit: bool,
    /// Whether either file has a section for it.
    pub found: bool,
    pub values: BTreeMap<String, String>,
    /// The files read (or looked for), for messages.
    pub files: Vec<PathBuf>,
}

impl Profile {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str).filter(|v| !v.is_empty())
    }
}

/// The profile the environment names, from the files it names.
pub fn load(env: &RunEnv) -> Result<Profile, HoneError> {
    let explicit = env.var("AWS_PROFILE");
    let name = explicit.unwrap_or("default").to_string();
    let home = env.home().map(|h| h.join(".aws"));
    let file =
        |var: &str, default: &str| env.var(var).map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(default)));
    let config = file("AWS_CONFIG_FILE", "config");
    let credentials = file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    let mut p = Profile { name, explicit: explicit.is_some(), ..Profile::default() };
    let config_section = if p.name == "default" { "default".to_string() } else { format!("profile {}", p.name) };
    for (path, sections) in
        [(config, vec![config_section, format!("profile {}", p.name)]), (credentials, vec![p.name.clone()])]
    {
        let Some(path) = path else { continue };
        let text = read(&path)?;
        p.files.push(path);
        for section in sections {
            if let Some(values) = section_of(&text, &section) {
                p.found = true;
                p.values.extend(values);
            }
        }
    }
    Ok(p)
}

/// The file's text; a missing file is an empty one.
fn read(path: &Path) -> Result<String, HoneError> {
    let fail = |e: &dyn std::fmt::Display| {
        HoneError::new(Code::Spec, format!("cannot read the AWS configuration file {}: {e}", path.display()))
            .hint("fix the file, or point AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE elsewhere")
    };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(fail(&e)),
        Ok(m) if !m.is_file() => Err(fail(&"not a regular file")),
        Ok(m) if m.len() > MAX_FILE => Err(fail(&"larger than 1 MiB")),
        Ok(_) => std::fs::read_to_string(path).map_err(|e| fail(&e)),
    }
}

/// The `key = value` lines of `[section]` (every such section, later keys winning), or `None`
/// when there is none. Comment lines (`#`, `;`) and indented sub-properties are passed over.
pub fn section_of(text: &str, section: &str) -> Option<BTreeMap<String, String>> {
    let mut found: Option<BTreeMap<String, String>> = None;
    let mut inside = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|r| r.split(']').next()) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            inside = name == section;
            if inside {
                found.get_or_insert_default();
            }
            continue;
        }
        if !inside || line.starts_with([' ', '\t']) {
            continue;
        }
        if let (Some(map), Some((k, v))) = (found.as_mut(), trimmed.split_once('=')) {
            map.insert(k.trim().to_ascii_lowercase(), strip_comment(v.trim()).to_string());
        }
    }
    found
}

/// A value without a trailing ` #…` or ` ;…` comment.
fn strip_comment(v: &str) -> &str {
    let cut = [" #", "\t#", " ;", "\t;"].iter().filter_map(|c| v.find(c)).min();
    cut.map_or(v, |at| v[..at].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "# a comment\n[default]\nregion = us-west-2\n\n[profile ci]\nregion=eu-west-1 # Ireland\nrole_arn = arn:aws:iam::123456789012:role/ci\nweb_identity_token_file = /var/run/token\ns3 =\n  max_concurrent_requests = 20\n[profile   spaced  ]\nregion = ap-south-1\n";
    const CREDENTIALS: &str = "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = defaultsecret/with=signs\n; another comment\n[ci]\nregion = eu-central-1\n";

    fn env_with(dir: &Path, vars: &[(&str, &str)]) -> RunEnv {
        let mut all: BTreeMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        all.insert("HOME".into(), dir.display().to_string());
        RunEnv::from_vars(all)
    }

    #[test]
    fn sections_keys_comments_and_sub_properties() {
        let ci = section_of(CONFIG, "profile ci").unwrap();
        assert_eq!(ci["region"], "eu-west-1");
        assert_eq!(ci["role_arn"], "arn:aws:iam::123456789012:role/ci");
        assert!(!ci.contains_key("max_concurrent_requests"), "a sub-property is not a key");
        assert_eq!(section_of(CONFIG, "profile spaced").unwrap()["region"], "ap-south-1");
        assert!(section_of(CONFIG, "profile nope").is_none());
        assert_eq!(section_of(CREDENTIALS, "default").unwrap()["aws_secret_access_key"], "defaultsecret/with=signs");
    }

    #[test]
    fn the_default_profile_from_home_and_a_named_one_from_the_variables() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".aws")).unwrap();
        std::fs::write(dir.path().join(".aws/config"), CONFIG).unwrap();
        std::fs::write(dir.path().join(".aws/credentials"), CREDENTIALS).unwrap();
        let p = load(&env_with(dir.path(), &[])).unwrap();
        assert_eq!((p.name.as_str(), p.explicit, p.found), ("default", false, true));
        assert_eq!((p.get("region"), p.get("aws_access_key_id")), (Some("us-west-2"), Some("AKIADEFAULT")));
        let p = load(&env_with(dir.path(), &[("AWS_PROFILE", "ci")])).unwrap();
        assert!(p.explicit && p.found);
        assert_eq!(p.get("region"), Some("eu-central-1"), "the credentials file wins");
        assert_eq!(p.get("web_identity_token_file"), Some("/var/run/token"));
        let other = dir.path().join("elsewhere");
        std::fs::write(&other, "[profile ci]\nregion = sa-east-1\n").unwrap();
        let p = load(&env_with(
            dir.path(),
            &[
                ("AWS_PROFILE", "ci"),
                ("AWS_CONFIG_FILE", other.to_str().unwrap()),
                ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/x"),
            ],
        ))
        .unwrap();
        assert_eq!(p.get("region"), Some("sa-east-1"));
        assert!(p.get("role_arn").is_none());
        let p = load(&env_with(dir.path(), &[("AWS_PROFILE", "missing")])).unwrap();
        assert!(p.explicit && !p.found);
    }

    #[test]
    fn a_directory_or_a_huge_file_is_an_intake_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = load(&env_with(dir.path(), &[("AWS_CONFIG_FILE", dir.path().to_str().unwrap())])).unwrap_err();
        assert_eq!(e.code, Code::Spec);
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'#'; (MAX_FILE + 1) as usize]).unwrap();
        assert!(load(&env_with(dir.path(), &[("AWS_SHARED_CREDENTIALS_FILE", big.to_str().unwrap())])).is_err());
    }
}
