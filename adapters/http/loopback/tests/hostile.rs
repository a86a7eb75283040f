//! Hostile servers against both adapters (see `support/hostile.rs`).

#[macro_use]
mod support;

mod reqwest {
    use crate::{hostile_scenarios, support};
    hostile_scenarios!(support::clients::Reqwest);
}

mod ureq {
    use crate::{hostile_scenarios, support};
    hostile_scenarios!(support::clients::Ureq);
}
