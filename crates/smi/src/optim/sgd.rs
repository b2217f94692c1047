//! Plain gradient descent (stateless).

use serde::{Deserialize, Serialize};

/// SGD keeps no state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SgdState;
