"""The validation posteriors as NumPyro models, each written from its posteriordb ``model.stan``.

Every model keeps Stan's parameter names, priors (an absent prior is Stan's improper flat one,
written ``dist.ImproperUniform`` on the parameter's constraint) and constraints; transformed
parameters that the reference reports are ``numpyro.deterministic`` sites of the same name.
Stan's ``transformed data`` is computed at the top of the model body. Proper priors on
bounded parameters (``real<lower=0> s; s ~ normal(0, 2)``) are the half distributions: they
differ from Stan's density by a constant only.

``REGISTRY`` maps each posteriordb name to a ``Posterior``: the model, the function turning the
data JSON into its keyword arguments, and a kind tag. Call ``numpyro.enable_x64()`` before
running any of them (the references are float64 runs).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints
from numpyro.infer.util import initialize_model

# ``by_stan_name`` (NumPyro site arrays -> Stan's ``name[i]`` columns) lives with the tests of
# the four posteriordb models; the validation set uses the same mapping.
_TESTS = Path(__file__).resolve().parents[1] / "python" / "tests"
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

from posteriordb_models import arK, by_stan_name

__all__ = ["FAST", "REGISTRY", "Posterior", "by_stan_name", "model_and_kwargs", "unconstrained_dim"]

Model = Callable[..., None]
Kwargs = Callable[[dict[str, Any]], dict[str, Any]]


def _flat(support: constraints.Constraint, shape: tuple[int, ...] = ()) -> dist.Distribution:
    """Stan's improper flat prior on ``support`` (a parameter with no sampling statement)."""
    return dist.ImproperUniform(support, (), shape)


def _sd(x: jnp.ndarray) -> jnp.ndarray:
    """Stan's ``sd``: the sample standard deviation (ddof = 1)."""
    return jnp.std(x, ddof=1)


# ----------------------------------------------------------------------------------------
# Hierarchical: eight schools


def eight_schools_noncentered(J: int, y: jnp.ndarray, sigma: jnp.ndarray) -> None:
    """``eight_schools_noncentered.stan``: theta = theta_trans * tau + mu."""
    theta_trans = numpyro.sample("theta_trans", dist.Normal(0.0, 1.0).expand([J]))
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    theta = numpyro.deterministic("theta", theta_trans * tau + mu)
    numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


def eight_schools_centered(J: int, y: jnp.ndarray, sigma: jnp.ndarray) -> None:
    """``eight_schools_centered.stan``: the funnel (theta ~ normal(mu, tau))."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    theta = numpyro.sample("theta", dist.Normal(mu, tau).expand([J]))
    numpyro.sample("y", dist.Normal(theta, sigma), obs=y)


# ----------------------------------------------------------------------------------------
# Linear regressions: kidiq


def kidscore_momiq(N: int, kid_score: jnp.ndarray, mom_iq: jnp.ndarray) -> None:
    """``kidscore_momiq.stan``: flat beta, half-Cauchy sigma."""
    beta = numpyro.sample("beta", _flat(constraints.real, (2,)))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    numpyro.sample("kid_score", dist.Normal(beta[0] + beta[1] * mom_iq, sigma), obs=kid_score)


def kidscore_momhs(N: int, kid_score: jnp.ndarray, mom_hs: jnp.ndarray) -> None:
    """``kidscore_momhs.stan``."""
    beta = numpyro.sample("beta", _flat(constraints.real, (2,)))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    numpyro.sample("kid_score", dist.Normal(beta[0] + beta[1] * mom_hs, sigma), obs=kid_score)


def kidscore_momhsiq(
    N: int, kid_score: jnp.ndarray, mom_iq: jnp.ndarray, mom_hs: jnp.ndarray
) -> None:
    """``kidscore_momhsiq.stan``."""
    beta = numpyro.sample("beta", _flat(constraints.real, (3,)))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    mu = beta[0] + beta[1] * mom_hs + beta[2] * mom_iq
    numpyro.sample("kid_score", dist.Normal(mu, sigma), obs=kid_score)


def kidscore_interaction(
    N: int, kid_score: jnp.ndarray, mom_iq: jnp.ndarray, mom_hs: jnp.ndarray
) -> None:
    """``kidscore_interaction.stan``: uncentred interaction (strongly correlated beta)."""
    inter = mom_hs * mom_iq
    beta = numpyro.sample("beta", _flat(constraints.real, (4,)))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    mu = beta[0] + beta[1] * mom_hs + beta[2] * mom_iq + beta[3] * inter
    numpyro.sample("kid_score", dist.Normal(mu, sigma), obs=kid_score)


def _kidscore_inter(kid_score: jnp.ndarray, hs: jnp.ndarray, iq: jnp.ndarray) -> None:
    """The shared body of the three ``kidscore_interaction_*`` models (flat beta and sigma)."""
    inter = hs * iq
    beta = numpyro.sample("beta", _flat(constraints.real, (4,)))
    sigma = numpyro.sample("sigma", _flat(constraints.positive))
    mu = beta[0] + beta[1] * hs + beta[2] * iq + beta[3] * inter
    numpyro.sample("kid_score", dist.Normal(mu, sigma), obs=kid_score)


def kidscore_interaction_c(
    N: int, kid_score: jnp.ndarray, mom_hs: jnp.ndarray, mom_iq: jnp.ndarray
) -> None:
    """``kidscore_interaction_c.stan``: predictors centred on their means."""
    _kidscore_inter(kid_score, mom_hs - jnp.mean(mom_hs), mom_iq - jnp.mean(mom_iq))


def kidscore_interaction_c2(
    N: int, kid_score: jnp.ndarray, mom_hs: jnp.ndarray, mom_iq: jnp.ndarray
) -> None:
    """``kidscore_interaction_c2.stan``: predictors centred on reference points."""
    _kidscore_inter(kid_score, mom_hs - 0.5, mom_iq - 100.0)


def kidscore_interaction_z(
    N: int, kid_score: jnp.ndarray, mom_hs: jnp.ndarray, mom_iq: jnp.ndarray
) -> None:
    """``kidscore_interaction_z.stan``: predictors standardised by two sds."""
    z_mom_hs = (mom_hs - jnp.mean(mom_hs)) / (2 * _sd(mom_hs))
    z_mom_iq = (mom_iq - jnp.mean(mom_iq)) / (2 * _sd(mom_iq))
    _kidscore_inter(kid_score, z_mom_hs, z_mom_iq)


def kidscore_mom_work(N: int, kid_score: jnp.ndarray, mom_work: jnp.ndarray) -> None:
    """``kidscore_mom_work.stan``: indicator predictors."""
    work2 = (mom_work == 2).astype(kid_score.dtype)
    work3 = (mom_work == 3).astype(kid_score.dtype)
    work4 = (mom_work == 4).astype(kid_score.dtype)
    beta = numpyro.sample("beta", _flat(constraints.real, (4,)))
    sigma = numpyro.sample("sigma", _flat(constraints.positive))
    mu = beta[0] + beta[1] * work2 + beta[2] * work3 + beta[3] * work4
    numpyro.sample("kid_score", dist.Normal(mu, sigma), obs=kid_score)


# ----------------------------------------------------------------------------------------
# Linear regressions: earnings (flat beta and sigma throughout)


def _flat_regression(response: jnp.ndarray, predictors: list[jnp.ndarray], obs_name: str) -> None:
    """``response ~ normal(beta[1] + sum_k beta[k+1] * predictors[k], sigma)``, flat priors."""
    beta = numpyro.sample("beta", _flat(constraints.real, (len(predictors) + 1,)))
    sigma = numpyro.sample("sigma", _flat(constraints.positive))
    mu = beta[0]
    for k, x in enumerate(predictors):
        mu = mu + beta[k + 1] * x
    numpyro.sample(obs_name, dist.Normal(mu, sigma), obs=response)


def earn_height(N: int, earn: jnp.ndarray, height: jnp.ndarray) -> None:
    """``earn_height.stan``: earnings in dollars (sigma ~ 2e4: a scale test)."""
    _flat_regression(earn, [height], "earn")


def log10earn_height(N: int, earn: jnp.ndarray, height: jnp.ndarray) -> None:
    """``log10earn_height.stan``."""
    _flat_regression(jnp.log10(earn), [height], "log10_earn")


def logearn_height(N: int, earn: jnp.ndarray, height: jnp.ndarray) -> None:
    """``logearn_height.stan``."""
    _flat_regression(jnp.log(earn), [height], "log_earn")


def logearn_height_male(N: int, earn: jnp.ndarray, height: jnp.ndarray, male: jnp.ndarray) -> None:
    """``logearn_height_male.stan``."""
    _flat_regression(jnp.log(earn), [height, male], "log_earn")


def logearn_interaction(N: int, earn: jnp.ndarray, height: jnp.ndarray, male: jnp.ndarray) -> None:
    """``logearn_interaction.stan``: uncentred interaction height * male."""
    _flat_regression(jnp.log(earn), [height, male, height * male], "log_earn")


def logearn_interaction_z(
    N: int, earn: jnp.ndarray, height: jnp.ndarray, male: jnp.ndarray
) -> None:
    """``logearn_interaction_z.stan``: standardised height."""
    z_height = (height - jnp.mean(height)) / _sd(height)
    _flat_regression(jnp.log(earn), [z_height, male, z_height * male], "log_earn")


def logearn_logheight_male(
    N: int, earn: jnp.ndarray, height: jnp.ndarray, male: jnp.ndarray
) -> None:
    """``logearn_logheight_male.stan``: log height (intercept and slope nearly collinear)."""
    _flat_regression(jnp.log(earn), [jnp.log(height), male], "log_earn")


# ----------------------------------------------------------------------------------------
# Linear regressions: mesquite (flat beta and sigma throughout)


def mesquite(
    N: int,
    weight: jnp.ndarray,
    diam1: jnp.ndarray,
    diam2: jnp.ndarray,
    canopy_height: jnp.ndarray,
    total_height: jnp.ndarray,
    density: jnp.ndarray,
    group: jnp.ndarray,
) -> None:
    """``mesquite.stan``: raw scale."""
    xs = [diam1, diam2, canopy_height, total_height, density, group]
    _flat_regression(weight, xs, "weight")


def logmesquite(
    N: int,
    weight: jnp.ndarray,
    diam1: jnp.ndarray,
    diam2: jnp.ndarray,
    canopy_height: jnp.ndarray,
    total_height: jnp.ndarray,
    density: jnp.ndarray,
    group: jnp.ndarray,
) -> None:
    """``logmesquite.stan``: everything logged but the group indicator."""
    xs = [
        jnp.log(diam1),
        jnp.log(diam2),
        jnp.log(canopy_height),
        jnp.log(total_height),
        jnp.log(density),
        group,
    ]
    _flat_regression(jnp.log(weight), xs, "log_weight")


def logmesquite_logva(
    N: int,
    weight: jnp.ndarray,
    diam1: jnp.ndarray,
    diam2: jnp.ndarray,
    canopy_height: jnp.ndarray,
    group: jnp.ndarray,
) -> None:
    """``logmesquite_logva.stan``: log canopy volume and area."""
    log_canopy_volume = jnp.log(diam1 * diam2 * canopy_height)
    log_canopy_area = jnp.log(diam1 * diam2)
    xs = [log_canopy_volume, log_canopy_area, group]
    _flat_regression(jnp.log(weight), xs, "log_weight")


def _log_canopy(
    diam1: jnp.ndarray, diam2: jnp.ndarray, canopy_height: jnp.ndarray
) -> list[jnp.ndarray]:
    """The derived predictors of ``logmesquite_logvas``/``_logvash``: log canopy volume,
    area and shape (``diam1 / diam2``)."""
    return [
        jnp.log(diam1 * diam2 * canopy_height),
        jnp.log(diam1 * diam2),
        jnp.log(diam1 / diam2),
    ]


def logmesquite_logvas(
    N: int,
    weight: jnp.ndarray,
    diam1: jnp.ndarray,
    diam2: jnp.ndarray,
    canopy_height: jnp.ndarray,
    total_height: jnp.ndarray,
    density: jnp.ndarray,
    group: jnp.ndarray,
) -> None:
    """``logmesquite_logvas.stan``: volume, area, shape, height, density, group."""
    xs = [
        *_log_canopy(diam1, diam2, canopy_height),
        jnp.log(total_height),
        jnp.log(density),
        group,
    ]
    _flat_regression(jnp.log(weight), xs, "log_weight")


def logmesquite_logvash(
    N: int,
    weight: jnp.ndarray,
    diam1: jnp.ndarray,
    diam2: jnp.ndarray,
    canopy_height: jnp.ndarray,
    total_height: jnp.ndarray,
    group: jnp.ndarray,
) -> None:
    """``logmesquite_logvash.stan``: volume, area, shape, height, group."""
    xs = [*_log_canopy(diam1, diam2, canopy_height), jnp.log(total_height), group]
    _flat_regression(jnp.log(weight), xs, "log_weight")


def logmesquite_logvolume(
    N: int, weight: jnp.ndarray, diam1: jnp.ndarray, diam2: jnp.ndarray, canopy_height: jnp.ndarray
) -> None:
    """``logmesquite_logvolume.stan``."""
    log_canopy_volume = jnp.log(diam1 * diam2 * canopy_height)
    _flat_regression(jnp.log(weight), [log_canopy_volume], "log_weight")


# ----------------------------------------------------------------------------------------
# Linear regressions: nes, kilpisjarvi, sblr, diamonds


def nes(
    N: int,
    partyid7: jnp.ndarray,
    real_ideo: jnp.ndarray,
    race_adj: jnp.ndarray,
    educ1: jnp.ndarray,
    gender: jnp.ndarray,
    income: jnp.ndarray,
    age_discrete: jnp.ndarray,
) -> None:
    """``nes.stan``: age as a factor of four levels (three indicators)."""
    age30_44 = (age_discrete == 2).astype(partyid7.dtype)
    age45_64 = (age_discrete == 3).astype(partyid7.dtype)
    age65up = (age_discrete == 4).astype(partyid7.dtype)
    xs = [real_ideo, race_adj, age30_44, age45_64, age65up, educ1, gender, income]
    _flat_regression(partyid7, xs, "partyid7")


def kilpisjarvi(
    N: int,
    x: jnp.ndarray,
    y: jnp.ndarray,
    pmualpha: float,
    psalpha: float,
    pmubeta: float,
    psbeta: float,
) -> None:
    """``kilpisjarvi.stan``: uncentred years as x (alpha and beta correlated ~ -1)."""
    alpha = numpyro.sample("alpha", dist.Normal(pmualpha, psalpha))
    beta = numpyro.sample("beta", dist.Normal(pmubeta, psbeta))
    sigma = numpyro.sample("sigma", _flat(constraints.positive))
    numpyro.sample("y", dist.Normal(alpha + beta * x, sigma), obs=y)


def blr(N: int, D: int, X: jnp.ndarray, y: jnp.ndarray) -> None:
    """``blr.stan`` (sblrc, sblri): Bayesian linear regression, normal(0, 10) priors."""
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([D]))
    sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
    numpyro.sample("y", dist.Normal(X @ beta, sigma), obs=y)


def diamonds(N: int, Y: jnp.ndarray, K: int, X: jnp.ndarray, prior_only: int) -> None:
    """``diamonds.stan`` (brms): 24 correlated slopes on centred predictors, N = 5000.

    Stan's ``student_t_lpdf(sigma | 3, 0, 10) - student_t_lccdf(0 | 3, 0, 10)`` on
    ``sigma > 0`` is the Student-t truncated to (0, inf). The generated quantity
    ``b_Intercept`` is left out (the reference does not report it).
    """
    means_X = jnp.mean(X[:, 1:], axis=0)
    Xc = X[:, 1:] - means_X
    b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([K - 1]))
    Intercept = numpyro.sample("Intercept", dist.StudentT(3.0, 8.0, 10.0))
    sigma = numpyro.sample(
        "sigma", dist.TruncatedDistribution(dist.StudentT(3.0, 0.0, 10.0), low=0.0)
    )
    if not prior_only:
        numpyro.sample("Y", dist.Normal(Intercept + Xc @ b, sigma), obs=Y)


# ----------------------------------------------------------------------------------------
# Time series


# ``arK.stan`` (AR(K), normal(0, 10) coefficients, half-Cauchy(2.5) noise sd) is the test
# suite's model, imported above.


def arma11(T: int, y: jnp.ndarray) -> None:
    """``arma11.stan``: ARMA(1, 1), err[0] = 0; the errors' recursion is a ``lax.scan``."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    phi = numpyro.sample("phi", dist.Normal(0.0, 2.0))
    theta = numpyro.sample("theta", dist.Normal(0.0, 2.0))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    err1 = y[0] - (mu + phi * mu)

    def step(err_prev: jnp.ndarray, t: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        nu = mu + phi * y[t - 1] + theta * err_prev
        err = y[t] - nu
        return err, err

    _, rest = jax.lax.scan(step, err1, jnp.arange(1, T))
    err = jnp.concatenate([err1[None], rest])
    numpyro.factor("err", dist.Normal(0.0, sigma).log_prob(err).sum())


def garch11(T: int, y: jnp.ndarray, sigma1: float) -> None:
    """``garch11.stan``: flat priors; beta1's upper bound 1 - alpha1 depends on alpha1."""
    mu = numpyro.sample("mu", _flat(constraints.real))
    alpha0 = numpyro.sample("alpha0", _flat(constraints.positive))
    alpha1 = numpyro.sample("alpha1", _flat(constraints.unit_interval))
    # Stan's flat beta1 on (0, 1 - alpha1), written as Uniform(0, 1 - alpha1) times (1 - alpha1):
    # NumPyro misses the dependent bound of an ImproperUniform (its support is wrapped in an
    # IndependentConstraint), keeps the bound of the first trace and returns draws of beta1
    # above 1 - alpha1; a Uniform's bare Interval support is replayed per draw.
    beta1 = numpyro.sample("beta1", dist.Uniform(0.0, 1.0 - alpha1))
    numpyro.factor("beta1_flat", jnp.log1p(-alpha1))

    def step(sigma_prev: jnp.ndarray, y_prev: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        s = jnp.sqrt(alpha0 + alpha1 * jnp.square(y_prev - mu) + beta1 * jnp.square(sigma_prev))
        return s, s

    sigma0 = jnp.asarray(sigma1, dtype=y.dtype)
    _, rest = jax.lax.scan(step, sigma0, y[:-1])
    sigma = jnp.concatenate([sigma0[None], rest])
    numpyro.sample("y", dist.Normal(mu, sigma), obs=y)


# ----------------------------------------------------------------------------------------
# Hidden Markov models (the forward algorithm marginalises the discrete states)


def _forward(log_theta: jnp.ndarray, log_emission: jnp.ndarray) -> jnp.ndarray:
    """Stan's forward algorithm: log p(obs) from ``log_theta[j, k]`` = log P(k | j) and
    ``log_emission[t, k]``; gamma[1] = emission[1], no initial distribution."""

    def step(gamma: jnp.ndarray, emission: jnp.ndarray) -> tuple[jnp.ndarray, None]:
        acc = gamma[:, None] + log_theta + emission[None, :]
        return jax.scipy.special.logsumexp(acc, axis=0), None

    gamma_n, _ = jax.lax.scan(step, log_emission[0], log_emission[1:])
    return jax.scipy.special.logsumexp(gamma_n)


def hmm_example(N: int, K: int, y: jnp.ndarray) -> None:
    """``hmm_example.stan``: two states, normal(mu[k], 1) emissions, flat simplex rows."""
    theta1 = numpyro.sample("theta1", _flat(constraints.simplex, (K,)))
    theta2 = numpyro.sample("theta2", _flat(constraints.simplex, (K,)))
    mu = numpyro.sample("mu", _flat(constraints.positive_ordered_vector, (K,)))
    theta = jnp.stack([theta1, theta2])  # Stan's transformed theta (not in the reference)
    numpyro.factor("mu1_prior", dist.Normal(3.0, 1.0).log_prob(mu[0]))
    numpyro.factor("mu2_prior", dist.Normal(10.0, 1.0).log_prob(mu[1]))
    log_emission = dist.Normal(mu[None, :], 1.0).log_prob(y[:, None])
    numpyro.factor("forward", _forward(jnp.log(theta), log_emission))


def _hmm_drive_priors(
    K: int, alpha: jnp.ndarray, support: constraints.Constraint
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """The parameters and priors shared by ``hmm_drive_0`` and ``hmm_drive_1``."""
    theta1 = numpyro.sample("theta1", _flat(constraints.simplex, (K,)))
    theta2 = numpyro.sample("theta2", _flat(constraints.simplex, (K,)))
    phi = numpyro.sample("phi", _flat(support, (K,)))
    lam = numpyro.sample("lambda", _flat(support, (K,)))
    theta = jnp.stack([theta1, theta2])  # Stan's transformed theta (not in the reference)
    for k in range(K):
        numpyro.factor(f"theta{k + 1}_prior", dist.Dirichlet(alpha[k]).log_prob(theta[k]))
    numpyro.factor("phi1_prior", dist.Normal(0.0, 1.0).log_prob(phi[0]))
    numpyro.factor("phi2_prior", dist.Normal(3.0, 1.0).log_prob(phi[1]))
    numpyro.factor("lambda1_prior", dist.Normal(0.0, 1.0).log_prob(lam[0]))
    numpyro.factor("lambda2_prior", dist.Normal(3.0, 1.0).log_prob(lam[1]))
    return theta, phi, lam


def hmm_drive_0(N: int, K: int, u: jnp.ndarray, v: jnp.ndarray, alpha: jnp.ndarray) -> None:
    """``hmm_drive_0.stan``: exponential emissions, positive-ordered rates."""
    theta, phi, lam = _hmm_drive_priors(K, alpha, constraints.positive_ordered_vector)
    log_emission = dist.Exponential(phi[None, :]).log_prob(u[:, None]) + dist.Exponential(
        lam[None, :]
    ).log_prob(v[:, None])
    numpyro.factor("forward", _forward(jnp.log(theta), log_emission))


def hmm_drive_1(
    N: int,
    K: int,
    u: jnp.ndarray,
    v: jnp.ndarray,
    alpha: jnp.ndarray,
    tau: float,
    rho: float,
) -> None:
    """``hmm_drive_1.stan``: normal emissions with known sds, ordered means."""
    theta, phi, lam = _hmm_drive_priors(K, alpha, constraints.ordered_vector)
    log_emission = dist.Normal(phi[None, :], tau).log_prob(u[:, None]) + dist.Normal(
        lam[None, :], rho
    ).log_prob(v[:, None])
    numpyro.factor("forward", _forward(jnp.log(theta), log_emission))


# ----------------------------------------------------------------------------------------
# Gaussian processes


def _exp_quad_cov(x: jnp.ndarray, alpha: jnp.ndarray, rho: jnp.ndarray) -> jnp.ndarray:
    """Stan's ``gp_exp_quad_cov(x, alpha, rho)`` on 1-D inputs."""
    d = x[:, None] - x[None, :]
    return alpha**2 * jnp.exp(-0.5 * d**2 / rho**2)


def gp_pois_regr(N: int, x: jnp.ndarray, k: jnp.ndarray) -> None:
    """``gp_pois_regr.stan``: latent GP f = L f_tilde (non-centred), Poisson counts."""
    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    f_tilde = numpyro.sample("f_tilde", dist.Normal(0.0, 1.0).expand([N]))
    cov = _exp_quad_cov(x, alpha, rho) + 1e-10 * jnp.eye(N)
    L_cov = jnp.linalg.cholesky(cov)
    f = numpyro.deterministic("f", L_cov @ f_tilde)
    numpyro.sample("k", dist.Poisson(jnp.exp(f)), obs=k)


def gp_regr(N: int, x: jnp.ndarray, y: jnp.ndarray) -> None:
    """``gp_regr.stan``: marginal GP regression; sigma (not sigma^2) on the diagonal, as in
    the Stan code."""
    rho = numpyro.sample("rho", dist.Gamma(25.0, 4.0))
    alpha = numpyro.sample("alpha", dist.HalfNormal(2.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    cov = _exp_quad_cov(x, alpha, rho) + sigma * jnp.eye(N)
    L_cov = jnp.linalg.cholesky(cov)
    numpyro.sample("y", dist.MultivariateNormal(jnp.zeros(N), scale_tril=L_cov), obs=y)


# ----------------------------------------------------------------------------------------
# Mixture


def low_dim_gauss_mix(N: int, y: jnp.ndarray) -> None:
    """``low_dim_gauss_mix.stan``: two normals, ordered means (identified), mixing theta."""
    mu = numpyro.sample("mu", _flat(constraints.ordered_vector, (2,)))
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0).expand([2]))
    theta = numpyro.sample("theta", dist.Beta(5.0, 5.0))
    numpyro.factor("mu_prior", dist.Normal(0.0, 2.0).log_prob(mu).sum())
    lp1 = dist.Normal(mu[0], sigma[0]).log_prob(y)
    lp2 = dist.Normal(mu[1], sigma[1]).log_prob(y)
    mix = jnp.logaddexp(jnp.log(theta) + lp1, jnp.log1p(-theta) + lp2)
    numpyro.factor("y", mix.sum())


# ----------------------------------------------------------------------------------------
# The registry


def data_kwargs(model: Model) -> Kwargs:
    """The keyword arguments of ``model`` from posteriordb's data JSON: the entries the
    model's signature names; lists become float64 arrays, scalars stay ``int``/``float``."""
    wanted = list(inspect.signature(model).parameters)

    def kwargs(data: dict[str, Any]) -> dict[str, Any]:
        missing = [key for key in wanted if key not in data]
        if missing:
            raise KeyError(f"{model.__name__}: data lacks {missing}")
        out: dict[str, Any] = {}
        for key in wanted:
            value = data[key]
            if isinstance(value, list):
                out[key] = jnp.asarray(np.asarray(value, dtype=np.float64))
            elif isinstance(value, int):
                out[key] = int(value)
            else:
                out[key] = float(value)
        return out

    return kwargs


@dataclass(frozen=True)
class Posterior:
    """One validation posterior.

    Attributes:
        model: the NumPyro model.
        kwargs: data JSON -> the model's keyword arguments.
        kind: what it exercises (``regression``, ``hard-geometry``, ``hierarchical``,
            ``time-series``, ``hmm``, ``gp``, ``mixture``).
        why: one line on why it is in the set.
        pathological: why NUTS itself is expected to miss the reference, or None.
    """

    model: Model
    kwargs: Kwargs
    kind: str
    why: str
    pathological: str | None = None


def _entry(model: Model, kind: str, why: str, pathological: str | None = None) -> Posterior:
    return Posterior(model, data_kwargs(model), kind, why, pathological)


REGISTRY: dict[str, Posterior] = {
    "eight_schools-eight_schools_noncentered": _entry(
        eight_schools_noncentered, "hierarchical", "non-centred hierarchy, heavy-tailed tau"
    ),
    "eight_schools-eight_schools_centered": _entry(
        eight_schools_centered,
        "hierarchical",
        "the centred funnel; posteriordb gives it the non-centred reference",
        pathological="funnel: NUTS diverges near tau = 0 and under-explores small tau",
    ),
    "kidiq-kidscore_momiq": _entry(
        kidscore_momiq, "regression", "flat beta, intercept/slope correlation -0.99"
    ),
    "kidiq-kidscore_momhs": _entry(kidscore_momhs, "regression", "binary predictor, d = 3"),
    "kidiq-kidscore_momhsiq": _entry(kidscore_momhsiq, "regression", "two predictors, d = 4"),
    "kidiq-kidscore_interaction": _entry(
        kidscore_interaction, "regression", "uncentred interaction: beta correlation -0.99"
    ),
    "kidiq_with_mom_work-kidscore_interaction_c": _entry(
        kidscore_interaction_c, "regression", "centred interaction, flat sigma"
    ),
    "kidiq_with_mom_work-kidscore_interaction_c2": _entry(
        kidscore_interaction_c2, "regression", "interaction centred on reference points"
    ),
    "kidiq_with_mom_work-kidscore_interaction_z": _entry(
        kidscore_interaction_z, "regression", "standardised interaction (the easy geometry)"
    ),
    "kidiq_with_mom_work-kidscore_mom_work": _entry(
        kidscore_mom_work, "regression", "factor predictor as three indicators"
    ),
    "earnings-earn_height": _entry(
        earn_height, "regression", "raw dollars: sigma ~ 2e4, beta[1] ~ -6e4 (scale)"
    ),
    "earnings-log10earn_height": _entry(log10earn_height, "regression", "log10 response"),
    "earnings-logearn_height": _entry(logearn_height, "regression", "log response, N = 1192"),
    "earnings-logearn_height_male": _entry(
        logearn_height_male, "regression", "two predictors, flat priors"
    ),
    "earnings-logearn_interaction": _entry(
        logearn_interaction, "regression", "uncentred interaction: beta correlation -0.999"
    ),
    "earnings-logearn_interaction_z": _entry(
        logearn_interaction_z, "regression", "the standardised counterpart"
    ),
    "earnings-logearn_logheight_male": _entry(
        logearn_logheight_male, "regression", "log height: intercept/slope correlation -0.9999"
    ),
    "mesquite-mesquite": _entry(mesquite, "regression", "raw scale, d = 8, N = 46"),
    "mesquite-logmesquite": _entry(logmesquite, "regression", "log scale, d = 8"),
    "mesquite-logmesquite_logva": _entry(logmesquite_logva, "regression", "derived predictors"),
    "mesquite-logmesquite_logvas": _entry(
        logmesquite_logvas, "regression", "collinear derived predictors, d = 8"
    ),
    "mesquite-logmesquite_logvash": _entry(
        logmesquite_logvash, "regression", "collinear derived predictors, d = 7"
    ),
    "mesquite-logmesquite_logvolume": _entry(
        logmesquite_logvolume, "regression", "one predictor, d = 3"
    ),
    "nes1972-nes": _entry(nes, "regression", "d = 10, N = 1330"),
    "nes1980-nes": _entry(nes, "regression", "same model, N = 701"),
    "nes2000-nes": _entry(nes, "regression", "same model, N = 476"),
    "kilpisjarvi_mod-kilpisjarvi": _entry(
        kilpisjarvi, "hard-geometry", "x = years: alpha/beta correlation -0.9999, sds 4e3 apart"
    ),
    "sblrc-blr": _entry(blr, "regression", "simulated, correlated design"),
    "sblri-blr": _entry(blr, "regression", "simulated, independent design"),
    "diamonds-diamonds": _entry(
        diamonds, "hard-geometry", "d = 26, ill-conditioned correlated slopes, N = 5000"
    ),
    "arK-arK": _entry(arK, "time-series", "AR(5)"),
    "arma-arma11": _entry(arma11, "time-series", "ARMA(1, 1): recursive errors"),
    "garch-garch11": _entry(
        garch11, "time-series", "GARCH(1, 1): bounded, dependent bound beta1 < 1 - alpha1"
    ),
    "hmm_example-hmm_example": _entry(
        hmm_example, "hmm", "forward algorithm, simplexes, positive-ordered means"
    ),
    "bball_drive_event_0-hmm_drive_0": _entry(
        hmm_drive_0, "hmm", "Dirichlet simplexes, positive-ordered exponential rates"
    ),
    "bball_drive_event_1-hmm_drive_1": _entry(
        hmm_drive_1, "hmm", "Dirichlet simplexes, ordered normal means"
    ),
    "gp_pois_regr-gp_pois_regr": _entry(
        gp_pois_regr, "gp", "latent GP field (non-centred), Poisson likelihood, d = 13"
    ),
    "gp_pois_regr-gp_regr": _entry(gp_regr, "gp", "marginal GP: Cholesky in the density"),
    "low_dim_gauss_mix-low_dim_gauss_mix": _entry(
        low_dim_gauss_mix, "mixture", "two-component mixture, ordered means, N = 1000"
    ),
}

#: Three small, quick posteriors (CI and ``harness.py --subset fast``).
FAST = (
    "kidiq_with_mom_work-kidscore_interaction_z",
    "mesquite-logmesquite_logvolume",
    "gp_pois_regr-gp_regr",
)


def model_and_kwargs(name: str, data: dict[str, Any]) -> tuple[Model, dict[str, Any]]:
    """Posterior ``name``'s model and its keyword arguments for ``data``."""
    entry = REGISTRY[name]
    return entry.model, entry.kwargs(data)


def unconstrained_dim(model: Model, kwargs: dict[str, Any]) -> int:
    """d: the number of unconstrained parameters NumPyro (and smi) infer for ``model``."""
    info = initialize_model(jax.random.PRNGKey(0), model, model_kwargs=kwargs)
    return sum(int(np.size(v)) for v in info.param_info.z.values())
