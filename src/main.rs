//! The `hone` binary: parse the command line, set up logging on stderr, run, map to an exit code.

use clap::Parser;
use hone::agent::{self, RunOptions};
use hone::cli::{Cli, Command};
use hone::exit;
use hone::progress::Progress;
use hone::redact::Redactor;
use std::io::Write;
use tokio_util::sync::CancellationToken;

fn main() {
    // The jail's own processes: single-threaded, before anything else starts.
    if let Some(code) = hone::jail::dispatch(&std::env::args().collect::<Vec<_>>()) {
        std::process::exit(code);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { exit::INVALID_INPUT } else { exit::SUCCESS };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    hone::git::isolate_config();
    let redactor = Redactor::new();
    init_tracing(cli.verbose, cli.quiet, redactor.clone());
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("hone: cannot start the async runtime: {e}");
            std::process::exit(exit::INFRA_FAILURE);
        }
    };
    let quiet = cli.quiet;
    let code = rt.block_on(async move {
        match cli.command {
            Command::Validate { file } => validate(&file),
            Command::Fleet { action, file, resume, only, dry_run, emit_matrix, shard, json } => {
                let f = FleetArgs { resume, only_failed: only.is_some(), dry_run, emit_matrix, shard, json, quiet };
                fleet(action, file, f, redactor).await
            }
            Command::Run { job, repo, report_dir, json, dry_run, task, model, name, verify, pr } => {
                let cancel = CancellationToken::new();
                spawn_signal_handler(cancel.clone());
                let env = std::sync::Arc::new(hone::env::RunEnv::from_process());
                let in_actions = env.actions;
                let mut opts = RunOptions::new(job, env, cancel, redactor);
                opts.json_out = json.then(|| Box::new(std::io::stdout()) as Box<dyn Write + Send>);
                opts.progress = (!quiet).then(|| Progress::stderr(in_actions));
                // Under GitHub Actions, workflow commands go to stdout (stderr with --json, to keep
                // the JSONL stream clean).
                opts.commands_out = match (in_actions, json) {
                    (false, _) => None,
                    (true, false) => Some(Box::new(std::io::stdout())),
                    (true, true) => Some(Box::new(std::io::stderr())),
                };
                (opts.repo, opts.report_dir, opts.dry_run) = (repo, report_dir, dry_run);
                (opts.task, opts.model, opts.name, opts.verify, opts.pr) = (task, model, name, verify, pr);
                let outcome = agent::run(opts).await;
                if let Some(m) = &outcome.message {
                    eprintln!("{m}");
                }
                if !json {
                    println!("{}", outcome.line);
                }
                outcome.exit_code
            }
        }
    });
    std::process::exit(code);
}

/// `hone fleet`'s flags.
struct FleetArgs {
    resume: bool,
    only_failed: bool,
    dry_run: bool,
    emit_matrix: Option<usize>,
    shard: Option<String>,
    json: bool,
    quiet: bool,
}

async fn fleet(
    action: Option<hone::cli::FleetAction>,
    file: Option<std::path::PathBuf>,
    a: FleetArgs,
    redactor: Redactor,
) -> i32 {
    let FleetArgs { resume, only_failed, dry_run, emit_matrix, shard, json, quiet } = a;
    let report = |r: Result<hone::fleet::FleetOutcome, agent::Invalid>| match r {
        Ok(o) => {
            if !json {
                println!("{}", o.line);
            }
            o.exit_code
        }
        Err(e) => {
            eprintln!("{}", e.message);
            exit::INVALID_INPUT
        }
    };
    if let Some(hone::cli::FleetAction::Merge { dirs, out }) = action {
        return report(hone::fleet::merge(&dirs, &out));
    }
    let Some(file) = file else {
        eprintln!("error: give a fleet file: hone fleet FLEET.yaml");
        return exit::INVALID_INPUT;
    };
    if let Some(n) = emit_matrix {
        return match hone::fleet::spec::load(&file) {
            Ok(f) => {
                println!("{}", hone::fleet::aggregate::matrix(n, f.targets.len()));
                exit::SUCCESS
            }
            Err(d) => {
                eprintln!("{}", d.iter().map(|d| d.render("E_SPEC")).collect::<Vec<_>>().join("\n"));
                exit::INVALID_INPUT
            }
        };
    }
    let shard = match shard
        .as_deref()
        .map(|s| s.split_once('/').and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?))))
    {
        None => None,
        Some(Some((i, n))) if i >= 1 && i <= n => Some((i, n)),
        Some(_) => {
            eprintln!("error: --shard takes i/N with 1 <= i <= N, like 2/8");
            return exit::INVALID_INPUT;
        }
    };
    let cancel = CancellationToken::new();
    spawn_signal_handler(cancel.clone());
    let env = std::sync::Arc::new(hone::env::RunEnv::from_process());
    let opts = hone::fleet::FleetOptions { file, resume, only_failed, dry_run, shard, cancel, redactor, json, quiet, env };
    report(hone::fleet::run(opts).await)
}

fn validate(file: &std::path::Path) -> i32 {
    match hone::validate::validate(file) {
        Ok(line) => {
            println!("{line}");
            exit::SUCCESS
        }
        Err(msg) => {
            eprintln!("{msg}");
            exit::INVALID_INPUT
        }
    }
}

/// SIGINT/SIGTERM cancel the run (it stops in order and writes its reports); a second exits at once.
fn spawn_signal_handler(cancel: CancellationToken) {
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
            tracing::warn!("cannot install signal handlers");
            return;
        };
        let mut seen = false;
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            if seen {
                eprintln!("hone: second signal, exiting now");
                std::process::exit(exit::INTERRUPTED);
            }
            seen = true;
            tracing::warn!("signal received: stopping (a second signal exits at once)");
            cancel.cancel();
        }
    });
}

/// Logs go to stderr, every line through the redactor. Progress lines cover what info logs
/// would say, so by default only warnings and errors are logged.
fn init_tracing(verbose: u8, quiet: bool, redactor: Redactor) {
    use tracing_subscriber::EnvFilter;
    let default = match (verbose, quiet) {
        (0, true) => "hone=error",
        (0, false) => "hone=warn",
        (1, _) => "hone=debug",
        _ => "hone=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let make = move || RedactingWriter { inner: std::io::stderr(), redactor: redactor.clone(), buf: Vec::new() };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(make)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

struct RedactingWriter {
    inner: std::io::Stderr,
    redactor: Redactor,
    buf: Vec<u8>,
}

impl Write for RedactingWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if !self.buf.is_empty() {
            // A newline inside a message must not start a GitHub Actions workflow command.
            let text = self.redactor.apply(&String::from_utf8_lossy(&self.buf)).replace("\n::", "\n ::");
            self.buf.clear();
            self.inner.write_all(text.as_bytes())?;
        }
        self.inner.flush()
    }
}

impl Drop for RedactingWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}
