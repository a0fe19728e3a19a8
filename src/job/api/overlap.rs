//! Overlap known early: which jobs changed the same files as another job on the same
//! repository, so a human learns it from `job list` rather than from the second merge that
//! fails; and the order that lands the most of a set of jobs without a conflict.
//!
//! A job's changes are its latest artifact version's files (what its last harvest found
//! changed since the base). Jobs count while they may still be landed: every state but
//! CANCELED.
//!
//! ```
//! use oneshot::job::overlap::{Changed, land_order, overlaps};
//! let job = |id: &str, files: &[&str]| Changed {
//!     id: id.into(),
//!     repo: "/src/app".into(),
//!     files: files.iter().map(|f| f.to_string()).collect(),
//! };
//! let jobs = [job("job-a", &["src/x.rs"]), job("job-b", &["src/x.rs", "README.md"]), job("job-c", &["src/y.rs"])];
//! let found = overlaps(&jobs);
//! assert_eq!(found["job-a"][0].job, "job-b");
//! assert_eq!(found["job-b"][0].files, ["src/x.rs"]);
//! assert!(!found.contains_key("job-c"));
//!
//! let pairs: Vec<_> = jobs.iter().map(|c| (c.id.clone(), c.files.clone())).collect();
//! assert_eq!(land_order(&pairs), ["job-c", "job-a", "job-b"]);
//! ```

use crate::job::JobState;
use crate::job::store::{JobStore, JobStoreError, ListFilter};
use crate::job::workspace::{self, SourceKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

/// The files one job changed, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// The job.
    pub id: String,
    /// The repository its files are relative to (a plain source: the directory itself).
    pub repo: PathBuf,
    /// The files changed, relative to `repo`.
    pub files: Vec<String>,
}

/// Another job that changed some of the same files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overlap {
    /// The other job (`job_id` in `--json`, docs/json.md).
    #[serde(rename = "job_id")]
    pub job: String,
    /// The files both changed, sorted.
    pub files: Vec<String>,
}

/// Whether a job in `state` counts for overlaps: it may still be landed. (When landing is
/// recorded, a landed job stops counting too.)
pub fn counts(state: JobState) -> bool {
    state != JobState::Canceled
}

/// For each job of `jobs` whose files overlap another's on the same repository: the others,
/// in the order of `jobs`, with the shared files. Jobs overlapping nobody are absent.
pub fn overlaps(jobs: &[Changed]) -> BTreeMap<String, Vec<Overlap>> {
    let mut out: BTreeMap<String, Vec<Overlap>> = BTreeMap::new();
    let sets: Vec<BTreeSet<&str>> = jobs
        .iter()
        .map(|j| j.files.iter().map(String::as_str).collect())
        .collect();
    for (i, a) in jobs.iter().enumerate() {
        for (j, b) in jobs.iter().enumerate() {
            if i == j || a.repo != b.repo || a.id == b.id {
                continue;
            }
            let shared: Vec<String> = sets[i]
                .intersection(&sets[j])
                .map(|f| f.to_string())
                .collect();
            if !shared.is_empty() {
                out.entry(a.id.clone()).or_default().push(Overlap {
                    job: b.id.clone(),
                    files: shared,
                });
            }
        }
    }
    out
}

/// The changes of every job in `store` that [`counts`], as its latest artifact version has
/// them (jobs that changed nothing yet, and jobs whose record does not parse, are left out),
/// oldest job first.
pub fn changed(store: &dyn JobStore) -> Result<Vec<Changed>, JobStoreError> {
    let mut repos: HashMap<PathBuf, PathBuf> = HashMap::new();
    let mut out = Vec::new();
    for summary in store.list(&ListFilter::default())? {
        if !counts(summary.state) {
            continue;
        }
        // A job whose record is broken is `get`'s to report; it does not hide the others.
        let latest = match store.artifacts(&summary.id) {
            Err(JobStoreError::Corrupt { .. }) => continue,
            found => found?.pop(),
        };
        let Some(latest) = latest.filter(|v| !v.files.is_empty()) else {
            continue;
        };
        let job = match store.get(&summary.id) {
            Err(JobStoreError::Corrupt { .. }) => continue,
            found => found?,
        };
        // Landed work is the base's now: nothing to collide with any more.
        if job.landed.is_some() {
            continue;
        }
        // A remote's job names its repository by the remote (its `source` is a directory
        // inside it, the same `.` for every remote).
        let source = match &job.spec.remote {
            Some(url) => std::path::PathBuf::from(url),
            None => job.spec.source.clone(),
        };
        let repo = repos
            .entry(source.clone())
            .or_insert_with(|| {
                if job.spec.remote.is_some() {
                    return source;
                }
                match workspace::check_source(&job.spec) {
                    Ok(SourceKind::Git { root }) => root,
                    // A plain directory, or a source gone since: its own path is all there is.
                    _ => source,
                }
            })
            .clone();
        out.push(Changed {
            id: summary.id,
            repo,
            files: latest.files,
        });
    }
    Ok(out)
}

/// The overlaps among every job of `store` that counts ([`changed`], [`overlaps`]).
pub fn find(store: &dyn JobStore) -> Result<BTreeMap<String, Vec<Overlap>>, JobStoreError> {
    Ok(overlaps(&changed(store)?))
}

/// An order to land `jobs` (each an id and the files it changed, all on one repository) that
/// lands the most of them without a conflict: in rounds, each a set of jobs no two of which
/// share a file, picked greedily — the job overlapping the fewest others still in play first,
/// the given order breaking ties, the jobs it overlaps left for a later round. Within a round
/// the jobs overlapping nobody come first, then the rest, each in the given order. Every id is
/// returned once.
pub fn land_order(jobs: &[(String, Vec<String>)]) -> Vec<String> {
    let sets: Vec<BTreeSet<&str>> = jobs
        .iter()
        .map(|(_, f)| f.iter().map(String::as_str).collect())
        .collect();
    let n = jobs.len();
    let clash: Vec<Vec<bool>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| i != j && !sets[i].is_disjoint(&sets[j]))
                .collect()
        })
        .collect();
    let lonely: Vec<bool> = (0..n).map(|i| !clash[i].iter().any(|&c| c)).collect();
    let mut left: Vec<usize> = (0..n).collect();
    let mut out = Vec::with_capacity(n);
    while !left.is_empty() {
        let mut candidates = left.clone();
        let mut round = Vec::new();
        while !candidates.is_empty() {
            let degree = |i: usize| candidates.iter().filter(|&&j| clash[i][j]).count();
            // `min_by_key` keeps the first of equals: the given order breaks ties.
            let &pick = candidates
                .iter()
                .min_by_key(|&&i| degree(i))
                .expect("candidates is not empty");
            round.push(pick);
            candidates.retain(|&j| j != pick && !clash[pick][j]);
        }
        round.sort_by_key(|&i| (!lonely[i], i));
        left.retain(|i| !round.contains(i));
        out.extend(round.iter().map(|&i| jobs[i].0.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(jobs: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        jobs.iter()
            .map(|(id, files)| {
                (
                    id.to_string(),
                    files.iter().map(|f| f.to_string()).collect(),
                )
            })
            .collect()
    }

    fn changed(id: &str, repo: &str, files: &[&str]) -> Changed {
        Changed {
            id: id.into(),
            repo: repo.into(),
            files: files.iter().map(|f| f.to_string()).collect(),
        }
    }

    #[test]
    fn jobs_on_different_repositories_never_overlap() {
        let found = overlaps(&[changed("a", "/r1", &["x"]), changed("b", "/r2", &["x"])]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn each_overlapping_job_names_every_other_with_the_shared_files() {
        let found = overlaps(&[
            changed("a", "/r", &["x", "y"]),
            changed("b", "/r", &["y", "x", "z"]),
            changed("c", "/r", &["z"]),
            changed("d", "/r", &["w"]),
        ]);
        let names = |id: &str| -> Vec<(String, Vec<String>)> {
            found[id]
                .iter()
                .map(|o| (o.job.clone(), o.files.clone()))
                .collect()
        };
        assert_eq!(names("a"), [("b".into(), vec!["x".into(), "y".into()])]);
        assert_eq!(
            names("b"),
            [
                ("a".into(), vec!["x".into(), "y".into()]),
                ("c".into(), vec!["z".into()])
            ]
        );
        assert_eq!(names("c"), [("b".into(), vec!["z".into()])]);
        assert!(!found.contains_key("d"));
    }

    #[test]
    fn an_order_without_overlaps_is_the_given_one() {
        let jobs = pairs(&[("a", &["1"]), ("b", &["2"]), ("c", &[])]);
        assert_eq!(land_order(&jobs), ["a", "b", "c"]);
        assert!(land_order(&[]).is_empty());
    }

    #[test]
    fn the_middle_of_a_chain_waits_so_both_ends_land() {
        // a–b–c: b overlaps both; landing a and c first lands two without a conflict.
        let jobs = pairs(&[("b", &["x", "y"]), ("a", &["x"]), ("c", &["y"])]);
        assert_eq!(land_order(&jobs), ["a", "c", "b"]);
    }

    #[test]
    fn a_star_lands_its_leaves_before_its_hub() {
        let jobs = pairs(&[
            ("hub", &["1", "2", "3"]),
            ("l1", &["1"]),
            ("l2", &["2"]),
            ("free", &["9"]),
            ("l3", &["3"]),
        ]);
        assert_eq!(land_order(&jobs), ["free", "l1", "l2", "l3", "hub"]);
    }

    #[test]
    fn equals_keep_the_given_order_and_every_job_comes_once() {
        // Three jobs on one file: one lands per round, in the given order.
        let jobs = pairs(&[("p", &["f"]), ("q", &["f"]), ("r", &["f"])]);
        assert_eq!(land_order(&jobs), ["p", "q", "r"]);
        let jobs = pairs(&[
            ("a", &["1", "2"]),
            ("b", &["2", "3"]),
            ("c", &["3", "4"]),
            ("d", &["4", "1"]),
            ("e", &["5"]),
        ]);
        let order = land_order(&jobs);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, ["a", "b", "c", "d", "e"]);
        // A cycle of four: two opposite corners land together, after the lonely one.
        assert_eq!(order, ["e", "a", "c", "b", "d"]);
    }
}
