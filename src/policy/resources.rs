//! The resource keys of `limits`: `memory`, `pids`, `cpu` (per agent) and `reserve` (memory the
//! machine keeps free before another agent starts). Parsed here; enforced by the sandbox.

use super::limits::{number, shown};
use super::lua_ctx::{describe, type_name};
use super::schema::SchemaError;
use mlua::Value;

/// Below this a `memory` limit is a typo (`memory = 2` meaning 2 GiB), not a real limit: no
/// agent CLI starts in less.
const MIN_MEMORY: u64 = 1 << 20;

/// A memory size: bytes as a number, or a string with a unit. Units are powers of 1024 however
/// they are spelt (`K`, `KB`, `KiB`; `M`…; `G`…; `T`…), as docker and systemd read them, so
/// "2G" is the 2 GiB the stop reason names. `false` (or nil) means no limit.
pub(super) fn memory(name: &str, value: &Value) -> Result<Option<u64>, SchemaError> {
    let bytes = match value {
        Value::Nil | Value::Boolean(false) => return Ok(None),
        Value::String(s) => {
            let text = s.to_string_lossy();
            parse_size(&text).map_err(|why| {
                SchemaError::keyed(
                    name,
                    format!("{name} = \"{text}\" is not a size ({why}); try \"2G\" or \"512M\""),
                )
            })?
        }
        other => match number(other) {
            Some(n) if n.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&n) => n as u64,
            Some(_) => {
                return Err(SchemaError::keyed(
                    name,
                    format!(
                        "{name} must be a whole number of bytes or a size like \"2G\", not {}",
                        shown(other)
                    ),
                ));
            }
            None => {
                return Err(SchemaError::keyed(
                    name,
                    format!(
                        "{name} must be a size like \"2G\" or a number of bytes, not {}",
                        type_name(other)
                    ),
                ));
            }
        },
    };
    Ok(Some(bytes))
}

/// `limits.memory`: a [`memory`] size of at least 1 MiB.
pub(super) fn memory_limit(name: &str, value: &Value) -> Result<Option<u64>, SchemaError> {
    let bytes = memory(name, value)?;
    if let Some(b) = bytes
        && b < MIN_MEMORY
    {
        return Err(SchemaError::keyed(
            name,
            format!(
                "{name} = {} is {b} bytes, too little for any agent; a number is bytes, so \
                 write \"2G\" or \"512M\"",
                describe_value(value)
            ),
        ));
    }
    Ok(bytes)
}

/// `limits.pids`: how many processes (and threads) an agent's tree may hold, at least 1.
pub(super) fn pids(name: &str, value: &Value) -> Result<Option<u32>, SchemaError> {
    match value {
        Value::Nil | Value::Boolean(false) => Ok(None),
        other => match number(other) {
            Some(n) if n.fract() == 0.0 && (1.0..=f64::from(u32::MAX)).contains(&n) => {
                Ok(Some(n as u32))
            }
            Some(_) => Err(SchemaError::keyed(
                name,
                format!(
                    "{name} must be a whole number of at least 1, not {}",
                    shown(other)
                ),
            )),
            None => Err(SchemaError::keyed(
                name,
                format!("{name} must be a whole number, not {}", type_name(other)),
            )),
        },
    }
}

/// `limits.cpu`: cores an agent may use (`1.5`: one and a half), more than 0.
pub(super) fn cpu(name: &str, value: &Value) -> Result<Option<f64>, SchemaError> {
    match value {
        Value::Nil | Value::Boolean(false) => Ok(None),
        other => match number(other) {
            Some(n) if n.is_finite() && n > 0.0 && n <= 4096.0 => Ok(Some(n)),
            Some(_) => Err(SchemaError::keyed(
                name,
                format!(
                    "{name} must be a number of cores above 0 (such as 1.5), not {}",
                    shown(other)
                ),
            )),
            None => Err(SchemaError::keyed(
                name,
                format!(
                    "{name} must be a number of cores such as 1.5, not {}",
                    type_name(other)
                ),
            )),
        },
    }
}

fn describe_value(value: &Value) -> String {
    match value {
        Value::String(_) => describe(value),
        other => shown(other),
    }
}

/// `"2G"`, `"512 MiB"`, `"1.5GiB"`, `"1048576"` → bytes; the error says what is wrong.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (digits, unit) = (&t[..split], t[split..].trim());
    if digits.is_empty() {
        return Err("it does not start with a number".into());
    }
    let n: f64 = digits
        .parse()
        .map_err(|_| format!("`{digits}` is not a number"))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => return Err(format!("unknown unit `{other}`; use K, M, G or T")),
    };
    let bytes = n * (1u64 << shift) as f64;
    if bytes.fract() != 0.0 && shift == 0 {
        return Err("a number of bytes must be whole".into());
    }
    if bytes >= u64::MAX as f64 {
        return Err("it is too large".into());
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_read_as_powers_of_1024() {
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("2GB"), Ok(2 << 30));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("100k"), Ok(100 << 10));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size(" 4096 "), Ok(4096));
    }

    #[test]
    fn bad_sizes_say_why() {
        assert!(parse_size("G").unwrap_err().contains("number"));
        assert!(parse_size("2X").unwrap_err().contains("unknown unit `x`"));
        assert!(parse_size("1.2.3G").unwrap_err().contains("not a number"));
        assert!(parse_size("1.5").unwrap_err().contains("whole"));
        assert!(
            parse_size("99999999999T")
                .unwrap_err()
                .contains("too large")
        );
        assert!(parse_size("-1G").is_err());
    }
}
