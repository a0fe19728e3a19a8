//! Policy hot reload: how long a swap takes, and how soon a save is noticed.
//!
//! Run with `cargo bench --bench reload`. Targets (issue 3): reload ≤ 1 ms p50 from a detected
//! change to the new generation being current, for the shipped policies; detection ≤ 250 ms
//! after the save.
//!
//! * **reload**: each shipped policy is copied into a temp directory; each iteration appends a
//!   comment (so the content hash changes; not timed) and times `reload_now()`, which hashes the
//!   files, checks trust, builds and validates a fresh Luau host and swaps it in.
//! * **load alone** and **drop of a host**: `PolicyHost::load` of the same file and dropping
//!   the result (closing its Lua state), the two costs a swap cannot avoid: it builds the new
//!   host and drops the old one.
//! * **detection**: wall time from the start of an editor-style save (write a temp file, rename
//!   it over the policy) to `PolicyWatcher::changed()` resolving; most of it is the debounce.

use oneshot::policy::{
    DEBOUNCE, PolicyHost, PolicyOptions, PolicyWatcher, ReloadEvent, ReloadMode, ReloadOptions,
    ReloadingPolicy, TrustStore,
};
use std::path::Path;
use std::time::{Duration, Instant};
use tempfile::TempDir;

const RELOADS: usize = 200;
const WARMUP: usize = 10;
const DETECTIONS: usize = 30;
const SHIPPED: [&str; 3] = ["default.lua", "strict.lua", "lenient.lua"];

fn main() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    println!("{:<34} {:>10} {:>10} {:>6}", "case", "p50", "p90", "n");
    for name in SHIPPED {
        let source = std::fs::read_to_string(shipped.join(name)).unwrap();
        let (reload, load, drop) = reload_latency(name, &source);
        row(&format!("reload {name}"), reload);
        row(&format!("  load alone {name}"), load);
        row(&format!("  drop of a host {name}"), drop);
    }
    let source = std::fs::read_to_string(shipped.join("strict.lua")).unwrap();
    row("detection (write + rename)", detection_latency(&source));
    println!("(debounce {DEBOUNCE:?}; targets: reload p50 <= 1 ms, detection p50 <= 250 ms)");
}

type Samples = Vec<Duration>;

fn reload_latency(name: &str, source: &str) -> (Samples, Samples, Samples) {
    let dir = TempDir::new().unwrap();
    let work = TempDir::new().unwrap();
    let policy = dir.path().join(name);
    std::fs::write(&policy, source).unwrap();
    let trust = TrustStore::at(dir.path().join("trust.json"));
    let mut opts = ReloadOptions::new(work.path(), trust);
    opts.mode = ReloadMode::Auto;
    let host = PolicyHost::load(&policy, PolicyOptions::default()).unwrap();
    let mut slot = ReloadingPolicy::new(host, 1, opts).unwrap();

    let mut reloads = Vec::with_capacity(RELOADS);
    let mut loads = Vec::with_capacity(RELOADS);
    let mut drops = Vec::with_capacity(RELOADS);
    for i in 0..WARMUP + RELOADS {
        std::fs::write(&policy, format!("{source}\n-- edit {i}\n")).unwrap();
        let before = slot.generation();
        let start = Instant::now();
        let events = slot.reload_now();
        let took = start.elapsed();
        assert!(
            matches!(events.as_slice(), [ReloadEvent::Reloaded { .. }]),
            "{name}: {events:?}"
        );
        assert_eq!(slot.generation(), before + 1);

        let start = Instant::now();
        let host = PolicyHost::load(&policy, PolicyOptions::default()).unwrap();
        let load = start.elapsed();
        let start = Instant::now();
        drop(host);
        let dropped = start.elapsed();
        if i >= WARMUP {
            reloads.push(took);
            loads.push(load);
            drops.push(dropped);
        }
    }
    (reloads, loads, drops)
}

fn detection_latency(source: &str) -> Vec<Duration> {
    let dir = TempDir::new().unwrap();
    let policy = dir.path().join("policy.lua");
    std::fs::write(&policy, source).unwrap();
    let watcher = PolicyWatcher::new(vec![policy.clone()], DEBOUNCE).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let tmp = dir.path().join(".policy.lua.swp");
    let mut samples = Vec::with_capacity(DETECTIONS);
    for i in 0..DETECTIONS {
        let start = Instant::now();
        std::fs::write(&tmp, format!("{source}\n-- save {i}\n")).unwrap();
        std::fs::rename(&tmp, &policy).unwrap();
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(5), watcher.changed())
                .await
                .expect("the save was not detected within 5 s");
        });
        samples.push(start.elapsed());
        assert_eq!(watcher.take_changed(), Some(vec![policy.clone()]));
    }
    samples
}

fn row(case: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "{case:<34} {:>10} {:>10} {:>6}",
        fmt(at(0.5)),
        fmt(at(0.9)),
        samples.len()
    );
}

fn fmt(d: Duration) -> String {
    if d >= Duration::from_millis(10) {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.0} µs", d.as_secs_f64() * 1e6)
    }
}
