//! The providers' wire format: what requests ask for, and the bodies and headers of
//! answers. Faces that render answers (the mock, the test harness) use these.

pub mod call;
pub mod check;
pub mod errors;
pub mod headers;
pub mod success;
pub mod tool;
