//! Attacks on the view's git configs (review of issue 40): config files the jail shows raw.

use super::*;

/// `git submodule add URL libs/foo` names the submodule `libs/foo`: its git dir is
/// `.git/modules/libs/foo`, whose config actions/checkout fills with the persisted
/// extraheader (`submodules: true`). The jail must show it sanitized like the others.
#[test]
fn a_submodule_whose_name_has_a_slash_has_its_config_sanitized() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join(".git");
    std::fs::create_dir_all(g.join("modules/libs/foo")).unwrap();
    std::fs::write(g.join("config"), "").unwrap();
    std::fs::write(g.join("modules/libs/foo/config"), "[http \"https://github.com/\"]\n\textraheader = X\n").unwrap();
    let got = files(std::slice::from_ref(&g));
    assert!(got.contains(&g.join("modules/libs/foo/config")), "not sanitized, shown raw: {got:?}");
}

/// The intake registers submodule configs 8 deep; the view sanitizes them 6 deep: a config
/// the intake knows holds a secret, between the two, is shown raw.
#[test]
fn a_deeply_nested_submodule_has_its_config_sanitized() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join(".git");
    let mut d = g.clone();
    for i in 0..7 {
        d = d.join("modules").join(format!("m{i}"));
    }
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("config"), "[core]\n").unwrap();
    let got = files(std::slice::from_ref(&g));
    assert!(got.contains(&d.join("config")), "the 7th nested submodule's config is not sanitized: {got:?}");
}

/// More submodule configs than the cap: those past it are shown raw.
#[test]
fn every_submodule_config_is_sanitized_however_many() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join(".git");
    for i in 0..300 {
        std::fs::create_dir_all(g.join(format!("modules/m{i:03}"))).unwrap();
        std::fs::write(g.join(format!("modules/m{i:03}/config")), "[core]\n").unwrap();
    }
    let got = files(std::slice::from_ref(&g));
    assert_eq!(got.len(), 300, "only {} of 300 submodule configs are sanitized", got.len());
}
