//! Every record kind round-trips through [`Record`]; the pipeline's hand-encoded activity
//! records read back as [`Record::Activity`].
