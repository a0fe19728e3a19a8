//! The tables of docs/json.md and docs/run-json.md, read as the tests check real `--json`
//! output against them: under each heading naming an output (`## \`oneshot list --json\``,
//! `### \`outcome\` — last line`), each `| field | type | meaning |` (or `| key | … |`) table.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeMap;

/// docs/json.md.
pub const JSON_MD: &str = include_str!("../../docs/json.md");
/// docs/run-json.md.
pub const RUN_JSON_MD: &str = include_str!("../../docs/run-json.md");

/// One documented field.
#[derive(Debug, Clone)]
pub struct Row {
    /// The heading's backquoted name: `oneshot list --json`, `outcome`.
    pub section: String,
    /// Which table of its section, from 0.
    pub table: usize,
    /// The field's name.
    pub field: String,
    /// Its type as written: `string`, `integer or null`, `object?`.
    pub ty: String,
    /// What it means, as written.
    pub meaning: String,
}

/// Every documented field of `doc`, in order. A cell naming several fields (`` `from`, `to` ``)
/// is one row each, with the type written for each (`object or null, string or null`) or one
/// type for all.
pub fn rows(doc: &str) -> Vec<Row> {
    let mut out = Vec::new();
    let mut section: Option<String> = None;
    let mut tables: BTreeMap<String, usize> = BTreeMap::new();
    // Inside a table: whether it is one of fields (its header says `field` or `key`).
    let mut table: Option<bool> = None;
    for line in doc.lines() {
        if line.starts_with('#') {
            section = line.split('`').nth(1).map(str::to_string);
            table = None;
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if !line.starts_with('|') || cells.len() < 5 {
            table = None;
            continue;
        }
        let Some(name) = &section else { continue };
        let Some(fields) = table else {
            let of_fields = cells[1] == "field" || cells[1] == "key";
            if of_fields {
                *tables.entry(name.clone()).or_insert(0) += 1;
            }
            table = Some(of_fields);
            continue;
        };
        if !fields || cells[1].starts_with("---") {
            continue;
        }
        let names: Vec<&str> = cells[1].split(", ").map(|f| f.trim_matches('`')).collect();
        let types: Vec<&str> = cells[2].split(", ").collect();
        for (i, field) in names.iter().enumerate() {
            out.push(Row {
                section: name.clone(),
                table: tables[name] - 1,
                field: field.to_string(),
                ty: if types.len() == names.len() {
                    types[i]
                } else {
                    cells[2]
                }
                .to_string(),
                meaning: cells[3].to_string(),
            });
        }
    }
    out
}

/// One documented table: field name → type as written.
pub type Shape = BTreeMap<String, String>;

/// Table `n` of the section `heading` of `doc`.
pub fn shape(doc: &str, heading: &str, n: usize) -> Shape {
    let shape: Shape = rows(doc)
        .into_iter()
        .filter(|r| r.section == heading && r.table == n)
        .map(|r| (r.field, r.ty))
        .collect();
    assert!(
        !shape.is_empty(),
        "the docs have no table {n} under `{heading}`"
    );
    shape
}

/// Whether `v` is of the documented type `ty`.
pub fn is(ty: &str, v: &Value) -> bool {
    let ty = ty.trim_end_matches('?');
    ty.split(" or ").any(|t| match t {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        other => panic!("the docs: unknown type `{other}`"),
    })
}

/// `v` has every documented field (the optional ones when present) with its type, and no
/// other.
pub fn conforms(what: &str, shape: &Shape, v: &Value) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{what}: not an object: {v}"));
    for (field, ty) in shape {
        match obj.get(field) {
            Some(x) => assert!(is(ty, x), "{what}: `{field}` is not {ty}: {x}"),
            None => assert!(ty.ends_with('?'), "{what}: `{field}` is missing: {v}"),
        }
    }
    for key in obj.keys() {
        assert!(shape.contains_key(key), "{what}: `{key}` is not documented");
    }
}
