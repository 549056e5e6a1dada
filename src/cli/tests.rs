//! The command line as clap reads it: shards, fleets, their refusals.

use super::*;

#[test]
fn shards_parse_or_say_how_to_write_them() {
    assert_eq!("2/8".parse::<Shard>(), Ok(Shard { index: Some(2), count: 8 }));
    assert_eq!("1/1".parse::<Shard>(), Ok(Shard { index: Some(1), count: 1 }));
    assert_eq!("auto/4".parse::<Shard>(), Ok(Shard { index: None, count: 4 }));
    for bad in ["0/3", "4/3", "2", "a/b", "/3", "2/", "-1/3", "", "auto/0", "auto/x"] {
        let e = bad.parse::<Shard>().unwrap_err();
        assert!(e.to_string().contains("i/N"), "{bad}: {e}");
    }
}

#[test]
fn the_command_line_is_checked_by_clap() {
    let ok = Cli::try_parse_from(["hone", "fleet", "f.yaml", "--shard", "2/3", "--only", "failed"]).unwrap();
    let Command::Fleet { args, .. } = ok.command else { panic!("not fleet") };
    assert_eq!(args.shard, Some(Shard { index: Some(2), count: 3 }));
    assert_eq!(args.only, Some(Only::Failed));
    let prs = Cli::try_parse_from(["hone", "fleet", "prs", "merge", "f.yaml", "--dry-run", "--method", "squash"]);
    let Command::Fleet {
        action: Some(FleetAction::Prs { action: PrsAction::Merge { args, dry_run, method } }), ..
    } = prs.unwrap().command
    else {
        panic!("not fleet prs merge")
    };
    assert_eq!((args.file.to_str(), dry_run, method), (Some("f.yaml"), true, crate::fleet::prs::Method::Squash));
    let m = Cli::try_parse_from(["hone", "fleet", "merge", "a", "b", "--out", "o"]).unwrap();
    assert!(matches!(m.command, Command::Fleet { action: Some(FleetAction::Merge { .. }), .. }), "shard merge");
    let s = Cli::try_parse_from(["hone", "-q", "fleet", "prs", "status", "f.yaml", "--resume", "--concurrency", "8"]);
    let Command::Fleet { action: Some(FleetAction::Prs { action: PrsAction::Status(a) }), .. } = s.unwrap().command
    else {
        panic!("not fleet prs status")
    };
    assert_eq!((a.resume, a.concurrency), (true, Some(8)));
    for bad in [
        &["hone", "fleet", "prs", "merge", "f.yaml", "--method", "force"][..],
        &["hone", "fleet", "prs", "status", "f.yaml", "--concurrency", "0"],
        &["hone", "fleet", "f.yaml", "--shard", "4/3"],
        &["hone", "fleet", "f.yaml", "--only", "passed"],
        &["hone", "fleet", "f.yaml", "--emit-matrix", "0"],
    ] {
        let e = Cli::try_parse_from(bad).unwrap_err();
        use clap::error::ErrorKind::{InvalidValue, ValueValidation};
        assert!(matches!(e.kind(), InvalidValue | ValueValidation), "{bad:?}: {e}");
    }
}

#[test]
fn auto_shards_come_from_the_indexed_jobs_completion_index() {
    let auto = Shard { index: None, count: 4 };
    assert_eq!(auto.resolve(Some("0")), Ok((1, 4)));
    assert_eq!(auto.resolve(Some("3")), Ok((4, 4)));
    assert!(auto.resolve(Some("4")).unwrap_err().to_string().contains("from 0 to 3"));
    assert!(auto.resolve(Some("x")).is_err());
    assert!(auto.resolve(None).unwrap_err().to_string().contains("JOB_COMPLETION_INDEX"));
    let e = crate::error::HoneError::from(auto.resolve(None).unwrap_err());
    assert_eq!(e.code, crate::error::Code::Spec);
    assert!(e.hint.is_some_and(|h| h.contains("completions: 4")), "the help says how to run it");
    assert_eq!(Shard { index: Some(2), count: 4 }.resolve(Some("0")), Ok((2, 4)), "a given index wins");
}

#[test]
fn memory_commands_parse_and_clear_takes_a_repository_or_all() {
    let c = Cli::try_parse_from(["hone", "memory", "forget", "command-1a2b3c4d", "setup-00ff00ff", "--repo", "r"]);
    let Command::Memory { action: MemoryAction::Forget { ids, at } } = c.unwrap().command else { panic!("not forget") };
    assert_eq!((ids.len(), at.remote.as_str(), at.repo.unwrap().to_str()), (2, "origin", Some("r")));
    let c = Cli::try_parse_from(["hone", "memory", "show", "--remote", "upstream", "--json", "--dir", "/m"]).unwrap();
    assert!(matches!(c.command, Command::Memory { action: MemoryAction::Show { json: true, .. } }));
    assert!(Cli::try_parse_from(["hone", "memory", "clear", "--all", "--repo", "r"]).is_err());
    assert!(Cli::try_parse_from(["hone", "memory", "forget"]).is_err(), "an id is required");
}
