//! TEMPORARY stand-in for the SQLite store, replaced wholesale on merge: one JSON file,
//! rewritten under an exclusive file lock by every call. Enough for the CLI's tests.
#![allow(missing_docs)]
use super::{Claim, Decision, JobStore, JobStoreError, JobSummary, Lease, ListFilter};
use crate::job::record::{ArtifactVersion, AuditEntry, Job, Transition};
use crate::pipeline::now_ms;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub struct SqliteStore {
    path: PathBuf,
}

#[derive(Default, Serialize, Deserialize)]
struct Data {
    jobs: BTreeMap<String, Job>,
    history: BTreeMap<String, Vec<Transition>>,
    artifacts: BTreeMap<String, Vec<ArtifactVersion>>,
    audit: Vec<AuditEntry>,
    leases: BTreeMap<String, (String, u64, u64)>,
    fences: BTreeMap<String, u64>,
}

impl SqliteStore {
    pub fn open(path: &Path) -> Result<SqliteStore, JobStoreError> {
        let s = SqliteStore {
            path: path.to_path_buf(),
        };
        s.with(|_| Ok(()))?;
        Ok(s)
    }

    fn db(&self, m: impl std::fmt::Display) -> JobStoreError {
        JobStoreError::Db {
            path: self.path.clone(),
            message: m.to_string(),
        }
    }

    fn with<R>(
        &self,
        f: impl FnOnce(&mut Data) -> Result<R, JobStoreError>,
    ) -> Result<R, JobStoreError> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| self.db(e))?;
        }
        let lock =
            std::fs::File::create(self.path.with_extension("lock")).map_err(|e| self.db(e))?;
        lock.lock().map_err(|e| self.db(e))?;
        let mut d: Data = match std::fs::read(&self.path) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| self.db(e))?,
            Err(_) => Data::default(),
        };
        let r = f(&mut d)?;
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec(&d).map_err(|e| self.db(e))?)
            .map_err(|e| self.db(e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| self.db(e))?;
        Ok(r)
    }
}

fn resolve(d: &Data, id: &str) -> Result<String, JobStoreError> {
    if d.jobs.contains_key(id) {
        return Ok(id.to_string());
    }
    let m: Vec<String> = d
        .jobs
        .keys()
        .filter(|k| k.starts_with(id))
        .cloned()
        .collect();
    match m.len() {
        0 => Err(JobStoreError::NotFound { id: id.into() }),
        1 => Ok(m[0].clone()),
        _ => Err(JobStoreError::Ambiguous {
            id: id.into(),
            matches: m,
        }),
    }
}

fn check(d: &Data, lease: &Lease) -> Result<(), JobStoreError> {
    match d.leases.get(&lease.job) {
        Some((r, f, _)) if *r == lease.runner && *f == lease.fence => Ok(()),
        _ => Err(JobStoreError::Fenced {
            id: lease.job.clone(),
            fence: lease.fence,
        }),
    }
}

impl JobStore for SqliteStore {
    fn create(&self, job: &Job, audit: &AuditEntry) -> Result<(), JobStoreError> {
        self.with(|d| {
            d.jobs.insert(job.id.clone(), job.clone());
            let mut a = audit.clone();
            a.seq = d.audit.len() as u64 + 1;
            d.audit.push(a);
            Ok(())
        })
    }
    fn get(&self, id: &str) -> Result<Job, JobStoreError> {
        self.with(|d| Ok(d.jobs[&resolve(d, id)?].clone()))
    }
    fn list(&self, filter: &ListFilter) -> Result<Vec<JobSummary>, JobStoreError> {
        self.with(|d| {
            let now = now_ms();
            let mut v: Vec<JobSummary> = d
                .jobs
                .values()
                .filter(|j| filter.state.is_none_or(|s| s == j.state))
                .map(|j| JobSummary {
                    id: j.id.clone(),
                    state: j.state,
                    title: j.spec.task.lines().next().unwrap_or("").to_string(),
                    risk: j.spec.risk,
                    steps: j.steps,
                    created_ms: j.created_ms,
                    updated_ms: j.updated_ms,
                    runner: d
                        .leases
                        .get(&j.id)
                        .filter(|l| l.2 > now)
                        .map(|l| l.0.clone()),
                })
                .collect();
            v.sort_by_key(|s| (s.created_ms, s.id.clone()));
            Ok(v)
        })
    }
    fn claim(
        &self,
        runner: &str,
        only: Option<&str>,
        ttl_ms: u64,
        now_ms: u64,
    ) -> Result<Option<Claim>, JobStoreError> {
        self.with(|d| {
            let only = only.map(|o| resolve(d, o)).transpose()?;
            let mut c: Vec<&Job> = d
                .jobs
                .values()
                .filter(|j| only.as_ref().is_none_or(|o| *o == j.id))
                // A live lease holds a job even while it is still PENDING: its runner claimed
                // it and has not written PROVISIONING yet.
                .filter(|j| {
                    (j.state == crate::job::JobState::Pending || !j.state.is_resting())
                        && d.leases.get(&j.id).is_none_or(|l| l.2 <= now_ms)
                })
                .collect();
            c.sort_by_key(|j| j.updated_ms);
            let Some(job) = c.first().map(|j| (*j).clone()) else {
                return Ok(None);
            };
            let fence = d.fences.get(&job.id).copied().unwrap_or(0) + 1;
            d.fences.insert(job.id.clone(), fence);
            d.leases
                .insert(job.id.clone(), (runner.into(), fence, now_ms + ttl_ms));
            Ok(Some(Claim {
                reclaimed: !job.state.is_resting(),
                lease: Lease {
                    job: job.id.clone(),
                    runner: runner.into(),
                    fence,
                    until_ms: now_ms + ttl_ms,
                },
                job,
            }))
        })
    }
    fn heartbeat(&self, lease: &Lease, ttl_ms: u64, now_ms: u64) -> Result<Lease, JobStoreError> {
        self.with(|d| {
            check(d, lease)?;
            d.leases.get_mut(&lease.job).unwrap().2 = now_ms + ttl_ms;
            Ok(Lease {
                until_ms: now_ms + ttl_ms,
                ..lease.clone()
            })
        })
    }
    fn advance(
        &self,
        lease: &Lease,
        job: &Job,
        transition: Option<&Transition>,
    ) -> Result<(), JobStoreError> {
        self.with(|d| {
            check(d, lease)?;
            d.jobs.insert(job.id.clone(), job.clone());
            if let Some(t) = transition {
                d.history.entry(job.id.clone()).or_default().push(t.clone());
            }
            if job.state.is_resting() {
                d.leases.remove(&job.id);
            }
            Ok(())
        })
    }
    fn add_artifact(&self, lease: &Lease, a: &ArtifactVersion) -> Result<u32, JobStoreError> {
        self.with(|d| {
            check(d, lease)?;
            let v = d.artifacts.entry(lease.job.clone()).or_default();
            let mut a = a.clone();
            a.version = v.len() as u32 + 1;
            v.push(a);
            Ok(v.len() as u32)
        })
    }
    fn decide(&self, dec: &Decision<'_>) -> Result<(), JobStoreError> {
        self.with(|d| {
            let id = dec.job.id.clone();
            let now = d.jobs.get(&id).map(|j| j.state);
            let Some(now) = now else {
                return Err(JobStoreError::NotFound { id });
            };
            if now != dec.expected {
                return Err(JobStoreError::Conflict {
                    id,
                    expected: dec.expected,
                    now,
                });
            }
            if let Some(l) = d.leases.get(&id).filter(|l| l.2 > now_ms())
                && !dec.revoke
            {
                return Err(JobStoreError::Busy {
                    id,
                    runner: l.0.clone(),
                });
            }
            if dec.revoke {
                d.leases.remove(&id);
                *d.fences.entry(id.clone()).or_insert(0) += 1;
            }
            d.jobs.insert(id.clone(), dec.job.clone());
            d.history
                .entry(id)
                .or_default()
                .push(dec.transition.clone());
            let mut a = dec.audit.clone();
            a.seq = d.audit.len() as u64 + 1;
            d.audit.push(a);
            Ok(())
        })
    }
    fn history(&self, id: &str) -> Result<Vec<Transition>, JobStoreError> {
        self.with(|d| Ok(d.history.get(&resolve(d, id)?).cloned().unwrap_or_default()))
    }
    fn artifacts(&self, id: &str) -> Result<Vec<ArtifactVersion>, JobStoreError> {
        self.with(|d| {
            Ok(d.artifacts
                .get(&resolve(d, id)?)
                .cloned()
                .unwrap_or_default())
        })
    }
    fn audit(&self, id: Option<&str>) -> Result<Vec<AuditEntry>, JobStoreError> {
        self.with(|d| {
            let id = id.map(|i| resolve(d, i)).transpose()?;
            Ok(d.audit
                .iter()
                .filter(|a| id.as_ref().is_none_or(|i| *i == a.entity_id))
                .cloned()
                .collect())
        })
    }
    fn lease(&self, id: &str) -> Result<Option<Lease>, JobStoreError> {
        self.with(|d| {
            let id = resolve(d, id)?;
            Ok(d.leases.get(&id).map(|(r, f, u)| Lease {
                job: id.clone(),
                runner: r.clone(),
                fence: *f,
                until_ms: *u,
            }))
        })
    }
}
