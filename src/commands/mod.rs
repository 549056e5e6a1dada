//! What each command does, from parsed arguments to an exit code: `main.rs` only parses.
// The one module that writes the result line (or the matrix) to stdout.
#![allow(clippy::print_stdout)]

// stdout is read by the CI runner like stderr: every line made neutral (`ci_text`).
macro_rules! println {
    ($($arg:tt)*) => { ::std::println!("{}", crate::ci_text::lines(&format!($($arg)*))) };
}
macro_rules! print {
    ($($arg:tt)*) => { ::std::print!("{}", crate::ci_text::lines(&format!($($arg)*))) };
}

mod eval;
mod memory;
mod recover;
mod signals;

use signals::spawn_signal_handler;

use crate::cli::{Cli, Command, EvalAction, FleetAction, FleetArgs, PrsAction, RunArgs};
use crate::env::RunEnv;
use crate::error::{Code, HoneError};
use crate::exit;
use crate::progress::Progress;
use crate::redact::Redactor;
use crate::run::{self, EventSinks, Overrides, Request, Sinks, Source};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A command line clap refused, or `--help`/`--version`: its text (which quotes the arguments,
/// where a workflow may have put an issue's text) printed neutral for the CI runner, without
/// colours. Returns the exit code.
pub fn usage(e: &clap::Error) -> i32 {
    let text = e.render().to_string();
    if e.use_stderr() {
        eprint!("{text}");
        exit::INVALID_INPUT
    } else {
        print!("{text}");
        exit::SUCCESS
    }
}

/// Run the parsed command line and return the process's exit code.
pub fn main(cli: Cli) -> i32 {
    // A panic's message goes through the crate's neutral `eprintln!` like every other line.
    std::panic::set_hook(Box::new(|info| {
        // The shell parser's own panics are contained and refused (policy::parser_guard).
        if crate::policy::parsing_contained() {
            return;
        }
        let trace = std::backtrace::Backtrace::capture();
        eprintln!("hone: internal error (a bug in hone): {info}");
        if trace.status() == std::backtrace::BacktraceStatus::Captured {
            eprintln!("{trace}");
        }
    }));
    crate::git::isolate_config();
    let redactor = Redactor::new();
    // The OTLP headers' values (a collector's key): masked in everything hone writes.
    let env_now = RunEnv::from_process();
    crate::telemetry::config::header_secrets(|k| env_now.var(k)).iter().for_each(|s| redactor.add(s));
    crate::logging::init(cli.verbose, cli.quiet, redactor.clone());
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!(
                "hone: {}",
                HoneError::new(Code::Internal, format!("cannot start the async runtime: {e}")).render()
            );
            return exit::INFRA_FAILURE;
        }
    };
    let quiet = cli.quiet;
    let code = rt.block_on(async move {
        match cli.command {
            Command::Validate { file } => validate(&file),
            Command::Init { dir, model, forge } => init(dir, &model, forge),
            Command::Replay { dir, report_dir, job, repo, allow_sandbox_off, try_no } => {
                let at = crate::replay::Where { report_dir, job, repo, allow_sandbox_off, try_no };
                let cancel = CancellationToken::new();
                spawn_signal_handler(cancel.clone());
                let (code, line) = crate::replay::replay(&dir, at, quiet, redactor, cancel).await;
                if let Some(l) = line {
                    println!("{l}");
                }
                code
            }
            Command::Schema { which } => {
                print!("{}", crate::schema::generate(which));
                exit::SUCCESS
            }
            Command::Memory { action } => memory(action),
            Command::Recover { repo, json } => recover(repo, json),
            Command::Eval { action } => eval_cmd(action).await,
            Command::Fleet { action, args } => fleet(action, args, quiet, redactor).await,
            Command::Run(args) => run(args, quiet, redactor).await,
        }
    });
    // Whatever a blocking thread still waits on (a collector's name being resolved at the very
    // end) does not keep the process: everything the command does was awaited.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

/// `hone run`: one job; the result line on stdout (or the JSONL events with `--json`).
async fn run(a: RunArgs, quiet: bool, redactor: Redactor) -> i32 {
    let cancel = CancellationToken::new();
    spawn_signal_handler(cancel.clone());
    let env = Arc::new(RunEnv::from_process());
    let in_actions = env.actions;
    let source = a.job.map_or(Source::OneOff, Source::Spec);
    let mut req = Request::new(source, env, cancel, redactor);
    let change = if a.review { Some(crate::spec::answer::Change::Review) } else { a.change };
    let no_memory = a.no_memory;
    req.overrides = Overrides {
        task: a.task,
        model: a.model,
        name: a.name,
        verify: a.verify,
        pr: a.pr,
        base: None,
        change,
        no_memory,
        attempts: a.attempts,
    };
    req.memory_dir = a.memory_dir;
    (req.repo, req.report_dir, req.dry_run, req.continue_from) = (a.repo, a.report_dir, a.dry_run, a.continue_from);
    let events = EventSinks {
        json: a.json.then(crate::ci_text::Out::json_stdout),
        progress: (!quiet).then(|| Progress::stderr(in_actions)),
        tag: None,
    };
    // Under GitHub Actions, workflow commands go to stdout (stderr with --json, to keep the
    // JSONL stream clean).
    let commands = match (in_actions, a.json) {
        (false, _) => None,
        (true, false) => Some(crate::ci_text::Out::stdout()),
        (true, true) => Some(crate::ci_text::Out::stderr()),
    };
    let outcome = run::run(req, Sinks { events, commands }, Default::default()).await;
    if let Some(m) = &outcome.message {
        eprintln!("{m}");
    }
    if !a.json {
        println!("{}", outcome.line);
    }
    outcome.exit_code
}

/// `hone fleet`: a fleet file, its matrix, one shard of it, or a merge of shard results.
async fn fleet(action: Option<FleetAction>, a: FleetArgs, quiet: bool, redactor: Redactor) -> i32 {
    let json = a.json;
    let report = |r: Result<crate::fleet::FleetOutcome, HoneError>| match r {
        Ok(o) => {
            if !json {
                println!("{}", o.line);
            }
            o.exit_code
        }
        Err(e) => {
            eprintln!("{}", e.render());
            exit::INVALID_INPUT
        }
    };
    match action {
        Some(FleetAction::Merge { dirs, out }) => return report(crate::fleet::merge(&dirs, &out)),
        Some(FleetAction::Prs { action }) => return fleet_prs(action, quiet, redactor).await,
        None => {}
    }
    let Some(file) = a.file else {
        eprintln!(
            "{}",
            HoneError::new(Code::InvalidArgs, "no fleet file given").hint("hone fleet FLEET.yaml").render()
        );
        return exit::INVALID_INPUT;
    };
    if let Some(n) = a.emit_matrix {
        return match crate::fleet::spec::load(&file) {
            Ok(f) => {
                // A query's repositories are not known before it runs: N shards, whatever their number.
                let known = if f.queries.is_empty() { f.targets.len() } else { usize::MAX };
                println!("{}", crate::fleet::aggregate::matrix(n as usize, known));
                exit::SUCCESS
            }
            Err(d) => {
                eprintln!("{}", d.iter().map(|d| d.render("E_SPEC")).collect::<Vec<_>>().join("\n"));
                exit::INVALID_INPUT
            }
        };
    }
    let env = Arc::new(RunEnv::from_process());
    let shard = match a.shard.map(|s| s.resolve(env.var("JOB_COMPLETION_INDEX"))).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}", HoneError::from(e).render());
            return exit::INVALID_INPUT;
        }
    };
    let cancel = CancellationToken::new();
    spawn_signal_handler(cancel.clone());
    let opts = crate::fleet::FleetOptions {
        file,
        resume: a.resume,
        only_failed: a.only.is_some(),
        dry_run: a.dry_run,
        shard,
        cancel,
        redactor,
        json,
        quiet,
        env,
        workspace: a.workspace.clone(),
        out: a.out.clone(),
    };
    report(crate::fleet::run(opts).await)
}

/// `hone fleet prs status|close|merge`: the result line (or the report, `--json`) on stdout.
async fn fleet_prs(action: PrsAction, quiet: bool, redactor: Redactor) -> i32 {
    use crate::fleet::prs::Command as C;
    let (args, command) = match action {
        PrsAction::Status(a) => (a, C::Status),
        PrsAction::Close { args, reason, dry_run } => (args, C::Close { reason, dry_run }),
        PrsAction::Merge { args, dry_run, method } => (args, C::Merge { method, dry_run }),
    };
    let cancel = CancellationToken::new();
    spawn_signal_handler(cancel.clone());
    let opts = crate::fleet::prs::PrsOptions {
        file: args.file,
        command,
        out: args.out.clone(),
        workspace: args.workspace.clone(),
        resume: args.resume,
        concurrency: args.concurrency.map(|n| n as usize),
        cancel,
        redactor,
        quiet,
        env: Arc::new(RunEnv::from_process()),
    };
    match crate::fleet::prs::run(opts).await {
        Ok(o) => {
            if args.json {
                println!("{}", o.json);
            } else {
                println!("{}", o.line);
            }
            o.exit_code
        }
        Err(e) => {
            eprintln!("{}", e.render());
            exit::INVALID_INPUT
        }
    }
}

/// `hone init`: the files for the repository's ecosystem and forge; the result line on stdout.
fn init(dir: Option<std::path::PathBuf>, model: &str, forge: Option<crate::forge::Kind>) -> i32 {
    let start = dir.unwrap_or_else(|| std::path::PathBuf::from("."));
    let repo = git2::Repository::discover(&start).ok();
    let remote = repo.as_ref().and_then(|r| r.find_remote("origin").ok()?.url().ok().map(str::to_string));
    let root = match repo.and_then(|r| r.workdir().map(|w| w.to_path_buf())) {
        Some(r) => r,
        None => {
            let e = HoneError::new(Code::Git, format!("{} is not in a git repository", start.display()))
                .hint("run `hone init` in the repository hone is to work on (or `git init` first)");
            eprintln!("hone: {}", e.render());
            return exit::INVALID_INPUT;
        }
    };
    let Some(project) = crate::project::detect(&root).filter(|p| !p.verify.is_empty()) else {
        let e = HoneError::new(
            Code::Spec,
            format!("found no Python, Node, Rust or Go project with tests at {}", root.display()),
        )
        .hint("a Node project needs a `test`, `lint` or `build` script; otherwise write the spec by hand (docs/job-spec.md, examples/)");
        eprintln!("hone: {}", e.render());
        return exit::INVALID_INPUT;
    };
    let host = remote.as_deref().and_then(crate::forge::place::host_of);
    let kind = forge.unwrap_or_else(|| crate::forge::init::forge_of(host.as_deref(), &root));
    let crate::forge::init::Scaffold { files, next } = match crate::forge::init::scaffold(kind, &project, model, &root)
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("hone: {}", e.render());
            return exit::INVALID_INPUT;
        }
    };
    match crate::project::write(&root, &files) {
        Ok((written, kept)) => {
            for f in &written {
                eprintln!("wrote {}", f.display());
            }
            for f in &kept {
                eprintln!("kept {} (it exists; not overwritten)", f.display());
            }
            if project.found.len() > 1 {
                eprintln!("note: the checks are for the first of {:?}; add the others' by hand", project.found);
            }
            eprintln!("{next}");
            println!("hone: init wrote {} file(s), kept {} in {}", written.len(), kept.len(), root.display());
            exit::SUCCESS
        }
        Err(e) => {
            eprintln!("hone: {}", HoneError::new(Code::Io, format!("cannot write the files: {e}")).render());
            exit::INFRA_FAILURE
        }
    }
}

/// `hone memory …`: its result on stdout, warnings and errors on stderr.
fn memory(action: crate::cli::MemoryAction) -> i32 {
    match memory::run(action, &RunEnv::from_process()) {
        Ok(out) => {
            for w in &out.warnings {
                eprintln!("hone: warning: {w}");
            }
            println!("{}", out.stdout);
            exit::SUCCESS
        }
        Err(e) => {
            eprintln!("hone: {}", e.render());
            if e.code == Code::Io { exit::INFRA_FAILURE } else { exit::INVALID_INPUT }
        }
    }
}

/// `hone eval`: the result line on stdout, errors on stderr.
async fn eval_cmd(action: EvalAction) -> i32 {
    let cancel = CancellationToken::new();
    spawn_signal_handler(cancel.clone());
    match eval::mine(action, Arc::new(RunEnv::from_process()), cancel).await {
        Ok(line) => {
            println!("{line}");
            exit::SUCCESS
        }
        Err(e) => {
            eprintln!("hone: {}", e.render());
            match e.code {
                Code::Cancelled => exit::INTERRUPTED,
                Code::Io | Code::Internal | Code::Git | Code::Check | Code::Setup => exit::INFRA_FAILURE,
                _ => exit::INVALID_INPUT,
            }
        }
    }
}

/// `hone recover`: the result line (or JSON) on stdout, warnings and errors on stderr.
fn recover(repo: Option<std::path::PathBuf>, json: bool) -> i32 {
    match recover::run(repo, &RunEnv::from_process()) {
        Ok(out) => {
            for w in &out.warnings {
                eprintln!("hone: warning: {w}");
            }
            if json {
                println!("{}", serde_json::to_string(&out).unwrap_or_default());
            } else {
                println!("{}", recover::line(&out));
            }
            exit::SUCCESS
        }
        Err(e) => {
            eprintln!("hone: {}", e.render());
            recover::exit_code(&e)
        }
    }
}

fn validate(file: &std::path::Path) -> i32 {
    match crate::validate::validate(file) {
        Ok(line) => {
            println!("{line}");
            exit::SUCCESS
        }
        Err(e) => {
            eprintln!("{}", e.render());
            exit::INVALID_INPUT
        }
    }
}
