//! Sizes as people write them (`2G`, `512M`, `1.5GiB`, `2048`) and as oneshot says them
//! (`2 GiB`). The one definition: the policy's `limits.memory`, `--reserve` and the reasons
//! all go through here.

use super::LimitsError;

/// The units, largest first. Every unit is binary (`G` and `GB` are `GiB`), as in systemd's
/// `MemoryMax=` and Docker's `--memory`: a memory size in decimal gigabytes is never what a
/// person means by "2G" of RAM.
const UNITS: [(&str, u64); 5] = [
    ("P", 1 << 50),
    ("T", 1 << 40),
    ("G", 1 << 30),
    ("M", 1 << 20),
    ("K", 1 << 10),
];

/// Parses a size: a number (a decimal fraction allowed with a unit) and an optional unit `K`,
/// `M`, `G`, `T` or `P` — also written `KB`/`KiB`, in any case, with or without a space; no
/// unit (or `B`) means bytes. `"2G"`, `"512M"`, `"1.5GiB"`, `"2048"`, `"10T"`.
pub fn parse_size(s: &str) -> Result<u64, LimitsError> {
    let bad = |why: &str| LimitsError::BadSize {
        input: s.to_string(),
        why: why.to_string(),
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(bad("it does not start with a number"));
    }
    let unit = unit.trim().to_ascii_uppercase();
    let unit = unit.strip_suffix("IB").map_or_else(
        || unit.strip_suffix('B').unwrap_or(&unit).to_string(),
        str::to_string,
    );
    let scale = if unit.is_empty() {
        1
    } else {
        UNITS
            .iter()
            .find(|(u, _)| *u == unit)
            .map(|(_, m)| *m)
            .ok_or_else(|| bad("the unit is not one of B, K, M, G, T, P"))?
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if frac.contains('.') || (whole.is_empty() && frac.is_empty()) {
        return Err(bad("the number is not a number"));
    }
    if !frac.is_empty() && scale == 1 {
        return Err(bad("a number of bytes is whole"));
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad("the number is too large"))?
    };
    let mut bytes = whole
        .checked_mul(scale)
        .ok_or_else(|| bad("the size is too large"))?;
    if !frac.is_empty() {
        // The fraction exactly, in integers: "1.5" of a GiB is 15 * GiB / 10, rounded down.
        let digits = frac.len().min(9);
        let f: u64 = frac[..digits]
            .parse()
            .map_err(|_| bad("the number is not a number"))?;
        let part = (u128::from(f) * u128::from(scale)) / 10u128.pow(digits as u32);
        bytes = bytes
            .checked_add(part as u64)
            .ok_or_else(|| bad("the size is too large"))?;
    }
    Ok(bytes)
}

/// Says a size in the largest binary unit it reaches: `2 GiB`, `1.5 GiB`, `300 MiB`,
/// `512 B`; at most one decimal, and none when it is whole.
pub fn format_size(bytes: u64) -> String {
    for (u, m) in UNITS {
        if bytes >= m {
            let tenths = (u128::from(bytes) * 10 + u128::from(m) / 2) / u128::from(m);
            return if tenths % 10 == 0 {
                format!("{} {u}iB", tenths / 10)
            } else {
                format!("{}.{} {u}iB", tenths / 10, tenths % 10)
            };
        }
    }
    format!("{bytes} B")
}
