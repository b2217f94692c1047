"""Type stubs of the extension module (the Rust half of ``smi``)."""

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

DEFAULT_STEPS: int

class SmiError(Exception): ...

class Posterior:
    @property
    def mean(self) -> npt.NDArray[np.float64]: ...
    @property
    def var(self) -> npt.NDArray[np.float64]: ...
    @property
    def losses(self) -> npt.NDArray[np.float64]: ...
    @property
    def elbos(self) -> npt.NDArray[np.float64]: ...
    @property
    def method(self) -> str: ...
    @property
    def dim(self) -> int: ...
    @property
    def steps(self) -> int: ...
    @property
    def termination(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    @property
    def num_calls(self) -> int: ...
    @property
    def divergences(self) -> int | None: ...
    def sample(self, n: int, seed: int = 0) -> npt.NDArray[np.float64]: ...
    def draws(self) -> npt.NDArray[np.float64]: ...
    def summary(self, num_draws: int = 4000, seed: int = 0) -> str: ...

def fit(
    logdensity: Callable[[npt.NDArray[np.float64]], tuple[Any, Any]],
    dim: int,
    method: str = "smi",
    *,
    num_stein_particles: int | None = None,
    num_elbo_particles: int | None = None,
    num_steps: int | None = None,
    converge: bool = True,
    optimizer: str | None = None,
    constant_lr: bool = False,
    lr: float | None = None,
    init_radius: float | None = None,
    seed: int = 0,
    num_warmup: int | None = None,
    num_samples: int | None = None,
    num_chains: int | None = None,
) -> Posterior: ...
