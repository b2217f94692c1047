"""Type stubs of the extension module (the Rust half of ``smi``)."""

from collections.abc import Callable, Mapping
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
    def termination_reason(self) -> str | None: ...
    @property
    def khat(self) -> float | None: ...
    @property
    def khat_threshold(self) -> float | None: ...
    @property
    def psis_relative_ess(self) -> float | None: ...
    @property
    def elbo(self) -> float | None: ...
    @property
    def elbo_mcse(self) -> float | None: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def trusted(self) -> bool: ...
    @property
    def seconds(self) -> float: ...
    @property
    def num_calls(self) -> int: ...
    @property
    def divergences(self) -> int | None: ...
    @property
    def skipped_steps(self) -> int: ...
    @property
    def num_chains(self) -> int | None: ...
    def nuts_stats(self) -> dict[str, npt.NDArray[Any]] | None: ...
    def sample_components(
        self, n: int, seed: int = 0
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]: ...
    @property
    def particles(self) -> npt.NDArray[np.float64] | None: ...
    @property
    def locations(self) -> npt.NDArray[np.float64] | None: ...
    @property
    def scales(self) -> npt.NDArray[np.float64] | None: ...
    def to_arviz(
        self,
        num_samples: int = 1000,
        seed: int = 0,
        observed_data: Mapping[str, Any] | None = None,
    ) -> Any: ...
    def sample(self, n: int, seed: int = 0) -> npt.NDArray[np.float64]: ...
    def draws(self) -> npt.NDArray[np.float64]: ...
    def sample_reweighted(self, n: int, seed: int = 0) -> npt.NDArray[np.float64]: ...
    def summary(
        self, num_draws: int | None = None, seed: int = 0, reweighted: bool = False
    ) -> str: ...

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
    quality_draws: int | None = None,
    repulsion_temperature: float | None = None,
    guide: str | None = None,
    start: str | None = None,
    kernel: str | None = None,
    loss_temperature: float | None = None,
    init_scale: float | None = None,
    num_cycles: int | None = None,
    transition_speed: float | None = None,
    progress_bar: bool = True,
) -> Posterior: ...

class BnnModel:
    """A fitted network of ``smi fit``: the contents of a ``.smi`` model file."""

    @staticmethod
    def from_bytes(data: bytes) -> BnnModel: ...
    @staticmethod
    def load(path: str) -> BnnModel: ...
    def to_bytes(self) -> bytes: ...
    def save(self, path: str) -> None: ...
    def header_json(self) -> str: ...
    def with_estimator_state(self, json: str) -> BnnModel: ...
    def estimator_state(self) -> str | None: ...
    @property
    def task(self) -> str: ...
    @property
    def classes(self) -> list[str] | None: ...
    @property
    def features(self) -> list[str]: ...
    def predict_regression(
        self,
        x: npt.NDArray[np.float64],
        draws: int = 1000,
        coverage: float = 0.9,
        seed: int = 0,
        y: npt.NDArray[np.float64] | None = None,
    ) -> list[npt.NDArray[np.float64]]: ...
    def predict_proba(
        self, x: npt.NDArray[np.float64], draws: int = 1000, seed: int = 0
    ) -> npt.NDArray[np.float64]: ...
    def sample_y(
        self, x: npt.NDArray[np.float64], n: int, seed: int = 0
    ) -> npt.NDArray[np.float64]: ...

def bnn_fit(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    classes: list[str] | None = None,
    features: list[str] | None = None,
    target: str = "y",
    *,
    method: str = "smi",
    hidden: list[int] | None = None,
    particles: int = 5,
    elbo_draws: int = 10,
    lr: float | None = None,
    max_steps: int | None = None,
    batch_size: int = 100,
    validation: float | None = None,
    seed: int = 0,
    n_jobs: int | None = None,
    temperature: float | None = None,
    prior_scale: float = 1.0,
) -> BnnModel: ...
