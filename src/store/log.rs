//! The NDJSON activity log `oneshot-log.json`: append-only writer and tolerant reader.
