//! Bad settings and bad input give typed errors naming the problem, never panics.

use smi::testing::{BayesLinReg, DiagNormal};
use smi::{
    Engine, Error, FnDensity, LogDensity, Matrix, NonFinitePolicy, OptimizerSettings,
    SteinSettings, SteinVi, Svi, SviSettings,
};

fn field_of(e: Error) -> &'static str {
    match e {
        Error::InvalidSettings { field, .. } => field,
        other => panic!("expected InvalidSettings, got {other:?}"),
    }
}

/// The field named by the error of `SteinVi::new(model, settings)`, which must fail with
/// [`Error::InvalidSettings`].
fn stein_field<M: LogDensity + ?Sized>(model: &M, settings: SteinSettings) -> &'static str {
    field_of(SteinVi::new(model, settings).err().expect("must fail"))
}

/// As [`stein_field`], for `Svi::new`.
fn svi_field<M: LogDensity + ?Sized>(model: &M, settings: SviSettings) -> &'static str {
    field_of(Svi::new(model, settings).err().expect("must fail"))
}

#[test]
fn invalid_settings_name_their_field() {
    let t = DiagNormal::standard(2).unwrap();
    // Each case changes one field of `SteinSettings::smi()`.
    type Change = fn(&mut SteinSettings);
    let cases: [(Change, &str); 7] = [
        (|s| s.num_particles = 0, "num_particles"),
        (|s| s.num_elbo_particles = 0, "num_elbo_particles"),
        (|s| s.optimizer = OptimizerSettings::adam(-0.1), "lr"),
        (
            |s| s.repulsion_temperature = f64::NAN,
            "repulsion_temperature",
        ),
        (|s| s.batch_size = Some(0), "batch_size"),
        (|s| s.jacobian = false, "jacobian"),
        (
            |s| s.init = smi::Init::Uniform { radius: 0.0 },
            "init radius",
        ),
    ];
    for (change, field) in cases {
        let mut s = SteinSettings::smi();
        change(&mut s);
        assert_eq!(stein_field(&t, s), field);
    }
    let mut o = SviSettings::ovi();
    o.num_elbo_particles = 0;
    assert_eq!(svi_field(&t, o), "num_elbo_particles");
}

#[test]
fn data_with_nan_names_the_row() {
    let mut x = Matrix::zeros(5, 2);
    x.set(3, 1, f64::NAN);
    match BayesLinReg::new(x, vec![0.0; 5], 1.0, 1.0) {
        Err(Error::Data(msg)) => assert!(msg.contains("row 3"), "{msg}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn batch_larger_than_data_is_rejected() {
    let m = BayesLinReg::new(
        Matrix::from_fn(5, 1, |i, _| i as f64),
        vec![0.0; 5],
        1.0,
        1.0,
    )
    .unwrap();
    let mut s = SteinSettings::smi();
    s.batch_size = Some(6);
    assert_eq!(stein_field(&m, s), "batch_size");
}

#[test]
fn a_state_from_another_model_is_a_shape_error() {
    let small = DiagNormal::standard(2).unwrap();
    let big = DiagNormal::standard(3).unwrap();
    let e_small = SteinVi::new(&small, SteinSettings::smi()).unwrap();
    let e_big = SteinVi::new(&big, SteinSettings::smi()).unwrap();
    let mut st = e_small.init().unwrap();
    assert!(matches!(
        e_big.step(&mut st, None),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn non_finite_steps_are_skipped_or_reported() {
    // log p = −∞ away from a small region: every step is non-finite.
    let bad = FnDensity::new(1, |x: &[f64], g: &mut [f64]| {
        g[0] = f64::NAN;
        if x[0].abs() < 1e-9 {
            0.0
        } else {
            f64::NEG_INFINITY
        }
    });
    let e = SteinVi::new(&bad, SteinSettings::smi()).unwrap();
    let mut st = e.init().unwrap();
    let before = st.particles.clone();
    let info = e.step(&mut st, None).unwrap();
    assert!(info.skipped);
    assert_eq!(
        st.particles, before,
        "a skipped step leaves the particles unchanged"
    );
    assert_eq!((st.step, st.skipped_steps), (1, 1));

    let e = SteinVi::new(
        &bad,
        SteinSettings {
            on_non_finite: NonFinitePolicy::Error,
            ..SteinSettings::smi()
        },
    )
    .unwrap();
    let mut st = e.init().unwrap();
    assert!(matches!(
        e.step(&mut st, None),
        Err(Error::NonFinite { .. })
    ));

    let e = Svi::new(&bad, SviSettings::ovi()).unwrap();
    let mut st = e.init().unwrap();
    assert!(e.step(&mut st, None).unwrap().skipped);
}

#[test]
fn prior_median_init_falls_back_to_uniform_for_a_model_that_cannot_sample_its_prior() {
    // As NumPyro's init_to_median falls back to init_to_uniform: SVGD's default init works for
    // every model. Each particle draws Uniform(−2, 2) values of its own.
    let no_prior = FnDensity::new(2, |x: &[f64], g: &mut [f64]| {
        g.iter_mut().zip(x).for_each(|(g, x)| *g = -x);
        -0.5 * x.iter().map(|v| v * v).sum::<f64>()
    });
    let e = SteinVi::new(&no_prior, SteinSettings::svgd()).unwrap();
    let st = e.init().unwrap();
    let v = st.particles.as_slice();
    assert!(
        v.iter().all(|x| x.abs() < smi::Init::FALLBACK_RADIUS),
        "{v:?}"
    );
    assert_ne!(st.particles.row(0), st.particles.row(1));
    // A model that can sample its prior keeps its prior median, every particle its own:
    // N(5, 0.1²) medians of 15 draws lie within 0.1 of 5 (sd of the median ≈ 0.03).
    let t = DiagNormal::new(vec![5.0; 3], vec![0.1; 3]).unwrap();
    let e = SteinVi::new(&t, SteinSettings::svgd()).unwrap();
    let st = e.init().unwrap();
    assert!(st
        .particles
        .as_slice()
        .iter()
        .all(|x| (x - 5.0).abs() < 0.1));
    assert_ne!(st.particles.row(0), st.particles.row(1));
}

/// A standard normal target whose prior draws are NaN from draw `bad_from` on (counted across
/// all calls), as a model with a broken `sample_prior` gives.
struct NanPrior {
    dim: usize,
    bad_from: usize,
    calls: std::sync::atomic::AtomicUsize,
}

impl NanPrior {
    fn new(dim: usize, bad_from: usize) -> Self {
        NanPrior {
            dim,
            bad_from,
            calls: Default::default(),
        }
    }
}

impl smi::PerDraw for NanPrior {
    fn dim(&self) -> usize {
        self.dim
    }

    fn log_prior(&self, theta: &[f64], _jacobian: bool, grad: &mut [f64]) -> smi::Result<f64> {
        grad.iter_mut().zip(theta).for_each(|(g, x)| *g -= x);
        Ok(-0.5 * theta.iter().map(|v| v * v).sum::<f64>())
    }

    fn sample_prior(&self, _rng: &mut dyn smi::rand::RngCore, out: &mut [f64]) -> smi::Result<()> {
        let call = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        out.fill(if call >= self.bad_from { f64::NAN } else { 0.5 });
        Ok(())
    }
}

#[test]
fn a_nan_prior_draw_is_an_init_error_naming_the_particle() {
    // Before: NaN particles, and `run` returned Ok with every step skipped.
    let one_draw = smi::Init::PriorMedian { draws: 1 };
    let expect = |got: smi::Result<smi::State>, particle: &str| match got {
        Err(Error::NonFinite { context }) => {
            assert!(context.contains(particle), "{context}");
            assert!(context.contains("NaN"), "{context}");
        }
        other => panic!("expected a non-finite error, got {other:?}"),
    };
    // SVGD: the third particle's prior draw is NaN.
    let model = NanPrior::new(2, 2);
    let stein = SteinSettings {
        init: one_draw,
        ..SteinSettings::svgd()
    };
    expect(SteinVi::new(&model, stein).unwrap().init(), "particle 2");
    // MAP (SVI): its one particle.
    let model = NanPrior::new(3, 0);
    let map = SviSettings {
        init: one_draw,
        ..SviSettings::map()
    };
    expect(Svi::new(&model, map).unwrap().init(), "particle 0");
}

#[test]
fn counts_whose_buffers_overflow_are_rejected_by_validate() {
    let t = DiagNormal::standard(2).unwrap();
    type Change = fn(&mut SteinSettings);
    let cases: [(Change, &str); 4] = [
        // m² (the kernel matrix) overflows.
        (|s| s.num_particles = usize::MAX / 2, "num_particles"),
        (|s| s.num_particles = 1 << 32, "num_particles"),
        // m·S draws overflow.
        (
            |s| s.num_elbo_particles = usize::MAX / 4,
            "num_elbo_particles",
        ),
        // m²·S with per-pair gradients.
        (
            |s| {
                s.num_particles = 1 << 20;
                s.num_elbo_particles = 1 << 30;
                s.gradient_reuse = smi::GradientReuse::PerPair;
            },
            "num_elbo_particles",
        ),
    ];
    for (change, field) in cases {
        let mut s = SteinSettings::smi();
        change(&mut s);
        assert_eq!(field_of(s.validate().unwrap_err()), field);
        assert_eq!(stein_field(&t, s), field);
    }
    let mut o = SviSettings::ovi();
    o.num_elbo_particles = usize::MAX;
    assert_eq!(field_of(o.validate().unwrap_err()), "num_elbo_particles");
    // S·d overflows only with the model's d.
    o.num_elbo_particles = 1 << 59;
    assert!(o.validate().is_ok());
    assert_eq!(svi_field(&t, o), "num_elbo_particles");
}

#[test]
fn buffers_too_large_to_allocate_are_errors_not_aborts() {
    // Each size fits usize and the address-space bound, but no allocator has 2^50 bytes (a
    // petabyte): `vec!` aborted the whole process here.
    let huge_d = FnDensity::new(1 << 45, |_: &[f64], _: &mut [f64]| 0.0);
    let e = SteinVi::new(
        &huge_d,
        SteinSettings {
            num_particles: 2,
            ..SteinSettings::smi()
        },
    )
    .unwrap();
    assert_eq!(field_of(e.init().unwrap_err()), "num_particles");
    let e = Svi::new(&huge_d, SviSettings::ovi()).unwrap();
    assert_eq!(field_of(e.init().unwrap_err()), "num_particles");

    // K = m·S draws too many for the step's scratch buffers.
    let small = DiagNormal::standard(1).unwrap();
    let e = SteinVi::new(
        &small,
        SteinSettings {
            num_particles: 2,
            num_elbo_particles: 1 << 47,
            ..SteinSettings::smi()
        },
    )
    .unwrap();
    let mut st = e.init().unwrap();
    assert!(matches!(e.step(&mut st, None), Err(Error::Shape { .. })));
    let e = Svi::new(
        &small,
        SviSettings {
            num_elbo_particles: 1 << 48,
            ..SviSettings::ovi()
        },
    )
    .unwrap();
    let mut st = e.init().unwrap();
    assert!(matches!(e.step(&mut st, None), Err(Error::Shape { .. })));
}

#[test]
fn an_init_radius_whose_width_overflows_is_rejected() {
    // Uniform(−r, r) with 2r = inf made `rand` panic in `init()`.
    let t = DiagNormal::standard(2).unwrap();
    let mut s = SteinSettings::smi();
    s.init = smi::Init::Uniform { radius: 1e308 };
    assert_eq!(stein_field(&t, s), "init radius");
    let mut rng = <smi::rand::ChaCha8Rng as smi::rand::SeedableRng>::seed_from_u64(0);
    let mut out = [0.0; 2];
    assert!(smi::Init::Uniform { radius: 1e308 }
        .draw(&t, &mut rng, &mut out)
        .is_err());
}
