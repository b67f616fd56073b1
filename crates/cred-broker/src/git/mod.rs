//! Git's smart HTTP in the broker: the classifier, and pushes read and
//! judged by the push rule (`push-rule`) before anything is forwarded.

pub(crate) mod classifier;
mod push;
