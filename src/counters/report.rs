//! Reports: the documented peak tables beside what a run achieved (table and JSON).
