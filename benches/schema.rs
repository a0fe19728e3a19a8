//! Validating a structured answer against its schema: a ~4 KB verdict-like answer (a long
//! reason, a dozen open criteria) against the built-in `verdict` schema, compiled once, beside
//! `serde_json::from_str::<Value>` of the same text (the floor any reader of the answer pays).
//!
//! Cases, each per answer:
//! * `parse_only (baseline)`: the 4 KB text into a `serde_json::Value`;
//! * `validate`: the parsed answer checked (the target: ≥ 50,000/s);
//! * `parse_and_validate`: both, what an answer costs end to end;
//! * `validate_invalid`: an answer breaking three rules, every violation collected and
//!   formatted — the cost of the retry path.
//!
//! Run: `cargo bench --bench schema` (add `-- --quick` for a short run). A summary in plain
//! figures (answers/s) is printed first; criterion then reports its own, as throughput.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use oneshot::schema::{Registry, Validator};
use serde_json::{Value, json};

/// A verdict as a careful auditor writes it, about 4 KB of JSON.
fn answer(verdict: &str, confidence: f64) -> String {
    let sentence = "The parser change handles the empty input case, but the test for nested \
                    arrays still fails because the tokenizer drops the closing bracket. ";
    let criteria: Vec<String> = (1..=12)
        .map(|i| {
            format!(
                "criterion {i}: the test_nested_arrays case passes with input of depth {i} \
                 and the error names the line"
            )
        })
        .collect();
    let text = json!({
        "verdict": verdict,
        "reason": sentence.repeat(20),
        "confidence": confidence,
        "open_criteria": criteria,
    })
    .to_string();
    assert!(
        (3_900..=4_300).contains(&text.len()),
        "{} bytes",
        text.len()
    );
    text
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("json")
}

fn bench(c: &mut Criterion) {
    let validator: Validator = Registry::builtin()
        .resolve("verdict")
        .expect("built-in")
        .validator()
        .expect("compiles");
    let good = answer("retry", 0.35);
    let bad = answer("maybe", 2.0).replace("\"open_criteria\"", "\"open\"");
    let good_value = parse(&good);
    let bad_value = parse(&bad);
    assert!(validator.validate(&good_value).is_ok());
    let violations = validator.validate(&bad_value).unwrap_err();
    assert_eq!(violations.0.len(), 4, "{violations}");

    // A quick summary in plain figures before criterion's own report.
    let rounds = 100_000;
    let rate = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..rounds {
            f();
        }
        rounds as f64 / t.elapsed().as_secs_f64()
    };
    let compile = {
        let schema = Registry::builtin().resolve("verdict").unwrap();
        let t = Instant::now();
        black_box(schema.validator().unwrap());
        t.elapsed()
    };
    println!(
        "schema: a {}-byte verdict answer; compiling the schema once took {compile:?}",
        good.len()
    );
    let cases: [(&str, &mut dyn FnMut()); 4] = [
        ("parse_only (baseline)", &mut || {
            black_box(parse(black_box(&good)));
        }),
        ("validate", &mut || {
            black_box(validator.validate(black_box(&good_value)).is_ok());
        }),
        ("parse_and_validate", &mut || {
            let v = parse(black_box(&good));
            black_box(validator.validate(&v).is_ok());
        }),
        ("validate_invalid", &mut || {
            let e = validator.validate(black_box(&bad_value)).unwrap_err();
            black_box(e.to_string());
        }),
    ];
    for (label, f) in cases {
        println!("  {label:<24} {:>12.0} answers/s", rate(f));
    }

    let mut group = c.benchmark_group("schema_verdict_4k");
    group.throughput(Throughput::Elements(1));
    group.bench_function("parse_only_baseline", |b| {
        b.iter(|| black_box(parse(black_box(&good))))
    });
    group.bench_function("validate", |b| {
        b.iter(|| black_box(validator.validate(black_box(&good_value)).is_ok()))
    });
    group.bench_function("parse_and_validate", |b| {
        b.iter(|| {
            let v = parse(black_box(&good));
            black_box(validator.validate(&v).is_ok())
        })
    });
    group.bench_function("validate_invalid", |b| {
        b.iter(|| {
            black_box(
                validator
                    .validate(black_box(&bad_value))
                    .unwrap_err()
                    .to_string(),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
