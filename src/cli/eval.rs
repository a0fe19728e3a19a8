//! `oneshot eval`: a manifest of cases, each asked k times (`oneshot::eval`). This maps
//! arguments to the library and prints the table or the JSON.

use super::exit;
use anyhow::{Context, Result};
use clap::Args;
use oneshot::engine::EngineError;
use oneshot::eval::{EvalError, Options};
use oneshot::schema::Registry;
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  oneshot eval examples/eval/manifest.yaml
  oneshot eval evals/nudgenik.yaml --target claude:haiku --k 5 --parallel 4
  oneshot eval evals/nudgenik.yaml --target-cmd \"sh classify.sh\" --json | jq .failed
  oneshot eval evals/branches.yaml --target codex --update     # write the golden files

A manifest (YAML) lists cases; paths in it are relative to it:

  schema: nudgenik                 # default for every case (a label or a .json file)
  target_cmd: sh classify.sh       # or target: claude:sonnet; --target/--target-cmd win
  k: 3
  prompt: |                        # a template for captured inputs
    What state is this agent in?
    {input}
  cases:
    - id: claude-done
      input: claude-done.txt       # its content replaces {input}
      want: Completed              # one value: the schema's enum field (state)
    - id: branch
      schema: branch-suggest
      prompt: add a --json flag to the list command
      want: {branch: add-list-json}   # these fields, these values; the rest is free
    - id: codex-error
      input: codex-error.txt
      golden: codex-error.want.json   # the whole answer; --update writes it

Each case runs k times and passes only if all k answers say what is expected (pass^k). The
table shows each case's answers counted (`Completed x2, Waiting x1`). Exit 0: every case
passed; 1: one failed; 2: the manifest or the arguments are wrong (it names the file, line
and case), nothing ran.";

/// `oneshot eval …`
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct EvalArgs {
    /// The manifest (YAML).
    #[arg(value_name = "MANIFEST.yaml")]
    pub manifest: PathBuf,
    /// Runs per case; all must pass [default: the manifest's `k`, else 3].
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    pub k: Option<u32>,
    /// Cases run at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub parallel: u64,
    /// Who answers [default: the manifest's `target` or `target_cmd`], how long and how often.
    #[command(flatten)]
    pub who: super::ask::TargetArgs,
    /// Write each golden file from its case's k answers, when they agree.
    #[arg(long)]
    pub update: bool,
    /// Print one JSON object (docs/json.md) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `oneshot eval`; returns the exit code.
pub fn run(args: EvalArgs, files: &super::config::Files) -> Result<i32> {
    let cwd = std::env::current_dir()?;
    let usage = |e: EvalError| EngineError::Usage(format!("run the eval: {e}"));
    let registry_dir = args.who.registry(&cwd);
    let registry = Registry::open(&registry_dir)?;
    let manifest = oneshot::eval::load(&args.manifest, &registry, args.update).map_err(usage)?;
    let mut opts = Options::new(cwd);
    if let Some((target, env)) = args.who.target(files)? {
        opts.target = Some(target);
        opts.env = env;
    } else if let Some(oneshot::eval::ManifestTarget::Agent(name)) = &manifest.target
        && super::ask::is_named(name, files)
    {
        // The manifest names a [targets.NAME]: resolved here, where the config files are; it
        // runs in the manifest's directory, as the manifest's own target does.
        let (target, env) = super::ask::resolve(name, &args.who.target_arg, files)?;
        opts.target = Some(target);
        opts.env = env;
        opts.dir = manifest.dir.clone();
    }
    opts.k = args.k;
    opts.parallel = usize::try_from(args.parallel).unwrap_or(usize::MAX);
    opts.timeout = args.who.timeout;
    opts.attempts = args.who.attempts;
    opts.update = args.update;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the runtime")?;
    let report = match rt.block_on(oneshot::eval::run(&manifest, &opts)) {
        Ok(r) => r,
        Err(e @ EvalError::Write { .. }) => {
            errln!("oneshot: eval: {e}");
            return Ok(exit::FAILED);
        }
        Err(e) => return Err(usage(e).into()),
    };
    // Why a run gave no answer is on stderr, so that the table stays a table.
    for c in &report.cases {
        for (n, r) in c.runs.iter().enumerate() {
            if let Some(e) = &r.error {
                errln!("oneshot: eval: case {:?}, run {}: {e}", c.id, n + 1);
            }
        }
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", report.table());
    }
    Ok(if report.all_passed() {
        exit::OK
    } else {
        exit::FAILED
    })
}
