//! hone's own words for the commands it remembers: the build and test tools, each one's
//! subcommands, the flags, environment variables and values such commands use. A word of a
//! remembered command that is none of these (nor a path the repository had, nor a word of the
//! job's own commands) is never kept: the model chose it. Each list is its words, separated by
//! spaces.

/// The build and test tools whose commands are remembered, besides the programs of the job's own
/// setup and check commands and the repository's own scripts.
pub const TOOLS: &str = "cargo make npm npx pnpm yarn node deno bun pytest python python3 pip pip3 uv poetry hatch \
    tox nox go mvn ./mvnw gradle ./gradlew dotnet cmake ctest just bundle rake rspec ruby php composer phpunit mix \
    sbt swift zig sh bash";

/// Each tool's subcommands (the first plain word after it). A tool that runs the project's own
/// targets or scripts (`make test`, `npm run lint`) takes [`TARGETS`] too.
const SUBCOMMANDS: &[(&str, &str)] = &[
    (
        "cargo",
        "test build check clippy fmt run bench doc nextest tree update fetch metadata miri hack llvm-cov tarpaulin \
         audit deny insta expand generate-lockfile publish install add remove clean package vendor rustc rustdoc fix",
    ),
    ("npm", "test t run run-script ci install i exec ls audit start rebuild"),
    ("pnpm", "test run install i exec dlx ls start recursive"),
    ("yarn", "test run install exec dlx workspace workspaces start"),
    ("bun", "test run install x build"),
    ("deno", "test run lint fmt check task bench compile"),
    ("pip", "install list show freeze check"),
    ("pip3", "install list show freeze check"),
    ("uv", "run sync pip lock tool venv"),
    ("poetry", "run install lock check show"),
    ("hatch", "run test env build"),
    ("tox", "run list"),
    ("go", "test build vet run mod generate fmt list env install work tool"),
    ("mvn", "test verify compile package install clean validate test-compile"),
    ("./mvnw", "test verify compile package install clean validate test-compile"),
    ("gradle", "test build check assemble clean lint compileJava compileKotlin"),
    ("./gradlew", "test build check assemble clean lint compileJava compileKotlin"),
    ("dotnet", "test build restore run format tool clean pack"),
    ("bundle", "exec install check"),
    ("composer", "install test run-script run update dump-autoload validate"),
    ("mix", "test compile format deps.get credo dialyzer"),
    ("sbt", "test compile clean testOnly package"),
    ("swift", "test build run package"),
    ("zig", "build test run fmt"),
    ("npx", JS_TOOLS),
];

/// The tools that run a project's own targets or scripts by name.
const RUNS_TARGETS: &str = "make just rake npm pnpm yarn bun deno composer tox nox";

/// Common names of a project's own targets and scripts (`make test`, `npm run lint`).
const TARGETS: &str = "test tests check checks lint build fmt format typecheck types unit integration e2e ci coverage \
    cover all clean install dev compile verify release debug bench docs doc style static analyze test:unit test:e2e \
    test:ci lint:fix pre-commit precommit quality validate default";

/// JavaScript tools that `npx` (and the package managers) run.
const JS_TOOLS: &str =
    "jest vitest tsc eslint prettier mocha playwright cypress ava tap karma biome ts-node tsx nx turbo";

/// Python modules `python -m` runs.
const MODULES: &str = "unittest pytest pip venv mypy black ruff flake8 pylint coverage tox nox build doctest compileall isort pyright nose2";

/// Flags, by name (a value after `=` is checked on its own).
const FLAGS: &str = "-- -q -qq -v -vv -vvv -x -s -k -m -p -e -j -n -r -t -B -C -f -o -l -a -u -W -X -rA -ra -h -V \
    --release --features --all-features --no-default-features --workspace --all --all-targets --lib --bins --bin \
    --test --tests --doc --examples --benches --package --locked --frozen --offline --no-fail-fast --quiet \
    --verbose --jobs --target --manifest-path --nocapture --test-threads --ignored --include-ignored --exact \
    --color --tb --maxfail --lf --last-failed --ff --failed-first --deselect --ignore --co --collect-only \
    --no-header --disable-warnings --durations --cov --cov-report --runInBand --ci --watchAll --watch --coverage \
    --passWithNoTests --silent --reporter --run --bail --if-present --workspaces --filter --prefix \
    --ignore-scripts --frozen-lockfile --immutable --no-cache --race --count --short --timeout --cover --build \
    --config --parallel --recursive --fail-fast --stacktrace --info --debug --no-daemon --batch-mode \
    --no-transfer-progress --check --diff --fix --locals --failfast --buffer --catch --start-directory --pattern \
    --top-level-directory --strict --noEmit --project --dev --all-extras --extra --group --no-dev --editable \
    --upgrade --user --requirement --no-deps --verbosity --configuration --no-build --no-restore --logger --help \
    --version";

/// Environment variables a command is run with (`RUST_BACKTRACE=1 cargo test`).
const VARIABLES: &str = "CI RUST_BACKTRACE RUST_LOG RUST_TEST_THREADS RUSTFLAGS CARGO_INCREMENTAL PYTHONPATH \
    PYTHONDONTWRITEBYTECODE PYTHONWARNINGS NODE_ENV NODE_OPTIONS GOFLAGS CGO_ENABLED GOOS GOARCH TZ LANG LC_ALL DEBUG \
    VERBOSE RAILS_ENV MIX_ENV JAVA_HOME TERM";

/// Values of flags and variables, besides numbers and the repository's paths.
const VALUES: &str = "true false yes no on off auto never always short long line native full json html xml term \
    term-missing dot spec debug info warn error trace release dev test production development ci default minimal \
    quiet normal detailed diagnostic utf-8 UTF-8 C C.UTF-8 en_US.UTF-8 UTC dumb no:cacheprovider Release Debug \
    ./... ... .";

/// Whether `list` holds `word`.
fn has(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

/// A build or test tool hone knows.
pub fn is_tool(word: &str) -> bool {
    has(TOOLS, word)
}

/// Whether `word` is a subcommand of `program` (or, for a tool that runs targets, a common
/// target name).
pub fn is_subcommand(program: &str, word: &str) -> bool {
    let own = SUBCOMMANDS.iter().find(|(p, _)| *p == program).is_some_and(|(_, subs)| has(subs, word));
    own || (has(RUNS_TARGETS, program) && has(TARGETS, word))
}

/// Whether `word` is a word of hone's own that may stand anywhere after the program: a tool, a
/// target, a JavaScript tool, a Python module, a value or a number of at most four digits.
pub fn is_word(word: &str) -> bool {
    [TOOLS, TARGETS, JS_TOOLS, MODULES, VALUES].iter().any(|list| has(list, word))
        || ((1..=4).contains(&word.len()) && word.bytes().all(|b| b.is_ascii_digit()))
}

/// A known flag's name.
pub fn is_flag(name: &str) -> bool {
    has(FLAGS, name)
}

/// A known environment variable.
pub fn is_variable(name: &str) -> bool {
    has(VARIABLES, name)
}
