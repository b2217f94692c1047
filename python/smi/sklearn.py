"""scikit-learn estimators over smi's built-in Bayesian neural networks.

``BNNRegressor`` and ``BNNClassifier`` fit the networks of ``smi fit`` (docs/algorithms.md §7.3:
N(0, s²) priors on every weight, s = ``prior_scale``; regression with a learned Gamma(1, 0.1)
noise precision on standardised targets, classification by softmax) with the same defaults
(a network sized to the data, ``hidden="auto"``; SMI's tempered likelihood, T = 0.3 for
regression and 0.2 for classification: docs/calibration.md) through the same Rust pipeline,
so a fitted estimator *is* a ``.smi`` model file: ``save(path)`` writes the file that ``smi
predict --model`` reads, ``load(path)`` reads the file that ``smi fit --save`` writes, and
pickles hold its bytes::

    from smi import BNNRegressor

    est = BNNRegressor().fit(X_train, y_train)
    mean, std = est.predict(X_test, return_std=True)
    lower, upper = est.predict_interval(X_test, coverage=0.9)
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._smi import BnnModel, bnn_fit

__all__ = ["BNNClassifier", "BNNRegressor"]

#: The methods the estimators accept.
METHODS = ("smi", "svgd", "asvgd", "ovi", "map", "nuts")

Array = npt.NDArray[np.float64]
PathLike = str | os.PathLike[str]


def _seed(random_state: Any) -> int:
    """An int seed: the int itself, or a draw from a ``RandomState`` / ``None``."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}")
        return int(random_state)
    return int(check_random_state(random_state).randint(2**31 - 1))


class _BNN(BaseEstimator):
    """The parameters, fitting, persistence and pickling shared by both estimators."""

    _task = "regression"

    def __init__(
        self,
        hidden: tuple[int, ...] | str = "auto",
        method: str = "smi",
        n_particles: int = 5,
        elbo_draws: int = 10,
        lr: float | str = 5e-3,
        max_steps: int | None = None,
        batch_size: int = 100,
        validation_fraction: float | None = None,
        random_state: Any = 0,
        n_jobs: int | None = None,
        n_draws: int = 1000,
        temperature: float | None = None,
        prior_scale: float = 1.0,
    ) -> None:
        self.hidden = hidden
        self.method = method
        self.n_particles = n_particles
        self.elbo_draws = elbo_draws
        self.lr = lr
        self.max_steps = max_steps
        self.batch_size = batch_size
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.n_draws = n_draws
        self.temperature = temperature
        self.prior_scale = prior_scale

    def _check_params(self) -> tuple[list[int] | None, float | None]:
        if self.method not in METHODS:
            raise ValueError(f"method={self.method!r}; valid methods: {', '.join(METHODS)}")
        hidden = self._hidden()
        for name in ("temperature", "prior_scale"):
            v = getattr(self, name)
            if (v is not None or name == "prior_scale") and not (
                isinstance(v, (int, float, np.integer, np.floating))
                and not isinstance(v, bool)
                and v > 0
                and np.isfinite(v)
            ):
                none = " or None" if name == "temperature" else ""
                raise ValueError(f"{name}={v!r} must be a positive number{none}")
        for name in ("n_particles", "elbo_draws", "batch_size"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ValueError(f"{name}={v!r} must be a positive integer")
        if self.n_draws < 2:
            raise ValueError(f"n_draws={self.n_draws!r} must be at least 2")
        if self.max_steps is not None and (
            int(self.max_steps) != self.max_steps or self.max_steps < 1
        ):
            raise ValueError(f"max_steps={self.max_steps!r} must be a positive integer or None")
        v = self.validation_fraction
        if v is not None and not 0.0 < v < 1.0:
            raise ValueError(f"validation_fraction={v!r} must be in (0, 1) or None")
        if isinstance(self.lr, str):
            if self.lr != "auto":
                raise ValueError(f"lr={self.lr!r}: a positive number or 'auto'")
            lr = None
        else:
            lr = float(self.lr)
            if not (lr > 0.0 and np.isfinite(lr)):
                raise ValueError(f"lr={self.lr!r}: a positive number or 'auto'")
        if self.n_jobs is not None and (int(self.n_jobs) != self.n_jobs or self.n_jobs == 0):
            raise ValueError(
                f"n_jobs={self.n_jobs!r} must be a non-zero integer or None (-1: every core, "
                "as in scikit-learn)"
            )
        return hidden, lr

    def _hidden(self) -> list[int] | None:
        """The hidden widths of ``hidden``; ``None`` for ``"auto"``."""
        if isinstance(self.hidden, str):
            if self.hidden != "auto":
                raise ValueError(
                    f"hidden={self.hidden!r}: give 'auto' or positive layer widths, e.g. (50, 50)"
                )
            return None
        hidden = [self.hidden] if isinstance(self.hidden, (int, np.integer)) else self.hidden
        hidden = list(hidden)
        if not hidden or any(int(h) != h or h < 1 for h in hidden):
            raise ValueError(
                f"hidden={self.hidden!r}: give 'auto' or positive layer widths, e.g. (50, 50)"
            )
        return [int(h) for h in hidden]

    def _fit(self, X: Array, y: Array, classes: list[str] | None) -> None:
        hidden, lr = self._check_params()
        names = getattr(self, "feature_names_in_", None)
        self.seed_ = _seed(self.random_state)
        self.model_ = bnn_fit(
            np.ascontiguousarray(X, dtype=np.float64),
            np.ascontiguousarray(y, dtype=np.float64),
            classes,
            None if names is None else [str(n) for n in names],
            "y",
            method=self.method,
            hidden=hidden,
            particles=int(self.n_particles),
            elbo_draws=int(self.elbo_draws),
            lr=lr,
            max_steps=None if self.max_steps is None else int(self.max_steps),
            batch_size=int(self.batch_size),
            validation=self.validation_fraction,
            seed=self.seed_,
            n_jobs=_threads(self.n_jobs),
            temperature=None if self.temperature is None else float(self.temperature),
            prior_scale=float(self.prior_scale),
        )
        self._fitted_from_header()

    def _fitted_from_header(self) -> None:
        """The fitted attributes the model file records: ``hidden_`` and ``temperature_``."""
        h = self.header_
        self.hidden_ = tuple(int(w) for w in h["architecture"]["sizes"][1:-1])
        # Files of an smi that did not record T were fitted at T = 1.
        self.temperature_ = float(h["settings"].get("temperature", 1.0))

    def _x(self, X: Any) -> Array:
        check_is_fitted(self, "model_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return np.ascontiguousarray(X)

    @property
    def header_(self) -> dict[str, Any]:
        """The model file's header (architecture, scalers, settings, training, validation)."""
        import json

        check_is_fitted(self, "model_")
        return json.loads(self.model_.header_json())

    def save(self, path: PathLike) -> None:
        """Write the fitted model as a ``.smi`` file (what ``smi fit --save`` writes), with
        what ``load`` needs to give back this estimator exactly: ``n_draws`` and, for a
        classifier, the labels with their types."""
        import json

        check_is_fitted(self, "model_")
        state: dict[str, Any] = {"n_draws": int(self.n_draws)}
        classes = getattr(self, "classes_", None)
        if classes is not None:
            labels = [c.item() if isinstance(c, np.generic) else c for c in classes]
            try:
                json.dumps(labels)
            except TypeError:
                # Labels JSON cannot hold come back as the model file's text names.
                labels = None
            if labels is not None:
                state["classes"] = labels
                state["classes_dtype"] = "object" if classes.dtype == object else classes.dtype.str
        self.model_.with_estimator_state(json.dumps(state)).save(os.fspath(path))

    @classmethod
    def load(cls, path: PathLike) -> Any:
        """An estimator holding the ``.smi`` model file at ``path`` (from ``smi fit --save`` or
        ``save``), with the parameters it was fitted with."""
        model = BnnModel.load(os.fspath(path))
        if model.task != cls._task:
            raise ValueError(f"{os.fspath(path)} holds a {model.task} model, not {cls._task}")
        est = cls()
        est._adopt(model)
        return est

    def _adopt(self, model: BnnModel) -> None:
        """Take a model read from a file: parameters, fitted attributes."""
        import json

        h = json.loads(model.header_json())
        s = h["settings"]
        self.set_params(
            hidden=tuple(h["architecture"]["sizes"][1:-1]),
            method=h["method"],
            n_particles=s["particles"],
            elbo_draws=s["elbo_draws"],
            lr=("auto" if s["lr_mode"] == "auto" else s["lr"]) if s["lr"] is not None else 5e-3,
            max_steps=s["max_steps"],
            validation_fraction=s["validation"],
            random_state=s["seed"],
            temperature=float(s.get("temperature", 1.0)),
            prior_scale=float(h["architecture"]["prior_scale"]),
        )
        self.seed_ = int(s["seed"])
        self.model_ = model
        self._fitted_from_header()
        features = model.features
        self.n_features_in_ = len(features)
        if features != [f"x{j}" for j in range(len(features))]:
            self.feature_names_in_ = np.asarray(features, dtype=object)
        state = json.loads(model.estimator_state() or "{}")
        if "n_draws" in state:
            self.set_params(n_draws=int(state["n_draws"]))
        if "classes" in state:
            dtype = state.get("classes_dtype", "object")
            self.classes_ = np.asarray(
                state["classes"], dtype=object if dtype == "object" else dtype
            )
        elif model.classes is not None:
            self.classes_ = _labels(model.classes)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(super().__getstate__())
        if "model_" in state:
            state["model_"] = bytes(state["model_"].to_bytes())
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        if "model_" in state:
            state["model_"] = BnnModel.from_bytes(state["model_"])
        super().__setstate__(state)


def _threads(n_jobs: int | None) -> int | None:
    """Threads for ``n_jobs`` as scikit-learn reads it: ``None`` or -1 every core, -2 all but
    one, and so on (at least one)."""
    if n_jobs is None or n_jobs > 0:
        return n_jobs
    return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))


def _labels(names: list[str]) -> npt.NDArray[Any]:
    """Class names from a model file of ``smi fit`` (which keeps them as text): numbers when
    every name is one, else strings. Files the estimators save keep the labels' types."""
    for kind in (int, float):
        try:
            return np.asarray([kind(n) for n in names])
        except ValueError:
            continue
    return np.asarray(names, dtype=object)


class BNNRegressor(RegressorMixin, _BNN):
    """Bayesian neural-network regression by Stein mixture inference (or SVGD, ASVGD, OVI, MAP,
    NUTS): the model and pipeline of ``smi fit``.

    Parameters:
        hidden: hidden-layer widths (relu), or ``"auto"`` (the default, ``smi fit --hidden
            auto``): two layers of 50 from 500 training rows, below that one layer of rows/10
            units (at least 10). The widths used are in ``hidden_`` after fitting.
        method: ``"smi"``, ``"svgd"``, ``"asvgd"``, ``"ovi"``, ``"map"`` or ``"nuts"``.
        n_particles: particles m (SMI, SVGD, ASVGD).
        elbo_draws: ELBO draws S per particle (SMI).
        lr: Adam's learning rate, or ``"auto"``: ``smi fit --lr auto``'s grid 5e-1 … 5e-6,
            each scored on the validation split (or a 10 % hold-out), the best refitted.
        max_steps: step budget (default: ``smi fit``'s, sized for about a minute on two cores;
            the Stein methods stop earlier on the force norm).
        batch_size: mini-batch rows (used when there are more training rows).
        validation_fraction: hold out this fraction for the validation metrics in ``header_``.
        random_state: seed of the fit and (by default) of the predictive draws.
        n_jobs: threads of the fit (default: all cores).
        n_draws: predictive draws of ``predict``, ``predict_interval``.
        temperature: T of the tempered likelihood p(y | θ)^(1/T) (1: the Bayesian posterior);
            ``None`` (the default): ``smi fit``'s default, 0.3 for SMI regression and 0.2 for
            SMI classification (chosen for calibration, docs/calibration.md), 1 for the other
            methods. The T used is in ``temperature_`` after fitting.
        prior_scale: s of the N(0, s²) prior on every weight and bias (inputs and targets are
            standardised).

    Fitted attributes: ``model_`` (the model file), ``hidden_`` (the hidden widths used),
    ``temperature_`` (the T used), ``seed_``, ``n_features_in_``, ``header_``.
    """

    _task = "regression"

    def fit(self, X: Any, y: Any) -> BNNRegressor:
        """Fit to ``X`` (n x p) and ``y`` (n); returns ``self``."""
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        self._fit(X, y, None)
        return self

    def _regression(self, X: Any, coverage: float) -> tuple[Array, Array, Array, Array]:
        X = self._x(X)
        out = self.model_.predict_regression(X, int(self.n_draws), float(coverage), self.seed_)
        return out[:4]

    def log_predictive_density(self, X: Any, y: Any) -> Array:
        """log p(y_i | x_i, data) per row: the log density of the posterior predictive
        mixture (over ``n_draws`` parameter draws) at each target; ``-mean`` is the test NLL."""
        X = self._x(X)
        y = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
        if len(y) != len(X):
            raise ValueError(f"y has {len(y)} values for {len(X)} rows of X")
        out = self.model_.predict_regression(X, int(self.n_draws), 0.9, self.seed_, y)
        return out[4]

    def predict(self, X: Any, return_std: bool = False) -> Array | tuple[Array, Array]:
        """The predictive mean per row; with ``return_std``, also the predictive standard
        deviation (observation noise included)."""
        mean, std, _, _ = self._regression(X, 0.9)
        return (mean, std) if return_std else mean

    def predict_interval(self, X: Any, coverage: float = 0.9) -> tuple[Array, Array]:
        """The central predictive interval of mass ``coverage`` per row: ``(lower, upper)``."""
        if not 0.0 < coverage < 1.0:
            raise ValueError(f"coverage={coverage!r} must be in (0, 1)")
        _, _, lower, upper = self._regression(X, coverage)
        return lower, upper

    def sample_y(self, X: Any, n_samples: int = 1, random_state: Any = 0) -> Array:
        """``n_samples`` posterior predictive draws of y per row: shape (n, n_samples), as
        ``GaussianProcessRegressor.sample_y``."""
        if int(n_samples) != n_samples or n_samples < 1:
            raise ValueError(f"n_samples={n_samples!r} must be a positive integer")
        X = self._x(X)
        return self.model_.sample_y(X, int(n_samples), _seed(random_state))


class BNNClassifier(ClassifierMixin, _BNN):
    """Bayesian neural-network classification (softmax, tanh hidden layers) by Stein mixture
    inference or the other methods: the model and pipeline of ``smi fit``. The parameters and
    fitted attributes are those of ``BNNRegressor`` (tanh hidden layers; ``temperature=None``
    is T = 0.2 for SMI); ``classes_`` holds the labels."""

    _task = "classification"

    def fit(self, X: Any, y: Any) -> BNNClassifier:
        """Fit to ``X`` (n x p) and the labels ``y`` (n); returns ``self``."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, index = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(
                f"BNNClassifier needs samples of at least 2 classes; y has 1 class: "
                f"{self.classes_[0]!r}"
            )
        self._fit(X, index.astype(np.float64), [str(c) for c in self.classes_])
        return self

    def predict_proba(self, X: Any) -> Array:
        """The posterior predictive class probabilities (n x classes, in ``classes_`` order)."""
        X = self._x(X)
        return self.model_.predict_proba(X, int(self.n_draws), self.seed_)

    def predict_log_proba(self, X: Any) -> Array:
        """The log of ``predict_proba``."""
        return np.log(self.predict_proba(X))

    def predict(self, X: Any) -> npt.NDArray[Any]:
        """The most probable class per row."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]
